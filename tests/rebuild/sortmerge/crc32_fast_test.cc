// FastCrc32Extend must equal zlib's crc32 (Crc32Extend) for every length,
// alignment and starting value: manifests written with one are checked with
// the other.
#include "sortmerge/crc32_fast.h"

#include <gtest/gtest.h>

#include <random>
#include <string>

#include "clickatron/shard.h"

namespace clickatron::rebuild {
namespace {

TEST(FastCrc32, EqualsZlibOnRandomBuffers) {
  std::mt19937_64 rng(7);
  std::string buffer(5000, '\0');
  for (char& c : buffer) c = static_cast<char>(rng());
  for (int round = 0; round < 20000; ++round) {
    const size_t offset = rng() % 64;  // every alignment
    const size_t length = rng() % (buffer.size() - offset);
    const uint32_t start = round % 3 == 0 ? 0 : static_cast<uint32_t>(rng());
    const std::string_view data(buffer.data() + offset, length);
    ASSERT_EQ(FastCrc32Extend(start, data), Crc32Extend(start, data))
        << "round " << round << " offset " << offset << " length " << length;
  }
}

TEST(FastCrc32, ExtendingInPiecesEqualsOnePass) {
  std::mt19937_64 rng(11);
  std::string data(1 << 20, '\0');
  for (char& c : data) c = static_cast<char>(rng() % 3 == 0 ? '\n' : 'a' + rng() % 26);
  uint32_t pieces = 0;
  for (size_t at = 0; at < data.size();) {
    const size_t n = std::min<size_t>(data.size() - at, rng() % 70000);
    pieces = FastCrc32Extend(pieces, std::string_view(data).substr(at, n));
    at += n;
  }
  EXPECT_EQ(pieces, Crc32Extend(0, data));
  EXPECT_EQ(FastCrc32Extend(0, data), Crc32Extend(0, data));
}

}  // namespace
}  // namespace clickatron::rebuild
