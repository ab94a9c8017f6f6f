#include "clickatron/http_args.h"

#include <cctype>

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

}  // namespace clickatron
