#include "clickatron/http_args.h"

#include <cctype>

#include "clickatron/query_string.h"

namespace clickatron {

bool SingleArg(const HttpExchangePtr& ex, std::string_view name, const std::string** out) {
  std::string reason = "INVALID_";
  for (const char c : name) reason += static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
  Result<const std::string*> v = ex->args().GetSingle(name, reason);
  if (!v.ok()) {
    ex->ReplyError(400, v.status().reason(), v.status().message());
    return false;
  }
  *out = *v;
  return true;
}

bool OnlyArgs(const HttpExchangePtr& ex, std::initializer_list<std::string_view> known) {
  if (Status st = OnlyKnownArgs(ex->args(), known, ex->path()); !st.ok()) {
    ex->ReplyError(400, st.reason(), st.message());
    return false;
  }
  for (const std::string_view name : known) {
    const std::string* ignored = nullptr;
    if (!SingleArg(ex, name, &ignored)) return false;
  }
  return true;
}

}  // namespace clickatron
