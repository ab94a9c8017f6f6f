// clickatron-bench-archive-gen: test data for scripts/bench-archive.
//
//   gen --records N [--seed S] [--keys FILE] [--sample K] [--stats FILE]
//       Writes N archive records (unsorted) to stdout, shaped like bitly's
//       static data: per link a total line `u|TKEY,YMDH:v …`, per hour a
//       country subtotal `c.u|TKEY.YMDH,US:3 …` (values summing to the hour's
//       total), often a referrer subtotal with hashed referrers, sometimes a
//       lookup `l|HASH,url`. FILE gets K keys to query: half existing (a
//       uniform sample), half missing but sorting right beside existing ones,
//       so a miss costs a full-depth search. --stats gets "records N
//       data_points M".
//   gen --manifest FILE [--generation G] [--last-day D]
//       Writes FILE.manifest (DescribeArchiveData) and prints how long the
//       describe pass (crc32 + line count: what a replica checks on load) took.
#include <algorithm>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include "clickatron/file_util.h"
#include "clickatron/manifest.h"

namespace {

using clickatron::Manifest;

struct Rng {  // splitmix64: fast, reproducible from the seed
  uint64_t state;
  uint64_t Next() {
    uint64_t z = (state += 0x9e3779b97f4a7c15ULL);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
    return z ^ (z >> 31);
  }
  uint64_t Below(uint64_t n) { return Next() % n; }
};

constexpr char kB32[] = "0123456789abcdefghijklmnopqrstuv";
constexpr char kBase62[] = "0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz";
constexpr char kBase64[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
// Bytewise sorted, so a subset taken in order is already a sorted column list.
const char* const kCountries[] = {"BR", "CA", "DE", "FR", "GB", "IN", "JP", "None", "US"};

// A distinct link id for every n (an odd multiplier is a bijection mod 62^7),
// so tkeys look random but never repeat.
std::string TkeyFor(uint64_t n) {
  constexpr uint64_t kSpace = 62ULL * 62 * 62 * 62 * 62 * 62 * 62;
  uint64_t x = (n * 0x5851f42d4c957f2dULL + 12345) % kSpace;
  std::string s;
  do {
    s.push_back(kBase62[x % 62]);
    x /= 62;
  } while (x > 0 && s.size() < 7);
  return s;
}

std::string Ymdh(int day, int hour) {  // March 2012
  return {kB32[12], kB32[3], kB32[day], kB32[hour]};
}

std::string Hash12(Rng& rng) {
  std::string s(11, ' ');
  for (char& c : s) c = kBase64[rng.Below(64)];
  s.push_back('=');
  return s;
}

class Generator {
 public:
  Generator(uint64_t seed, size_t sample) : rng_{seed}, sample_(sample) {}

  void Run(uint64_t records, FILE* out) {
    std::string buf;
    for (uint64_t link = 0; records_ < records; ++link) {
      buf.clear();
      Link(link, records, &buf);
      std::fwrite(buf.data(), 1, buf.size(), out);
    }
  }
  uint64_t records() const { return records_; }
  uint64_t data_points() const { return data_points_; }
  const std::vector<std::string>& sample() const { return sample_keys_; }

 private:
  void Emit(std::string* buf, const std::string& key, const std::string& value, uint64_t columns) {
    buf->append(key).push_back(',');
    buf->append(value).push_back('\n');
    ++records_;
    data_points_ += columns;
    // Reservoir sampling: every record equally likely to be queried.
    if (sample_keys_.size() < sample_) {
      sample_keys_.push_back(key);
    } else if (uint64_t j = rng_.Below(records_); j < sample_) {
      sample_keys_[j] = key;
    }
  }

  void Link(uint64_t link, uint64_t limit, std::string* buf) {
    std::string tkey = TkeyFor(link);
    int hours = 1 + static_cast<int>(rng_.Below(12));
    int day = 1 + static_cast<int>(rng_.Below(25));
    int hour = static_cast<int>(rng_.Below(24 - hours + 1));
    std::string total;
    for (int h = hour; h < hour + hours && records_ < limit; ++h) {
      std::string ymdh = Ymdh(day, h);
      std::string countries;
      uint64_t sum = 0, columns = 0;
      uint64_t mask = 1 + rng_.Below(511);
      for (int c = 0; c < 9; ++c) {
        if (!(mask >> c & 1) || (columns >= 4)) continue;
        uint64_t v = 1 + rng_.Below(rng_.Below(8) == 0 ? 500 : 9);
        if (!countries.empty()) countries.push_back(' ');
        countries += kCountries[c];
        countries += ':' + std::to_string(v);
        sum += v;
        ++columns;
      }
      Emit(buf, "c.u|" + tkey + "." + ymdh, countries, columns);
      if (rng_.Below(2) == 0 && records_ < limit) {
        std::vector<std::string> refs;
        for (uint64_t r = 1 + rng_.Below(3); r > 0; --r) refs.push_back(Hash12(rng_));
        std::sort(refs.begin(), refs.end());
        std::string value;
        for (const auto& ref : refs) value += (value.empty() ? "" : " ") + ref + ":1";
        Emit(buf, "r.u|" + tkey + "." + ymdh, value, refs.size());
      }
      if (!total.empty()) total.push_back(' ');
      total += ymdh + ':' + std::to_string(sum);
    }
    if (records_ < limit && !total.empty()) {
      Emit(buf, "u|" + tkey, total, static_cast<uint64_t>(std::count(total.begin(), total.end(), ':')));
    }
    if (rng_.Below(4) == 0 && records_ < limit) {
      Emit(buf, "l|" + Hash12(rng_), "http://example.com/" + tkey + "/" + std::to_string(rng_.Below(1000000)), 1);
    }
  }

  Rng rng_;
  size_t sample_;
  uint64_t records_ = 0;
  uint64_t data_points_ = 0;
  std::vector<std::string> sample_keys_;
};

// A key that sorts right beside `key` but is never generated: tkeys and hashes
// never contain '-', and a lookup hash is always 12 characters.
std::string MissingNextTo(const std::string& key) {
  size_t dot = key.find('.', key.find('|'));
  if (dot != std::string::npos) return key.substr(0, dot) + "-" + key.substr(dot);
  return key + "-";
}

int WriteManifest(const std::string& path, uint64_t generation, const std::string& last_day) {
  auto mapped = clickatron::MappedFile::Open(path);
  if (!mapped.ok()) {
    std::fprintf(stderr, "%s\n", mapped.status().ToString().c_str());
    return 1;
  }
  Manifest m;
  m.generation = generation;
  m.last_day = last_day;
  m.created = "2012-03-26T02:10:00Z";
  auto start = std::chrono::steady_clock::now();
  clickatron::DescribeArchiveData((*mapped)->data(), &m);
  double ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count();
  clickatron::Status st = clickatron::WriteManifestAtomically(clickatron::ManifestPathFor(path), m);
  if (!st.ok()) {
    std::fprintf(stderr, "%s\n", st.ToString().c_str());
    return 1;
  }
  std::printf("describe_ms %.1f bytes %llu records %llu\n", ms, static_cast<unsigned long long>(m.bytes),
              static_cast<unsigned long long>(m.records));
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  uint64_t records = 0, seed = 1, generation = 1;
  size_t sample = 100000;
  std::string keys_path, stats_path, manifest_path, last_day = "2012-03-25";
  for (int i = 1; i + 1 < argc; i += 2) {
    std::string flag = argv[i];
    const char* v = argv[i + 1];
    if (flag == "--records") records = std::strtoull(v, nullptr, 10);
    else if (flag == "--seed") seed = std::strtoull(v, nullptr, 10);
    else if (flag == "--sample") sample = std::strtoull(v, nullptr, 10);
    else if (flag == "--keys") keys_path = v;
    else if (flag == "--stats") stats_path = v;
    else if (flag == "--manifest") manifest_path = v;
    else if (flag == "--generation") generation = std::strtoull(v, nullptr, 10);
    else if (flag == "--last-day") last_day = v;
    else {
      std::fprintf(stderr, "unknown flag %s\n", flag.c_str());
      return 2;
    }
  }
  if (!manifest_path.empty()) return WriteManifest(manifest_path, generation, last_day);
  if (records == 0) {
    std::fprintf(stderr, "usage: %s --records N [--seed S] [--keys FILE] [--sample K] [--stats FILE]\n"
                         "       %s --manifest FILE [--generation G] [--last-day YYYY-MM-DD]\n", argv[0], argv[0]);
    return 2;
  }
  static char out_buf[1 << 20];
  std::setvbuf(stdout, out_buf, _IOFBF, sizeof(out_buf));
  Generator gen(seed, sample / 2);
  gen.Run(records, stdout);
  std::fflush(stdout);
  if (!keys_path.empty()) {
    FILE* f = std::fopen(keys_path.c_str(), "w");
    if (!f) return 1;
    for (const auto& k : gen.sample()) std::fprintf(f, "%s\n%s\n", k.c_str(), MissingNextTo(k).c_str());
    std::fclose(f);
  }
  if (!stats_path.empty()) {
    FILE* f = std::fopen(stats_path.c_str(), "w");
    if (!f) return 1;
    std::fprintf(f, "records %llu data_points %llu\n", static_cast<unsigned long long>(gen.records()),
                 static_cast<unsigned long long>(gen.data_points()));
    std::fclose(f);
  }
  return 0;
}
