// Cluster authentication (clickatron/cluster_auth.h): request signatures
// verify only for the exact request and secret they were made with, within
// the skew window; the wire format is pinned by the openssl command line
// (an independent HMAC-SHA256), not by the code under test; secret files are
// read only when nobody but their owner can read them.
#include "clickatron/cluster_auth.h"

#include <fcntl.h>
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstdio>
#include <string>
#include <vector>

#include "testutil/testutil.h"

namespace clickatron {
namespace {

using testing::TempDir;

constexpr std::string_view kSecret = "cluster-secret-0123456789abcdef";
constexpr int64_t kNow = 1700000000;
constexpr std::string_view kHost = "127.0.0.1:8091";  // the receiving member

using clickatron::testing::WriteWithMode;

bool IsLowerHex(std::string_view s) {
  for (char c : s) {
    if (!((c >= '0' && c <= '9') || (c >= 'a' && c <= 'f'))) return false;
  }
  return true;
}

// The sig= value of a "v1 ts=N sig=HEX" header, or "" when the header does
// not have exactly that shape.
std::string SigOf(const std::string& header, int64_t ts) {
  const std::string prefix = "v1 ts=" + std::to_string(ts) + " sig=";
  if (header.compare(0, prefix.size(), prefix) != 0) return "";
  return header.substr(prefix.size());
}

void ExpectUnauthorized(const Status& st, const std::string& what) {
  EXPECT_FALSE(st.ok()) << what;
  EXPECT_EQ(st.code(), StatusCode::kUnauthorized) << what << ": " << st.ToString();
  EXPECT_EQ(st.reason(), "UNAUTHORIZED") << what;
}

TEST(ClusterAuthTest, SignedRequestVerifies) {
  const std::vector<std::vector<std::string>> requests = {
      {"POST", "/incr?source=api-0&seq=42", "key,1\nother,2\n"},
      {"GET", "/ping", ""},
      {"POST", "/batch", std::string("\0\x01\xff binary", 10)},
  };
  for (const auto& r : requests) {
    const std::string header = SignRequest(kSecret, kHost, r[0], r[1], r[2], kNow);
    EXPECT_TRUE(VerifyRequest(kSecret, kHost, header, r[0], r[1], r[2], kNow).ok()) << r[0] << " " << r[1];
  }
}

// The independent oracle: the openssl CLI computes the body digest and the
// HMAC over the message format documented in cluster_auth.h.
std::string OpensslHex(const std::string& args) {
  FILE* pipe = ::popen(("openssl dgst -sha256 " + args + " 2>&1").c_str(), "r");
  if (pipe == nullptr) return "";
  std::string out;
  char buf[512];
  size_t n;
  while ((n = std::fread(buf, 1, sizeof buf, pipe)) > 0) out.append(buf, n);
  if (::pclose(pipe) != 0) return "openssl failed: " + out;
  // "HMAC-SHA2-256(FILE)= HEX\n" (the label differs between versions): the hex is the last word.
  while (!out.empty() && (out.back() == '\n' || out.back() == '\r')) out.pop_back();
  return out.substr(out.rfind(' ') + 1);
}

TEST(ClusterAuthTest, SignatureMatchesOpensslCommandLine) {
  TempDir dir;
  const std::string method = "POST";
  const std::string target = "/incr?source=api-0&seq=42";
  const std::vector<std::string> bodies = {"", "2023-11-14T22,clicks,1\n2023-11-14T22,views,7\n"};
  for (const std::string& body : bodies) {
    const std::string body_path = dir / "body";
    ASSERT_TRUE(WriteWithMode(body_path, body, 0600));
    const std::string body_digest = OpensslHex("'" + body_path + "'");
    ASSERT_EQ(body_digest.size(), 64u) << body_digest;
    const std::string message =
        "clickatron-v1\n" + std::to_string(kNow) + "\n" + std::string(kHost) + "\n" + method + "\n" + target + "\n" +
        body_digest;
    const std::string message_path = dir / "message";
    ASSERT_TRUE(WriteWithMode(message_path, message, 0600));
    // kSecret has no shell metacharacters, so single quotes pass it as is.
    const std::string expected_sig = OpensslHex("-hmac '" + std::string(kSecret) + "' '" + message_path + "'");
    ASSERT_EQ(expected_sig.size(), 64u) << expected_sig;

    EXPECT_EQ(SignRequest(kSecret, kHost, method, target, body, kNow), "v1 ts=" + std::to_string(kNow) + " sig=" + expected_sig)
        << "body of " << body.size() << " bytes";
    EXPECT_TRUE(VerifyRequest(kSecret, kHost, "v1 ts=" + std::to_string(kNow) + " sig=" + expected_sig, method, target, body,
                              kNow)
                    .ok());
  }
}

TEST(ClusterAuthTest, AnyChangeToTheRequestOrSecretFails) {
  const std::string method = "POST";
  const std::string target = "/incr?source=api-0&seq=42";
  const std::string body = "2023-11-14T22,clicks,1\n";
  const std::string header = SignRequest(kSecret, kHost, method, target, body, kNow);
  ASSERT_TRUE(VerifyRequest(kSecret, kHost, header, method, target, body, kNow).ok());

  ExpectUnauthorized(VerifyRequest(kSecret, kHost, header, "GET", target, body, kNow), "method POST -> GET");
  ExpectUnauthorized(VerifyRequest(kSecret, "127.0.0.1:8092", header, method, target, body, kNow),
                     "another receiving member");
  ExpectUnauthorized(VerifyRequest(kSecret, kHost, header, "PUT", target, body, kNow), "method POST -> PUT");
  ExpectUnauthorized(VerifyRequest(kSecret, kHost, header, method, "/incr2?source=api-0&seq=42", body, kNow), "path");
  ExpectUnauthorized(VerifyRequest(kSecret, kHost, header, method, "/incr?source=api-0&seq=43", body, kNow), "seq 42 -> 43");
  ExpectUnauthorized(VerifyRequest(kSecret, kHost, header, method, "/incr?source=api-1&seq=42", body, kNow), "source");
  ExpectUnauthorized(VerifyRequest(kSecret, kHost, header, method, "/incr?source=api-0&seq=42&x=1", body, kNow),
                     "argument added");
  ExpectUnauthorized(VerifyRequest(kSecret, kHost, header, method, "/incr?source=api-0", body, kNow), "argument dropped");
  for (size_t i : {size_t{0}, body.size() / 2, body.size() - 1}) {
    std::string changed = body;
    changed[i] = static_cast<char>(changed[i] ^ 1);
    ExpectUnauthorized(VerifyRequest(kSecret, kHost, header, method, target, changed, kNow),
                       "body byte " + std::to_string(i));
  }
  ExpectUnauthorized(VerifyRequest(kSecret, kHost, header, method, target, body + "x", kNow), "body byte appended");
  ExpectUnauthorized(VerifyRequest(kSecret, kHost, header, method, target, "", kNow), "body emptied");
  std::string other_secret(kSecret);
  other_secret.back() = static_cast<char>(other_secret.back() ^ 1);
  ExpectUnauthorized(VerifyRequest(other_secret, kHost, header, method, target, body, kNow), "secret changed");
  // The ts is signed too: the same sig under another ts is refused.
  const std::string sig = SigOf(header, kNow);
  ASSERT_FALSE(sig.empty()) << header;
  ExpectUnauthorized(VerifyRequest(kSecret, kHost, "v1 ts=" + std::to_string(kNow + 1) + " sig=" + sig, method, target, body,
                                   kNow),
                     "ts changed");
  // A one-digit change to the sig itself.
  std::string bad_sig = sig;
  bad_sig[10] = bad_sig[10] == '0' ? '1' : '0';
  ExpectUnauthorized(VerifyRequest(kSecret, kHost, "v1 ts=" + std::to_string(kNow) + " sig=" + bad_sig, method, target, body,
                                   kNow),
                     "sig digit changed");
}

TEST(ClusterAuthTest, MissingHeaderFails) {
  ExpectUnauthorized(VerifyRequest(kSecret, kHost, "", "POST", "/incr?seq=1", "body", kNow), "no header");
}

TEST(ClusterAuthTest, MalformedHeaderFails) {
  const std::string method = "POST";
  const std::string target = "/incr?source=api-0&seq=42";
  const std::string body = "b";
  const std::string ts = std::to_string(kNow);
  const std::string sig = SigOf(SignRequest(kSecret, kHost, method, target, body, kNow), kNow);
  ASSERT_EQ(sig.size(), 64u);
  ASSERT_TRUE(VerifyRequest(kSecret, kHost, "v1 ts=" + ts + " sig=" + sig, method, target, body, kNow).ok());

  const std::vector<std::string> malformed = {
      "v1 sig=" + sig,                              // no ts
      "v1 ts= sig=" + sig,                          // empty ts
      "v1 ts=abc sig=" + sig,                       // non-numeric ts
      "v1 ts=" + ts + "x sig=" + sig,               // trailing garbage in ts
      "v1 ts=0x" + ts + " sig=" + sig,              // not decimal
      "v1 ts=" + ts,                                // no sig
      "v1 ts=" + ts + " sig=",                      // empty sig
      "v2 ts=" + ts + " sig=" + sig,                // other scheme
      "V1 ts=" + ts + " sig=" + sig,                // other scheme (case)
      "Bearer " + sig,                              // other scheme
      "ts=" + ts + " sig=" + sig,                   // no scheme
      "v1",                                         // scheme only
      "v1ts=" + ts + " sig=" + sig,                 // no space after the scheme
  };
  for (const std::string& header : malformed) {
    ExpectUnauthorized(VerifyRequest(kSecret, kHost, header, method, target, body, kNow), "header \"" + header + "\"");
  }
}

TEST(ClusterAuthTest, TimestampOutsideSkewWindowFails) {
  const std::string method = "POST";
  const std::string target = "/incr?source=api-0&seq=42";
  const std::string body = "b";
  const std::string header = SignRequest(kSecret, kHost, method, target, body, kNow);
  // Exactly at the bound, both ways: accepted.
  EXPECT_TRUE(VerifyRequest(kSecret, kHost, header, method, target, body, kNow + kMaxSignatureSkewSeconds).ok());
  EXPECT_TRUE(VerifyRequest(kSecret, kHost, header, method, target, body, kNow - kMaxSignatureSkewSeconds).ok());
  // One second beyond: a signature too old, and one from the future.
  ExpectUnauthorized(VerifyRequest(kSecret, kHost, header, method, target, body, kNow + kMaxSignatureSkewSeconds + 1),
                     "signed too long ago");
  ExpectUnauthorized(VerifyRequest(kSecret, kHost, header, method, target, body, kNow - kMaxSignatureSkewSeconds - 1),
                     "signed in the future");
  ExpectUnauthorized(VerifyRequest(kSecret, kHost, header, method, target, body, kNow + 86400), "a day old");
  ExpectUnauthorized(VerifyRequest(kSecret, kHost, header, method, target, body, 0), "receiver clock at 0");
}

TEST(ClusterAuthTest, SigFieldIs64LowercaseHexDigits) {
  const std::vector<int64_t> times = {0, 1, kNow, 4102444800};
  for (int64_t ts : times) {
    for (std::string_view secret : {kSecret, std::string_view("another-secret-of-some-length")}) {
      const std::string header = SignRequest(secret, kHost, "POST", "/incr?seq=1", "x", ts);
      const std::string sig = SigOf(header, ts);
      EXPECT_EQ(sig.size(), 64u) << header;
      EXPECT_TRUE(IsLowerHex(sig)) << header;
    }
  }
}

TEST(ClusterAuthTest, ConstantTimeEquals) {
  EXPECT_TRUE(ConstantTimeEquals("", ""));
  EXPECT_TRUE(ConstantTimeEquals("abcdef0123", "abcdef0123"));
  EXPECT_TRUE(ConstantTimeEquals(std::string("a\0b", 3), std::string("a\0b", 3)));
  EXPECT_FALSE(ConstantTimeEquals("abcdef0123", "bbcdef0123"));  // first byte
  EXPECT_FALSE(ConstantTimeEquals("abcdef0123", "abcdef0124"));  // last byte
  EXPECT_FALSE(ConstantTimeEquals(std::string("a\0b", 3), std::string("a\0c", 3)));  // after a NUL
  EXPECT_FALSE(ConstantTimeEquals("abc", "abcd"));  // prefix, different lengths
  EXPECT_FALSE(ConstantTimeEquals("abcd", "abc"));
  EXPECT_FALSE(ConstantTimeEquals("", "a"));
  EXPECT_FALSE(ConstantTimeEquals("a", ""));
}

TEST(ClusterAuthTest, ReadSecretFileAcceptsOwnerOnlyAndTrimsTrailingWhitespace) {
  TempDir dir;
  const std::string secret = "s3cret-0123456789-abcdef";
  const std::vector<std::string> contents = {secret, secret + "\n", secret + "   ", secret + "  \n",
                                             secret + "\r\n", secret + "\t \n\n"};
  for (size_t i = 0; i < contents.size(); ++i) {
    const std::string path = dir / ("secret" + std::to_string(i));
    ASSERT_TRUE(WriteWithMode(path, contents[i], 0600));
    Result<std::string> read = ReadSecretFile(path, "[cluster] cluster_secret_file");
    ASSERT_TRUE(read.ok()) << read.status().ToString();
    EXPECT_EQ(*read, secret) << "contents #" << i;
  }
  // Read-only for its owner is fine too (mode 400).
  const std::string ro = dir / "readonly";
  ASSERT_TRUE(WriteWithMode(ro, secret + "\n", 0400));
  Result<std::string> read = ReadSecretFile(ro, "[cluster] cluster_secret_file");
  ASSERT_TRUE(read.ok()) << read.status().ToString();
  EXPECT_EQ(*read, secret);
}

TEST(ClusterAuthTest, ReadSecretFileRefusesGroupOrOtherAccess) {
  TempDir dir;
  const std::string secret = "s3cret-0123456789-abcdef";
  for (mode_t mode : {mode_t{0644}, mode_t{0640}, mode_t{0604}, mode_t{0660}, mode_t{0602}, mode_t{0620}}) {
    const std::string path = dir / "secret";
    ASSERT_TRUE(WriteWithMode(path, secret + "\n", mode));
    Result<std::string> read = ReadSecretFile(path, "[cluster] cluster_secret_file");
    ASSERT_FALSE(read.ok()) << "mode " << std::oct << mode;
    const std::string& msg = read.status().message();
    EXPECT_NE(msg.find("chmod 600"), std::string::npos) << msg;
    EXPECT_NE(msg.find(path), std::string::npos) << msg;
    EXPECT_NE(msg.find("[cluster] cluster_secret_file"), std::string::npos) << msg;
    EXPECT_EQ(msg.find(secret), std::string::npos) << "the error must not show the secret: " << msg;
  }
}

TEST(ClusterAuthTest, ReadSecretFileRefusesDirectoryAndMissingFile) {
  TempDir dir;
  const std::string sub = dir / "secret.d";
  ASSERT_EQ(::mkdir(sub.c_str(), 0700), 0);
  Result<std::string> from_dir = ReadSecretFile(sub, "[cluster] cluster_secret_file");
  ASSERT_FALSE(from_dir.ok());
  EXPECT_NE(from_dir.status().message().find(sub), std::string::npos) << from_dir.status().message();

  const std::string missing = dir / "no-such-file";
  Result<std::string> from_missing = ReadSecretFile(missing, "[cluster] admin_token_file");
  ASSERT_FALSE(from_missing.ok());
  EXPECT_NE(from_missing.status().message().find(missing), std::string::npos) << from_missing.status().message();
  EXPECT_NE(from_missing.status().message().find("[cluster] admin_token_file"), std::string::npos)
      << from_missing.status().message();
}

TEST(ClusterAuthTest, ReadSecretFileRefusesShortSecret) {
  TempDir dir;
  const std::string path = dir / "secret";
  const std::string shortest_ok(kMinSecretBytes, 'k');
  const std::string too_short(kMinSecretBytes - 1, 'k');

  ASSERT_TRUE(WriteWithMode(path, shortest_ok + "\n", 0600));
  Result<std::string> ok = ReadSecretFile(path, "secret");
  ASSERT_TRUE(ok.ok()) << ok.status().ToString();
  EXPECT_EQ(*ok, shortest_ok);

  ASSERT_TRUE(WriteWithMode(path, too_short, 0600));
  EXPECT_FALSE(ReadSecretFile(path, "secret").ok()) << "a secret of " << too_short.size() << " bytes";
  // Trailing whitespace does not count towards the length.
  ASSERT_TRUE(WriteWithMode(path, too_short + "  \n\n", 0600));
  EXPECT_FALSE(ReadSecretFile(path, "secret").ok()) << "padded with whitespace";
  ASSERT_TRUE(WriteWithMode(path, "", 0600));
  EXPECT_FALSE(ReadSecretFile(path, "secret").ok()) << "empty file";
  ASSERT_TRUE(WriteWithMode(path, "\n", 0600));
  EXPECT_FALSE(ReadSecretFile(path, "secret").ok()) << "only a newline";
}

TEST(ClusterAuthTest, ReadSecretFileRefusesFileOwnedByAnotherUser) {
  if (::geteuid() != 0) {
    GTEST_SKIP() << "environment, not a bug: only root can give a test file to another owner";
  }
  TempDir dir;
  const std::string path = dir / "secret";
  ASSERT_TRUE(WriteWithMode(path, "s3cret-0123456789-abcdef\n", 0600));
  ASSERT_EQ(::chown(path.c_str(), 65534, 65534), 0);
  Result<std::string> read = ReadSecretFile(path, "[cluster] cluster_secret_file");
  ASSERT_FALSE(read.ok());
  EXPECT_NE(read.status().message().find(path), std::string::npos) << read.status().message();
}

TEST(ClusterAuthTest, GenerateSecretIs64HexDigitsAndFresh) {
  Result<std::string> a = GenerateSecret();
  Result<std::string> b = GenerateSecret();
  ASSERT_TRUE(a.ok()) << a.status().ToString();
  ASSERT_TRUE(b.ok()) << b.status().ToString();
  EXPECT_EQ(a->size(), 64u);
  EXPECT_EQ(b->size(), 64u);
  EXPECT_TRUE(IsLowerHex(*a)) << *a;
  EXPECT_TRUE(IsLowerHex(*b)) << *b;
  EXPECT_NE(*a, *b);
  // Long enough for ReadSecretFile.
  EXPECT_GE(a->size(), kMinSecretBytes);
}

TEST(ClusterAuthTest, IsLoopbackHost) {
  for (std::string_view host : {"127.0.0.1", "127.1.2.3", "127.255.255.254", "::1", "localhost"}) {
    EXPECT_TRUE(IsLoopbackHost(host)) << host;
  }
  for (std::string_view host : {"0.0.0.0", "10.0.0.1", "192.168.1.1", "example.com", "", "::", "128.0.0.1",
                                "1.127.0.0", "localhost.example.com"}) {
    EXPECT_FALSE(IsLoopbackHost(host)) << host;
  }
}

// BUG (src/cluster_auth.cc, IsLoopbackHost: `return host.substr(0, 4) == "127.";`):
// any string starting with "127." counts as loopback, including DNS names such
// as "127.example.com", so CheckExposure lets a member listen there with no
// cluster secret and no admin token. Skipped until IsLoopbackHost checks for
// a numeric IPv4 address in 127.0.0.0/8.
TEST(ClusterAuthTest, IsLoopbackHostRefusesNamesThatMerelyStartWith127) {
  // A listen host is bound through getaddrinfo (evhttp_bind_socket_with_handle),
  // so a DNS name like "127.example.com" can resolve to a public address; it
  // is not in 127.0.0.0/8 and must not let CheckExposure wave a member through.
  for (std::string_view host : {"127.example.com", "127.0.0.1.example.com", "127.", "127.x"}) {
    EXPECT_FALSE(IsLoopbackHost(host)) << host;
  }
}

}  // namespace
}  // namespace clickatron
