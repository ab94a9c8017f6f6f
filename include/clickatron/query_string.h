// Query-string parsing shared by every endpoint and by the API's batch bodies
// (one query string per line).
//
// Decoded as HTML forms, Python's urlencode, JavaScript's URLSearchParams and
// Go's url.Values encode (application/x-www-form-urlencoded): '+' is a
// space, and a literal '+' (as in the base64 of a hash) must be sent as %2B.
// Lenient the way sortdb's users expect: raw '|' and other bytes that need no
// escape pass through (`/get?key=u|jehiah.c3hh` works unencoded). A malformed
// %-escape is an error, never a silent guess.
//
// Thread-safety: the functions are pure; any thread may call them. A
// QueryArgs is a plain value: const methods from any number of threads,
// Add/Clear with it to one thread.
#pragma once

#include <initializer_list>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "clickatron/status.h"

namespace clickatron {

class QueryArgs {
 public:
  // The first value of `name`, or nullptr.
  const std::string* Get(std::string_view name) const;
  // The one value of a parameter that must not repeat (nullptr when
  // absent); given more than once, INVALID_ARGUMENT with `reason` ("units
  // is given more than once"): taking the first silently would answer a
  // question the client did not ask.
  Result<const std::string*> GetSingle(std::string_view name, std::string_view reason) const;
  std::vector<const std::string*> GetAll(std::string_view name) const;
  bool Has(std::string_view name) const { return Get(name) != nullptr; }
  const std::vector<std::pair<std::string, std::string>>& items() const { return items_; }
  void Add(std::string name, std::string value) { items_.emplace_back(std::move(name), std::move(value)); }
  size_t size() const { return items_.size(); }
  // Empties it but keeps its capacity: a parser reusing one QueryArgs for
  // every line of a batch allocates the vector once.
  void Clear() { items_.clear(); }

 private:
  std::vector<std::pair<std::string, std::string>> items_;
};

// OK when every parameter of `args` is one of `known`; otherwise
// INVALID_ARGUMENT, reason UNKNOWN_PARAMETER, naming the first other one
// and what `what` (a route, "an increment") takes. Every place that
// changes state refuses what it does not take this one way: ignored, a
// misspelt parameter changes what is done (`keys=` for `key` widened a
// deletion, `generaton=` a fetch, `vaule=` an increment). Allocates only
// to say what is wrong.
Status OnlyKnownArgs(const QueryArgs& args, std::initializer_list<std::string_view> known, std::string_view what);

// Parses "a=1&b=x%20y&c" (a name without '=' has an empty value). Appends to
// *out. Errors: BAD_QUERY for a bad %-escape, TOO_MANY_ARGS past max_args.
Status ParseQueryString(std::string_view query, QueryArgs* out, size_t max_args = 1024);
// Decodes one component ('+' -> space, %XX -> byte). False on a malformed escape.
bool PercentDecode(std::string_view in, std::string* out);
// %-encodes everything but unreserved characters (RFC 3986) — for clients.
std::string PercentEncode(std::string_view in);
// The same appended to *out, and its length: a request of many keys (an
// archive mget) is built and measured without a string per key.
void AppendPercentEncoded(std::string* out, std::string_view in);
size_t PercentEncodedSize(std::string_view in);

}  // namespace clickatron
