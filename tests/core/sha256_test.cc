// SHA-256 of bytes and of files, against the published test vectors
// (FIPS 180-2 appendix B) and `sha256sum`'s figure for a file of the same
// bytes, so that an operator can check a load's recorded digest by hand.
#include "clickatron/sha256.h"

#include <gtest/gtest.h>

#include <string>

#include "testutil/testutil.h"

namespace clickatron {
namespace {

using testing::TempDir;
using testing::WriteAll;

constexpr char kAbc[] = "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad";
constexpr char kEmpty[] = "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855";
// One million 'a's (FIPS 180-2, B.3): longer than the file reader's buffer.
constexpr char kMillionA[] = "cdc76e5c9914fb9281a1c7e284d73e67f1809a48a497200e046d39ccc7112cd0";

TEST(Sha256Test, BytesMatchThePublishedVectors) {
  EXPECT_EQ(Sha256Hex("abc"), kAbc);
  EXPECT_EQ(Sha256Hex(""), kEmpty);
  EXPECT_EQ(Sha256Hex(std::string(1000000, 'a')), kMillionA);
}

TEST(Sha256Test, FilesMatchThePublishedVectors) {
  TempDir tmp;
  const std::string empty = tmp.path() + "/empty";
  const std::string million = tmp.path() + "/million";
  WriteAll(empty, "");
  WriteAll(million, std::string(1000000, 'a'));
  auto e = Sha256OfFile(empty);
  ASSERT_TRUE(e.ok()) << e.status().ToString();
  EXPECT_EQ(*e, kEmpty);
  auto m = Sha256OfFile(million);
  ASSERT_TRUE(m.ok()) << m.status().ToString();
  EXPECT_EQ(*m, kMillionA);
}

TEST(Sha256Test, AMissingFileIsNotFound) {
  TempDir tmp;
  auto r = Sha256OfFile(tmp.path() + "/nothing");
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), StatusCode::kNotFound) << r.status().ToString();
}

}  // namespace
}  // namespace clickatron
