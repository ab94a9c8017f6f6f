// `clickatron sketch`: the unique-count sketch of a list of visitor tokens,
// for bulk loads of distinct visitors and for inspecting unique records.
#include <map>
#include <memory>

#include <fmt/format.h>

#include "clickatron/key_codec.h"
#include "clickatron/record.h"
#include "clickatron/unique_sketch.h"
#include "commands.h"

namespace clickatron::tool {
namespace {

void AddSketchCommand(Command& app) {
  Command sub = app.AddCommand("sketch", "Build the sketch of visitor tokens, or estimate sketches");
  SetDetails(sub,
             "Reads one visitor token per line (blank lines are tokens too: use none) and prints the\n"
             "sketch's text, the value of a unique record (docs/protocols.md, \"Unique records\"):\n"
             "  printf 'alice\\nbob\\nalice\\n' | clickatron sketch            -> e…  (2 visitors)\n"
             "  echo \"~u|jehiah.c41l,$(seq 1000 | clickatron sketch)\" >> history.csv   # a bulk load line\n"
             "With --estimate, reads sketch texts instead (one per line) and prints each one's\n"
             "distinct visitors, and with --union the distinct visitors of all of them together.\n"
             "--bytes prints the sketch's size in text and binary (RocksDB) form, its estimate and\n"
             "its form (explicit or dense) instead of the text.\n"
             "With --records, reads \"KEY,TOKEN\" lines (KEY a unique record's realtime key: ~ns|tkey.YMDH\n"
             "or ~sns.ns|tkey.skey.YMDH; TOKEN a visitor, everything after the first comma) and prints\n"
             "\"KEY,SKETCH\" once per key, sorted, each the sketch of that key's tokens: a visitor log\n"
             "turned into bulk-load lines (one sketch per distinct key is held in memory):\n"
             "  printf '~u|jehiah.c41l,alice\\n~u|jehiah.c41l,bob\\n' | clickatron sketch --records");
  auto estimate = std::make_shared<bool>(false);
  auto unite = std::make_shared<bool>(false);
  auto bytes = std::make_shared<bool>(false);
  auto records = std::make_shared<bool>(false);
  sub.Flag("--estimate", *estimate, "read sketch texts and print their distinct visitors");
  sub.Flag("--union", *unite, "with --estimate: print one number, the distinct visitors of all sketches");
  sub.Flag("--bytes", *bytes, "print \"TEXT_BYTES BINARY_BYTES VISITORS FORM\" of the tokens' sketch");
  sub.Flag("--records", *records, "read \"KEY,TOKEN\" lines and print \"KEY,SKETCH\" per unique record key");
  SetAction(sub, [estimate, unite, bytes, records] {
    const std::vector<std::string> none;
    if (*unite && !*estimate) return Status::InvalidArgument("--union goes with --estimate");
    if (*records) {
      if (*estimate || *bytes) return Status::InvalidArgument("--records takes neither --estimate nor --bytes");
      std::map<std::string, UniqueSketch, std::less<>> by_key;
      CLICKATRON_RETURN_IF_ERROR(ForEachFileLine(none, [&](std::string_view line) -> Status {
        const size_t comma = line.find(',');
        const std::string_view key = line.substr(0, comma);
        auto it = comma == std::string_view::npos ? by_key.end() : by_key.find(key);
        if (it == by_key.end()) {
          // A key seen before was checked then: a visitor log repeats keys.
          Result<RealtimeKey> parsed = ParseRealtimeKey(key);
          if (comma == std::string_view::npos || !parsed.ok() || !IsUniqueType(parsed->type)) {
            return Status::InvalidArgument(fmt::format(
                "{} is not \"KEY,TOKEN\" with KEY a unique record's realtime key (~ns|tkey.YMDH or "
                "~sns.ns|tkey.skey.YMDH){}",
                QuoteForMessage(line), parsed.ok() ? "" : ": " + parsed.status().message()));
          }
          it = by_key.emplace(std::string(key), UniqueSketch()).first;
        }
        if (comma + 1 == line.size()) {  // as /incr refuses uniq= empty
          return Status::InvalidArgument(fmt::format("{} has no visitor after the comma", QuoteForMessage(line)));
        }
        it->second.Add(HashVisitor(line.substr(comma + 1)));
        return Status::Ok();
      }));
      for (const auto& [key, sketch] : by_key) PrintLine(key + "," + sketch.ToText());
      return Status::Ok();
    }
    UniqueSketch all;
    Status st = ForEachFileLine(none, [&](std::string_view line) -> Status {
      if (!*estimate) {
        all.Add(HashVisitor(line));
        return Status::Ok();
      }
      Result<UniqueSketch> sketch = UniqueSketch::FromText(line);
      if (!sketch.ok()) return sketch.status();
      if (*unite) {
        all.Merge(*sketch);
      } else {
        PrintLine(std::to_string(sketch->Estimate()));
      }
      return Status::Ok();
    });
    if (!st.ok()) return st;
    if (*estimate) {
      if (*unite) PrintLine(std::to_string(all.Estimate()));
    } else if (*bytes) {
      PrintLine(fmt::format("{} {} {} {}", all.ToText().size(), all.ToBinary().size(), all.Estimate(),
                            all.exact() ? "explicit" : "dense"));
    } else {
      PrintLine(all.ToText());
    }
    return Status::Ok();
  });
}

const bool kSketchRegistered = RegisterCommand(55, AddSketchCommand);

}  // namespace
}  // namespace clickatron::tool
