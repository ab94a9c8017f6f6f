#include "clickatron/sha256.h"

#include <fcntl.h>
#include <openssl/evp.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <functional>
#include <memory>
#include <vector>

#include <fmt/format.h>

#include "clickatron/unique_fd.h"

namespace clickatron {
namespace {

constexpr size_t kReadBytes = 1u << 20;

struct CtxFree {
  void operator()(EVP_MD_CTX* ctx) const { EVP_MD_CTX_free(ctx); }
};

}  // namespace

std::string ToLowerHex(const unsigned char* data, size_t n) {
  static constexpr char kDigits[] = "0123456789abcdef";
  std::string out(n * 2, '0');
  for (size_t i = 0; i < n; ++i) {
    out[2 * i] = kDigits[data[i] >> 4];
    out[2 * i + 1] = kDigits[data[i] & 15];
  }
  return out;
}

std::string Sha256Hex(std::string_view bytes) {
  unsigned char md[EVP_MAX_MD_SIZE];
  unsigned int len = 0;
  EVP_Digest(bytes.data(), bytes.size(), md, &len, EVP_sha256(), nullptr);
  return ToLowerHex(md, len);
}

Result<std::string> Sha256OfStream(const std::function<Result<size_t>(char* out, size_t n)>& read) {
  std::unique_ptr<EVP_MD_CTX, CtxFree> ctx(EVP_MD_CTX_new());
  if (!ctx || EVP_DigestInit_ex(ctx.get(), EVP_sha256(), nullptr) != 1) {
    return Status::Internal("SHA-256: the digest could not be set up");
  }
  std::vector<char> buffer(kReadBytes);
  for (;;) {
    Result<size_t> n = read(buffer.data(), buffer.size());
    if (!n.ok()) return n.status();
    if (*n == 0) break;
    EVP_DigestUpdate(ctx.get(), buffer.data(), *n);
  }
  unsigned char md[EVP_MAX_MD_SIZE];
  unsigned int len = 0;
  if (EVP_DigestFinal_ex(ctx.get(), md, &len) != 1) return Status::Internal("SHA-256: the digest failed");
  return ToLowerHex(md, len);
}

Result<std::string> Sha256OfFile(const std::string& path) {
  UniqueFd fd(::open(path.c_str(), O_RDONLY | O_CLOEXEC));
  if (!fd.valid()) {
    if (errno == ENOENT) return Status::NotFound(fmt::format("{} does not exist", path));
    return Status::IoError(fmt::format("open {}: {}", path, std::strerror(errno)));
  }
  ::posix_fadvise(fd.get(), 0, 0, POSIX_FADV_SEQUENTIAL);
  return Sha256OfStream([&](char* out, size_t n) -> Result<size_t> {
    for (;;) {
      const ssize_t got = ::read(fd.get(), out, n);
      if (got < 0 && errno == EINTR) continue;
      if (got < 0) return Status::IoError(fmt::format("read {}: {}", path, std::strerror(errno)));
      return static_cast<size_t>(got);
    }
  });
}

}  // namespace clickatron
