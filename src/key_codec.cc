// Namespace and key-part rules and the 12-character hash (see key_codec.h).
#include "clickatron/key_codec.h"

#include <fmt/format.h>
#include <openssl/evp.h>

#include <cstdlib>

namespace clickatron {
namespace {

constexpr size_t kMessageQuoteLimit = 80;

bool IsNamespaceChar(char c) {
  return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_' ||
         c == '-';
}

bool IsBase64Char(char c) {
  return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '+' ||
         c == '/';
}

bool InRange(unsigned char c, unsigned char lo, unsigned char hi) { return c >= lo && c <= hi; }

// Length of the well-formed UTF-8 sequence starting at s[i], or 0 if there is
// none. Follows RFC 3629 table 3-7 exactly, so overlong forms (C0 AF, E0 80 AF),
// UTF-16 surrogates (ED A0 80) and code points above U+10FFFF are all refused.
size_t Utf8SequenceLength(std::string_view s, size_t i) {
  const auto at = [&](size_t k) -> unsigned char {
    return i + k < s.size() ? static_cast<unsigned char>(s[i + k]) : 0;
  };
  const unsigned char c = at(0);
  if (c < 0x80) return 1;
  if (InRange(c, 0xC2, 0xDF)) return InRange(at(1), 0x80, 0xBF) ? 2 : 0;
  if (InRange(c, 0xE0, 0xEF)) {
    const unsigned char lo = c == 0xE0 ? 0xA0 : 0x80;
    const unsigned char hi = c == 0xED ? 0x9F : 0xBF;
    return InRange(at(1), lo, hi) && InRange(at(2), 0x80, 0xBF) ? 3 : 0;
  }
  if (InRange(c, 0xF0, 0xF4)) {
    const unsigned char lo = c == 0xF0 ? 0x90 : 0x80;
    const unsigned char hi = c == 0xF4 ? 0x8F : 0xBF;
    return InRange(at(1), lo, hi) && InRange(at(2), 0x80, 0xBF) && InRange(at(3), 0x80, 0xBF) ? 4
                                                                                              : 0;
  }
  return 0;
}

// Byte offset of the first ill-formed sequence, or npos.
size_t FirstInvalidUtf8(std::string_view s) {
  for (size_t i = 0; i < s.size();) {
    const size_t n = Utf8SequenceLength(s, i);
    if (n == 0) return i;
    i += n;
  }
  return std::string_view::npos;
}

}  // namespace

Status ValidateNamespace(std::string_view ns, std::string_view field) {
  if (ns.empty()) return Status::InvalidArgument(fmt::format("{} must not be empty", field));
  if (ns.size() > kMaxNamespaceLength) {
    return Status::InvalidArgument(fmt::format("{} {} is longer than {} characters", field,
                                               QuoteForMessage(ns), kMaxNamespaceLength));
  }
  for (char c : ns) {
    if (!IsNamespaceChar(c)) {
      return Status::InvalidArgument(fmt::format(
          "{} {} may only hold the characters [A-Za-z0-9_-]", field, QuoteForMessage(ns)));
    }
  }
  if (ns == kLookupNamespace) {
    return Status::InvalidArgument(
        fmt::format("{} \"{}\" is reserved for lookup records", field, ns));
  }
  return Status::Ok();
}

Status ValidateKeyPart(std::string_view value, std::string_view field) {
  if (value.empty()) return Status::InvalidArgument(fmt::format("{} must not be empty", field));
  if (value.size() > kMaxKeyPartLength) {
    return Status::InvalidArgument(fmt::format("{} is {} bytes long; the limit is {}", field,
                                               value.size(), kMaxKeyPartLength));
  }
  if (const size_t bad = FirstInvalidUtf8(value); bad != std::string_view::npos) {
    return Status::InvalidArgument(fmt::format("{} {} is not valid UTF-8 (at byte {})", field,
                                               QuoteForMessage(value), bad));
  }
  if (value.find_first_of("\r\n") != std::string_view::npos) {
    return Status::InvalidArgument(fmt::format(
        "{} {} contains a line break, which a lookup record cannot hold", field,
        QuoteForMessage(value)));
  }
  return Status::Ok();
}

bool NeedsHash(std::string_view value) {
  if (value.size() >= kHashLength) return true;
  for (char c : value) {
    const auto b = static_cast<unsigned char>(c);
    if (b < 0x20 || c == ' ' || c == ':' || c == ',' || c == '.' || c == '|') return true;
  }
  return false;
}

std::string Hash12(std::string_view value) {
  unsigned char digest[EVP_MAX_MD_SIZE];
  unsigned int digest_len = 0;
  // MD5 here is a short, stable name for a value, not a security measure; its
  // output is fixed by the stored data (bitly's format), so it cannot change.
  if (EVP_Digest(value.data(), value.size(), digest, &digest_len, EVP_md5(), nullptr) != 1 ||
      digest_len < 8) {
    // Only possible if the OpenSSL build has no MD5 at all; there is no sane
    // fallback that keeps stored hashes meaningful.
    std::abort();
  }
  unsigned char encoded[kHashLength + 1];  // EVP_EncodeBlock adds a NUL
  const int n = EVP_EncodeBlock(encoded, digest, 8);
  return std::string(reinterpret_cast<const char*>(encoded), static_cast<size_t>(n));
}

StoredKeyPart StoreKeyPart(std::string_view value) {
  if (NeedsHash(value)) return StoredKeyPart{Hash12(value), true};
  return StoredKeyPart{std::string(value), false};
}

bool LooksLikeHash(std::string_view part) {
  if (part.size() != kHashLength || part.back() != '=') return false;
  for (size_t i = 0; i + 1 < part.size(); ++i) {
    if (!IsBase64Char(part[i])) return false;
  }
  return true;
}

Status ValidateStoredKeyPart(std::string_view part, std::string_view field) {
  if (LooksLikeHash(part)) return Status::Ok();
  if (part.empty()) return Status::InvalidArgument(fmt::format("{} must not be empty", field));
  // Parts of 12 bytes or more are always stored as hashes, so a long part that
  // is not one is damage, not data.
  if (part.size() >= kHashLength) {
    return Status::InvalidArgument(fmt::format(
        "{} {} is {} bytes but not a 12-character hash", field, QuoteForMessage(part), part.size()));
  }
  if (NeedsHash(part)) {
    return Status::InvalidArgument(fmt::format(
        "{} {} holds a reserved character (space : , . | or a control byte)", field,
        QuoteForMessage(part)));
  }
  if (FirstInvalidUtf8(part) != std::string_view::npos) {
    return Status::InvalidArgument(
        fmt::format("{} {} is not valid UTF-8", field, QuoteForMessage(part)));
  }
  return Status::Ok();
}

std::string QuoteForMessage(std::string_view text) {
  std::string out = "\"";
  size_t i = 0;
  while (i < text.size() && i < kMessageQuoteLimit) {
    const auto b = static_cast<unsigned char>(text[i]);
    if (b >= 0x80) {
      // Keep well-formed UTF-8 readable; escape stray bytes.
      const size_t n = Utf8SequenceLength(text, i);
      if (n > 0) {
        out.append(text.substr(i, n));
        i += n;
        continue;
      }
      out += fmt::format("\\x{:02x}", b);
    } else if (text[i] == '\n') {
      out += "\\n";
    } else if (text[i] == '\r') {
      out += "\\r";
    } else if (text[i] == '\t') {
      out += "\\t";
    } else if (text[i] == '"' || text[i] == '\\') {
      out += '\\';
      out += text[i];
    } else if (b < 0x20 || b == 0x7f) {
      out += fmt::format("\\x{:02x}", b);
    } else {
      out += text[i];
    }
    ++i;
  }
  out += '"';
  if (i < text.size()) out += fmt::format("… ({} bytes)", text.size());
  return out;
}

}  // namespace clickatron
