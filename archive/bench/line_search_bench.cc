// clickatron-bench-line-search: the CPU time of one key lookup in a sorted
// archive file, without HTTP around it (what the replica spends per key of
// an mget besides the request).
//
//   clickatron-bench-line-search FILE KEYS [ROUNDS]
//       Maps FILE (a sorted archive file) and looks up every key of KEYS
//       (one per line, as `clickatron-bench-archive-gen --keys` writes them:
//       half existing, half missing but sorting beside existing ones) with
//       FindKeyLine, in the file's order of KEYS. A first pass fills the
//       line index and the page cache; ROUNDS (3) timed passes follow, each
//       printing the process CPU time per lookup. Never asserts.
#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <ctime>
#include <fstream>
#include <string>
#include <string_view>
#include <vector>

#include "line_index.h"
#include "line_search.h"

namespace {

double CpuSeconds() {
  timespec ts{};
  ::clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
  return static_cast<double>(ts.tv_sec) + static_cast<double>(ts.tv_nsec) / 1e9;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 3) {
    std::fprintf(stderr, "usage: %s FILE KEYS [ROUNDS]\n", argv[0]);
    return 2;
  }
  const int rounds = argc > 3 ? std::atoi(argv[3]) : 3;
  const int fd = ::open(argv[1], O_RDONLY | O_CLOEXEC);
  struct stat st {};
  if (fd < 0 || ::fstat(fd, &st) != 0 || st.st_size == 0) {
    std::perror(argv[1]);
    return 1;
  }
  const size_t size = static_cast<size_t>(st.st_size);
  void* map = ::mmap(nullptr, size, PROT_READ, MAP_SHARED, fd, 0);
  if (map == MAP_FAILED) {
    std::perror("mmap");
    return 1;
  }
  const std::string_view data(static_cast<const char*>(map), size);
  std::vector<std::string> keys;
  std::ifstream in(argv[2]);
  for (std::string line; std::getline(in, line);) {
    if (!line.empty()) keys.push_back(line);
  }
  clickatron::archive::LineIndex index(data);
  size_t found = 0;
  for (const std::string& key : keys) found += clickatron::archive::FindKeyLine(index, key, ',').has_value();
  std::printf("file %zu bytes, %zu keys, %zu found\n", size, keys.size(), found);
  for (int r = 1; r <= rounds; ++r) {
    const double t0 = CpuSeconds();
    size_t hits = 0;
    for (const std::string& key : keys) hits += clickatron::archive::FindKeyLine(index, key, ',').has_value();
    const double t1 = CpuSeconds();
    std::printf("round %d: %.0f ns of CPU per lookup (%zu found)\n", r, (t1 - t0) * 1e9 / keys.size(), hits);
  }
  return 0;
}
