// Namespace and key rules, and the 12-character hash (docs/protocols.md).
//
// A tkey or skey is stored as itself unless it contains a reserved character
// (space : , . |), a newline or any byte < 0x20, or is 12 bytes or longer; then
// it is stored as Hash12(value) and a lookup record `l|HASH,value` keeps the
// full value. Hash12 = standard base64 (with '=' padding) of the first 8 bytes
// of MD5(value): always 12 characters, e.g. Hash12("http://www.facebook.com/")
// == "h0aMB8AuNw4=".
//
// Thread-safety: pure functions of their arguments; any thread may call them.
#pragma once

#include <string>
#include <string_view>

#include "clickatron/status.h"

namespace clickatron {

inline constexpr size_t kHashLength = 12;
inline constexpr size_t kMaxNamespaceLength = 8;
// Longest key part accepted at all (bytes), hashed or not.
inline constexpr size_t kMaxKeyPartLength = 4096;
inline constexpr std::string_view kLookupNamespace = "l";

// 1-8 chars of [A-Za-z0-9_-]; "l" is reserved for lookups. `field` names the
// parameter in the error ("ns", "sns").
Status ValidateNamespace(std::string_view ns, std::string_view field);
// Non-empty, valid UTF-8, at most kMaxKeyPartLength bytes, and no line break
// ('\n' or '\r'): a lookup record carries the full value on one line of a
// line-based file, so a line break could never be stored. `field` as above.
Status ValidateKeyPart(std::string_view value, std::string_view field);

bool NeedsHash(std::string_view value);
std::string Hash12(std::string_view value);

// The form a key part takes inside record keys.
struct StoredKeyPart {
  std::string stored;  // the value itself, or its hash
  bool hashed = false; // true: a lookup record must carry the full value
};
StoredKeyPart StoreKeyPart(std::string_view value);

// The shape of a Hash12: 11 characters of the standard base64 alphabet and '='.
bool LooksLikeHash(std::string_view part);
// A key part as found inside a stored record key: either a hash (LooksLikeHash)
// or a value that needs no hashing (valid UTF-8, short, no reserved bytes).
Status ValidateStoredKeyPart(std::string_view part, std::string_view field);

// `text` in double quotes for an error message: control bytes, quotes and
// invalid UTF-8 escaped (\n, \", \xNN), cut after about 80 bytes, so bad
// input never garbles a log line or an error answer.
std::string QuoteForMessage(std::string_view text);

}  // namespace clickatron
