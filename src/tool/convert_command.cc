// `clickatron convert --to archive|realtime`: reformat record files.
//
// Reads everything into memory and sorts it there: right for inspecting and
// repairing small files. The rebuild does the same job over real data with an
// external sort and bounded memory.
#include <fmt/format.h>

#include <algorithm>
#include <memory>

#include "clickatron/convert.h"
#include "clickatron/record.h"
#include "clickatron/unique_sketch.h"
#include "commands.h"

namespace clickatron::tool {
namespace {

// Realtime lines -> one-column archive lines -> sorted -> combined.
Status ToArchive(const std::vector<std::string>& files) {
  std::vector<std::string> lines;
  CLICKATRON_RETURN_IF_ERROR(ForEachFileLine(files, [&](std::string_view line) {
    Result<std::string> archive = RealtimeToArchiveLine(line);
    if (!archive.ok()) return archive.status();
    lines.push_back(std::move(archive).value());
    return Status::Ok();
  }));
  // std::string's order is bytewise (unsigned), i.e. LC_ALL=C sort order.
  std::sort(lines.begin(), lines.end());
  // Output is held back until combining succeeds (a sum can overflow), so a
  // failed run prints nothing.
  std::vector<std::string> out;
  ArchiveCombiner combiner([&out](std::string_view line) {
    out.emplace_back(line);
    return Status::Ok();
  });
  for (const std::string& line : lines) {
    CLICKATRON_RETURN_IF_ERROR(combiner.Add(line).WithContext("summing equal keys after sorting, sorted"));
  }
  CLICKATRON_RETURN_IF_ERROR(combiner.Finish());
  for (const std::string& line : out) PrintLine(line);
  return Status::Ok();
}

// Folds `line` into `*last` when both have the same realtime key (the input
// may repeat a key, e.g. two archive generations): counts add, lookups must
// agree. False when the keys differ.
Result<bool> FoldSameKey(std::string* last, std::string_view line) {
  const std::string_view key = LineKey(line);
  if (LineKey(*last) != key) return false;
  const std::string_view last_value = std::string_view(*last).substr(key.size() + 1);
  const std::string_view value = line.substr(key.size() + 1);
  if (RecordTypeOfKey(key) == RecordType::kLookup) {
    if (last_value == value) return true;
    return Status::Corruption(fmt::format("lookup {} has two different values", key));
  }
  if (IsUniqueType(RecordTypeOfKey(key))) {
    Result<std::string> united = MergeSketchTexts(last_value, value);
    if (!united.ok()) return united.status().WithContext(fmt::format("key {}", key));
    *last = fmt::format("{},{}", key, *united);
    return true;
  }
  Result<int64_t> sum = ParseCount(last_value);
  Result<int64_t> add = ParseCount(value);
  if (!sum.ok()) return sum.status();
  if (!add.ok()) return add.status();
  if (Status st = AddCount(&*sum, *add); !st.ok()) return st.WithContext(fmt::format("key {}", key));
  *last = fmt::format("{},{}", key, *sum);
  return true;
}

// Archive lines -> realtime lines -> sorted, equal keys summed.
Status ToRealtime(const std::vector<std::string>& files) {
  std::vector<std::string> lines;
  CLICKATRON_RETURN_IF_ERROR(ForEachFileLine(files, [&](std::string_view line) {
    return ArchiveToRealtimeLines(line, &lines);
  }));
  std::sort(lines.begin(), lines.end());
  // Folded in place; printed only once every fold succeeded.
  std::vector<std::string> out;
  for (std::string& line : lines) {
    if (!out.empty()) {
      Result<bool> folded = FoldSameKey(&out.back(), line);
      if (!folded.ok()) return folded.status();
      if (*folded) continue;
    }
    out.push_back(std::move(line));
  }
  for (const std::string& line : out) PrintLine(line);
  return Status::Ok();
}

void AddConvertCommand(Command& app) {
  Command sub = app.AddCommand("convert", "Convert record lines between the realtime and archive formats");
  SetDetails(sub,
             "  --to archive:  realtime lines (u|jehiah.c41l,5) -> archive lines (u|jehiah,c41l:5)\n"
             "  --to realtime: archive lines -> realtime lines\n"
             "Output is sorted (LC_ALL=C order) with equal keys combined (counts summed).\n"
             "The whole input is held and sorted in memory: fine for inspection and repairs,\n"
             "not for a cluster's archive (the rebuild uses an external sort). A bad line\n"
             "stops the run, naming file and line, before anything is printed.");
  auto to = std::make_shared<std::string>();
  auto files = std::make_shared<std::vector<std::string>>();
  sub.Option("--to", *to, "target format").Required().OneOf({"archive", "realtime"});
  sub.Option("FILE", *files, "input files; none or '-' reads stdin");
  SetAction(sub, [to, files] { return *to == "archive" ? ToArchive(*files) : ToRealtime(*files); });
}

const bool kConvertRegistered = RegisterCommand(40, AddConvertCommand);

}  // namespace
}  // namespace clickatron::tool
