#include "clickatron/cluster_auth.h"

#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <sys/stat.h>
#include <unistd.h>

#include <fmt/format.h>
#include <openssl/crypto.h>
#include <openssl/evp.h>
#include <openssl/hmac.h>
#include <openssl/rand.h>

#include <charconv>
#include <cstring>

#include "clickatron/file_util.h"
#include "clickatron/sha256.h"

namespace clickatron {
namespace {

constexpr std::string_view kScheme = "v1";

std::string BodyDigest(std::string_view body) { return Sha256Hex(body); }

std::string Signature(std::string_view secret, std::string_view host, int64_t ts, std::string_view method,
                      std::string_view target, std::string_view body) {
  const std::string message =
      fmt::format("clickatron-v1\n{}\n{}\n{}\n{}\n{}", ts, host, method, target, BodyDigest(body));
  unsigned char md[EVP_MAX_MD_SIZE];
  unsigned int len = 0;
  HMAC(EVP_sha256(), secret.data(), static_cast<int>(secret.size()),
       reinterpret_cast<const unsigned char*>(message.data()), message.size(), md, &len);
  return ToLowerHex(md, len);
}

// The value after "NAME=" among space-separated fields, or "" when absent.
std::string_view Field(std::string_view header, std::string_view name) {
  size_t pos = 0;
  while (pos < header.size()) {
    size_t end = header.find(' ', pos);
    if (end == std::string_view::npos) end = header.size();
    std::string_view field = header.substr(pos, end - pos);
    if (field.size() > name.size() && field.substr(0, name.size()) == name && field[name.size()] == '=') {
      return field.substr(name.size() + 1);
    }
    pos = end + 1;
  }
  return {};
}

}  // namespace

std::string SignRequest(std::string_view secret, std::string_view host, std::string_view method,
                        std::string_view target, std::string_view body, int64_t unix_now) {
  return fmt::format("{} ts={} sig={}", kScheme, unix_now, Signature(secret, host, unix_now, method, target, body));
}

Status VerifyRequest(std::string_view secret, std::string_view host, std::string_view header,
                     std::string_view method, std::string_view target, std::string_view body, int64_t unix_now) {
  if (header.empty()) {
    return Status::Unauthorized(fmt::format("{} is for cluster members: the request carries no {} header", target.substr(0, target.find('?')), kSignatureHeader));
  }
  if (header.substr(0, kScheme.size() + 1) != std::string(kScheme) + " ") {
    return Status::Unauthorized(fmt::format("{}: unknown scheme (expected \"{} ts=… sig=…\")", kSignatureHeader, kScheme));
  }
  const std::string_view ts_text = Field(header, "ts");
  const std::string_view sig = Field(header, "sig");
  int64_t ts = 0;
  auto [end, ec] = std::from_chars(ts_text.data(), ts_text.data() + ts_text.size(), ts);
  if (ts_text.empty() || ec != std::errc() || end != ts_text.data() + ts_text.size() || sig.empty()) {
    return Status::Unauthorized(fmt::format("{}: malformed (expected \"{} ts=… sig=…\")", kSignatureHeader, kScheme));
  }
  // Compared without arithmetic on ts: any int64 may arrive.
  if (ts < unix_now - kMaxSignatureSkewSeconds || ts > unix_now + kMaxSignatureSkewSeconds) {
    return Status::Unauthorized(fmt::format("{}: signed at {}, this member's clock says {} (at most {} s apart): "
                                            "check the clocks, or a replay",
                                            kSignatureHeader, ts, unix_now, kMaxSignatureSkewSeconds));
  }
  if (!ConstantTimeEquals(sig, Signature(secret, host, ts, method, target, body))) {
    return Status::Unauthorized(fmt::format("{}: wrong signature (another cluster secret, a request altered, or one "
                                            "meant for another member than {})",
                                            kSignatureHeader, host));
  }
  return Status::Ok();
}

bool ConstantTimeEquals(std::string_view a, std::string_view b) {
  if (a.size() != b.size()) return false;
  return CRYPTO_memcmp(a.data(), b.data(), a.size()) == 0;
}

Status CheckOwnerOnlyFile(const std::string& path, std::string_view what) {
  struct stat st {};
  if (::stat(path.c_str(), &st) != 0) {
    return Status::InvalidArgument(fmt::format("{} \"{}\": {}", what, path, std::strerror(errno)), "BAD_SECRET_FILE");
  }
  if (!S_ISREG(st.st_mode)) {
    return Status::InvalidArgument(fmt::format("{} \"{}\": not a regular file", what, path), "BAD_SECRET_FILE");
  }
  if (st.st_uid != ::geteuid()) {
    return Status::InvalidArgument(
        fmt::format("{} \"{}\": owned by uid {}, not by this user (uid {})", what, path, st.st_uid, ::geteuid()),
        "BAD_SECRET_FILE");
  }
  if ((st.st_mode & 077) != 0) {
    return Status::InvalidArgument(
        fmt::format("{} \"{}\": mode {:03o} lets others read it; only its owner may (chmod 600 {})", what, path,
                    st.st_mode & 0777, path),
        "BAD_SECRET_FILE");
  }
  return Status::Ok();
}

Result<std::string> ReadSecretFile(const std::string& path, std::string_view what) {
  CLICKATRON_RETURN_IF_ERROR(CheckOwnerOnlyFile(path, what));
  Result<std::string> text = ReadFileToString(path);
  if (!text.ok()) return text.status();
  std::string secret = std::move(text).value();
  while (!secret.empty() && (secret.back() == '\n' || secret.back() == '\r' || secret.back() == ' ' || secret.back() == '\t')) {
    secret.pop_back();
  }
  if (secret.size() < kMinSecretBytes) {
    return Status::InvalidArgument(
        fmt::format("{} \"{}\": {} bytes; a secret needs at least {}", what, path, secret.size(), kMinSecretBytes),
        "BAD_SECRET_FILE");
  }
  return secret;
}

Result<std::string> GenerateSecret() {
  unsigned char bytes[32];
  if (RAND_bytes(bytes, sizeof bytes) != 1) return Status::Internal("RAND_bytes failed: no entropy for a secret");
  return ToLowerHex(bytes, sizeof bytes);
}

bool IsLoopbackHost(std::string_view host) {
  if (host == "localhost" || host == "::1" || host == "[::1]") return true;
  // Only an IPv4 literal in 127.0.0.0/8: a name such as 127.example.com is
  // resolved when the socket is bound and may well reach other hosts.
  in_addr addr{};
  if (::inet_pton(AF_INET, std::string(host).c_str(), &addr) != 1) return false;
  return (ntohl(addr.s_addr) >> 24) == 127;
}

}  // namespace clickatron
