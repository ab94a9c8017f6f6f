// `clickatron record`: the realtime records one increment turns into — the
// total, one subtotal per subtotal namespace, and a lookup for every hashed
// part — exactly as the API would build them.
#include <fmt/format.h>

#include <ctime>
#include <memory>
#include <set>

#include "clickatron/key_codec.h"
#include "clickatron/record.h"
#include "clickatron/ymdh.h"
#include "commands.h"

namespace clickatron::tool {
namespace {

struct RecordOptions {
  std::string ns;
  std::string key;
  std::string time;  // empty: now
  std::string value = "1";
  std::vector<std::string> subs;  // SNS:SKEY
  std::string sns;
  std::string skey;
};

struct Sub {
  std::string sns;
  std::string skey;
};

Result<std::vector<Sub>> CollectSubs(const RecordOptions& opt) {
  std::vector<Sub> subs;
  for (const std::string& sub : opt.subs) {
    // Split at the first ':' only: a skey may itself hold colons (URLs).
    const size_t colon = sub.find(':');
    if (colon == std::string::npos) {
      return Status::InvalidArgument(
          fmt::format("--sub {} is not SNS:SKEY", QuoteForMessage(sub)));
    }
    subs.push_back({sub.substr(0, colon), sub.substr(colon + 1)});
  }
  if (opt.sns.empty() != opt.skey.empty()) {
    return Status::InvalidArgument("--sns and --skey go together");
  }
  if (!opt.sns.empty()) subs.push_back({opt.sns, opt.skey});
  std::set<std::string> seen;
  for (const Sub& sub : subs) {
    CLICKATRON_RETURN_IF_ERROR(ValidateNamespace(sub.sns, "sns"));
    CLICKATRON_RETURN_IF_ERROR(ValidateKeyPart(sub.skey, "skey"));
    // Two subtotals in one namespace would make that namespace sum to twice
    // the total, breaking the subtotal invariant.
    if (!seen.insert(sub.sns).second) {
      return Status::InvalidArgument(fmt::format("sns \"{}\" is given twice", sub.sns));
    }
  }
  return subs;
}

Status PrintRecords(const RecordOptions& opt) {
  CLICKATRON_RETURN_IF_ERROR(ValidateNamespace(opt.ns, "ns"));
  CLICKATRON_RETURN_IF_ERROR(ValidateKeyPart(opt.key, "key"));
  Result<int64_t> value = ParseCount(opt.value);
  if (value.ok()) {
    // What a load or restatement of the line would take.
    if (Status st = CheckLineCount(*value); !st.ok()) value = st;
  }
  if (!value.ok()) return value.status().WithContext("--value");
  Result<int64_t> seconds =
      opt.time.empty() ? Result<int64_t>(static_cast<int64_t>(std::time(nullptr)))
                       : ParseTimestamp(opt.time);
  if (!seconds.ok()) return seconds.status();
  Result<std::string> ymdh = YmdhFromUnix(*seconds);
  if (!ymdh.ok()) return ymdh.status();
  Result<std::vector<Sub>> subs = CollectSubs(opt);
  if (!subs.ok()) return subs.status();

  std::vector<std::string> lookups;  // in order of first use, once each
  std::set<std::string> seen_hashes;
  const auto store = [&](std::string_view raw) {
    StoredKeyPart part = StoreKeyPart(raw);
    if (part.hashed && seen_hashes.insert(part.stored).second) {
      RealtimeLine lookup;
      lookup.key.type = RecordType::kLookup;
      lookup.key.tkey = part.stored;
      lookup.lookup_value = std::string(raw);
      lookups.push_back(FormatRealtimeLine(lookup));
    }
    return part.stored;
  };

  RealtimeLine total;
  total.key.type = RecordType::kTotal;
  total.key.ns = opt.ns;
  total.key.tkey = store(opt.key);
  total.key.ymdh = *ymdh;
  total.count = *value;
  PrintLine(FormatRealtimeLine(total));
  for (const Sub& sub : *subs) {
    RealtimeLine line = total;
    line.key.type = RecordType::kSubtotal;
    line.key.sns = sub.sns;
    line.key.skey = store(sub.skey);
    PrintLine(FormatRealtimeLine(line));
  }
  for (const std::string& lookup : lookups) PrintLine(lookup);
  return Status::Ok();
}

void AddRecordCommand(Command& app) {
  Command sub = app.AddCommand("record", "Print the realtime record lines of one increment");
  SetDetails(sub,
             "Prints the total, one subtotal per subtotal namespace, then a lookup line for\n"
             "each hashed key part, as the API would write them, e.g.\n"
             "  clickatron record --ns u --key jehiah --time 2012-03-25T01:00:00Z --sub c:US\n"
             "  -> u|jehiah.c3p1,1\n"
             "     c.u|jehiah.US.c3p1,1");
  auto opt = std::make_shared<RecordOptions>();
  sub.Option("--ns", opt->ns, "namespace of the total").Required();
  sub.Option("--key", opt->key, "total key (raw; hashed when needed)").Required();
  sub.Option("--time,-t", opt->time, "RFC 3339 time or unix seconds (default: now)");
  sub.Option("--value", opt->value, "counter delta (int64, default 1)");
  sub.Option("--sub", opt->subs, "SNS:SKEY subtotal, repeatable (split at the first ':')");
  sub.Option("--sns", opt->sns, "subtotal namespace (with --skey)");
  sub.Option("--skey", opt->skey, "subtotal key (with --sns)");
  SetAction(sub, [opt] { return PrintRecords(*opt); });
}

const bool kRecordRegistered = RegisterCommand(50, AddRecordCommand);

}  // namespace
}  // namespace clickatron::tool
