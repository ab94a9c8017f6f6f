// Query-string parsing shared by every endpoint and by the API's batch bodies
// (one query string per line).
//
// Lenient the way sortdb's users expect: raw '|' and other unreserved bytes
// pass through (`/get?key=u|jehiah.c3hh` works unencoded). '+' stays '+'
// (hashes contain it): clients encode a space as %20. A malformed %-escape is
// an error, never a silent guess.
#pragma once

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

// Parses "a=1&b=x%20y&c" (a name without '=' has an empty value). Appends to
// *out. Errors: BAD_QUERY for a bad %-escape, TOO_MANY_ARGS past max_args.
Status ParseQueryString(std::string_view query, QueryArgs* out, size_t max_args = 1024);
// %-decodes one component. False on a malformed escape.
bool PercentDecode(std::string_view in, std::string* out);
// %-encodes everything but unreserved characters (RFC 3986) — for clients.
std::string PercentEncode(std::string_view in);

}  // namespace clickatron
