// How cluster members prove to each other that they hold the cluster secret
// (docs/protocols.md, "Authentication between members").
//
// A member signs every request it sends to another member with an
// HMAC-SHA256 over the request itself, never sending the secret:
//
//   X-Clickatron-Signature: v1 ts=1700000000 sig=<64 hex digits>
//   sig = HMAC-SHA256(secret, "clickatron-v1\n" ts "\n" HOST "\n" METHOD "\n" TARGET "\n" hex(SHA-256(body)))
//
// HOST is the receiving member's listen address as the cluster file gives it
// ("10.0.0.5:8090"), so a request signed for one shard is refused by every
// other. TARGET is the path and query exactly as sent
// ("/incr?source=api-0&seq=42"), so the source, the seq and every other
// argument are covered, and so is the body through its digest. A signature is accepted while its ts is within
// kMaxSignatureSkewSeconds of the receiver's clock. Within that window a
// captured request can be replayed as it is; for a batch that is harmless
// (its seq is at or below the watermark by then: a duplicate), and a replay
// cannot change a seq or a body.
//
// Secrets and tokens live in files that only their owner may read
// (ReadSecretFile refuses anything else), not in the cluster file, which is
// usually readable by everyone who can read the configuration.
//
// Thread-safety: no shared state; any thread may call any function at any
// time (GenerateSecret draws from OpenSSL's RAND_bytes, which is thread-safe).
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

#include "clickatron/status.h"

namespace clickatron {

inline constexpr std::string_view kSignatureHeader = "X-Clickatron-Signature";
inline constexpr int64_t kMaxSignatureSkewSeconds = 300;
inline constexpr size_t kMinSecretBytes = 16;

// The value of the signature header for this request to the member at
// `host` ("HOST:PORT", its listen address), signed at `unix_now`.
std::string SignRequest(std::string_view secret, std::string_view host, std::string_view method,
                        std::string_view target, std::string_view body, int64_t unix_now);

// Ok when `header` is a valid signature of this request by `secret` and its
// ts is within the skew window; kUnauthorized (reason UNAUTHORIZED, with what
// was wrong) otherwise. Compares in constant time.
// `host` is the receiver's own listen address.
Status VerifyRequest(std::string_view secret, std::string_view host, std::string_view header,
                     std::string_view method, std::string_view target, std::string_view body, int64_t unix_now);

// True iff a == b, in time that depends only on the lengths.
bool ConstantTimeEquals(std::string_view a, std::string_view b);

// BAD_SECRET_FILE unless `path` is a regular file owned by this user that
// neither group nor others may read or write (mode 600 or 400). `what` names
// it in errors ("[cluster] cluster_secret_file").
Status CheckOwnerOnlyFile(const std::string& path, std::string_view what);
// Reads a secret (or token) file that passes CheckOwnerOnlyFile; trailing
// whitespace is cut; at least kMinSecretBytes must remain.
Result<std::string> ReadSecretFile(const std::string& path, std::string_view what);

// A fresh random secret (32 bytes from the OS, as 64 hex digits).
Result<std::string> GenerateSecret();

// True for addresses only this host can reach: 127.0.0.0/8, ::1, localhost.
bool IsLoopbackHost(std::string_view host);

}  // namespace clickatron
