// `clickatron hash`: the 12-character hash (or stored form) of key values.
#include <memory>

#include "clickatron/key_codec.h"
#include "commands.h"

namespace clickatron::tool {
namespace {

void AddHashCommand(Command& app) {
  Command sub = app.AddCommand("hash", "Print the 12-character hash of each value");
  SetDetails(sub,
             "Hash12 = base64 of the first 8 bytes of MD5(value), e.g.\n"
             "  clickatron hash http://www.facebook.com/           -> h0aMB8AuNw4=\n"
             "  clickatron hash --stored jehiah 'a b'              -> jehiah, DMnNTdJsUTc=");
  auto values = std::make_shared<std::vector<std::string>>();
  auto stored = std::make_shared<bool>(false);
  sub.Option("VALUE", *values, "values to hash (default: each line of stdin, blank lines too)");
  sub.Flag("--stored", *stored,
           "print the form the value takes inside record keys instead: the value itself\n"
           "when short and plain, else its hash (and refuse values that are no valid key)");
  SetAction(sub, [values, stored] {
    return ForEachArgOrStdinLine(*values, [&](std::string_view value) {
      if (!*stored) {
        PrintLine(Hash12(value));
        return Status::Ok();
      }
      CLICKATRON_RETURN_IF_ERROR(ValidateKeyPart(value, "value"));
      PrintLine(StoreKeyPart(value).stored);
      return Status::Ok();
    });
  });
}

const bool kHashRegistered = RegisterCommand(20, AddHashCommand);

}  // namespace
}  // namespace clickatron::tool
