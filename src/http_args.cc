#include "clickatron/http_args.h"

#include <algorithm>
#include <cctype>

#include <fmt/format.h>

#include "clickatron/key_codec.h"

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
  for (const auto& [name, value] : ex->args().items()) {
    if (std::find(known.begin(), known.end(), name) != known.end()) continue;
    std::string list;
    for (const std::string_view k : known) list += fmt::format("{}{}", list.empty() ? "" : ", ", k);
    ex->ReplyError(400, "UNKNOWN_PARAMETER",
                   known.size() == 0
                       ? fmt::format("{} takes no parameters; {} is not one (nothing was done)", ex->path(),
                                     QuoteForMessage(name))
                       : fmt::format("{} takes {}; {} is not one of them (nothing was done)", ex->path(), list,
                                     QuoteForMessage(name)));
    return false;
  }
  for (const std::string_view name : known) {
    const std::string* ignored = nullptr;
    if (!SingleArg(ex, name, &ignored)) return false;
  }
  return true;
}

}  // namespace clickatron
