// `clickatron ymdh encode|decode`: YMDH hour codes <-> times.
#include <fmt/format.h>

#include <memory>

#include "clickatron/ymdh.h"
#include "commands.h"

namespace clickatron::tool {
namespace {

Status EncodeOne(std::string_view text) {
  Result<int64_t> seconds = ParseTimestamp(text);
  if (!seconds.ok()) return seconds.status();
  Result<std::string> code = YmdhFromUnix(*seconds);
  if (!code.ok()) return code.status();
  PrintLine(*code);
  return Status::Ok();
}

Status DecodeOne(std::string_view text, bool unix_seconds) {
  Result<int64_t> seconds = UnixFromYmdh(text);
  if (!seconds.ok()) return seconds.status();
  PrintLine(unix_seconds ? fmt::format("{}", *seconds) : FormatIsoTime(*seconds));
  return Status::Ok();
}

void AddYmdhCommand(Command& app) {
  Command ymdh = app.AddCommand("ymdh", "Convert times to YMDH hour codes and back (c3p1 = 2012-03-25 01:00 UTC)");
  ymdh.RequireCommand();

  Command encode = ymdh.AddCommand("encode", "Print the YMDH code of the hour holding each TIME");
  SetDetails(encode,
             "Example: clickatron ymdh encode 2012-03-25T01:00:00Z   -> c3p1\n"
             "TIME is RFC 3339 with whole seconds (Z or +HH:MM) or unix seconds; it is floored\n"
             "to the hour. 1970-01-01T00:00:00Z..2127-12-31T23:59:59Z is representable (2000-2031\n"
             "as the seed's 4 characters, other years as 5: 2032-01-01T01:00:00Z -> w0111);\n"
             "anything else is an error (never a wrapped code).");
  auto times = std::make_shared<std::vector<std::string>>();
  encode.Option("TIME", *times, "times to encode (default: one per line on stdin)");
  SetAction(encode, [times] { return ForEachArgOrStdinLine(*times, EncodeOne); });

  Command decode = ymdh.AddCommand("decode", "Print the UTC start of the hour each YMDH code names");
  SetDetails(decode,
             "Example: clickatron ymdh decode c3p1          -> 2012-03-25T01:00:00Z\n"
             "         clickatron ymdh decode --unix c3p1   -> 1332637200\n"
             "Codes naming no real hour (month 13, Feb 30, hour 24, upper case) are errors.");
  auto codes = std::make_shared<std::vector<std::string>>();
  auto unix_seconds = std::make_shared<bool>(false);
  decode.Option("YMDH", *codes, "codes to decode (default: one per line on stdin)");
  decode.Flag("--unix", *unix_seconds, "print unix seconds instead of RFC 3339");
  SetAction(decode, [codes, unix_seconds] {
    return ForEachArgOrStdinLine(
        *codes, [&](std::string_view text) { return DecodeOne(text, *unix_seconds); });
  });
}

const bool kYmdhRegistered = RegisterCommand(10, AddYmdhCommand);

}  // namespace
}  // namespace clickatron::tool
