// Step: take out what a restatement supersedes or a deletion deletes
// (docs/protocols.md, "Restatements" and "Deletions"; deletions.h).
//
// A restatement of namespace NS over the hours [from, to) says: what the
// archive and every input acknowledged before it hold for those hours of NS
// no longer counts. It becomes one DropRule, which the merge applies to the
// previous generation and to each input older than the restatement; the
// restatement's own lines (and anything newer) pass untouched. A rule with
// a keys file covers only the keys ("ns|tkey", stored form) listed in it.
//
// What a rule takes from a line:
// - a total (`ns|tkey,YMDH:v …`): the columns of hours in the range; the
//   line goes when none is left;
// - an hour record (subtotal, unique total, unique subtotal): the whole line
//   when its hour is in the range;
// - day and span records: nothing here. They are sums of hours, and the
//   DayRecordSource the merge puts after every filtered input drops them and
//   makes them again from the hours that are left.
// - lookups: nothing (a lookup is shared by every hour that names the value),
//   but the one a rule names itself (a hashed key deleted for all time).
//
// Thread-safety: a LoadedDropRule is read-only once loaded; a DroppingSource
// belongs to one thread.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <unordered_set>
#include <vector>

#include <nlohmann/json_fwd.hpp>

#include "clickatron/status.h"
#include "clickatron/text_hash.h"
#include "sortmerge/line_io.h"

namespace clickatron::rebuild {

struct DropRule {
  std::string id;         // the restatement's queue id or the deletion's id (for messages)
  std::string ns;
  int64_t from_unix = 0;  // the first hour dropped (a whole hour)
  int64_t to_unix = 0;    // the hour after the last one dropped
  std::string keys_file;  // "": every key of ns (or `tkey`); else a file of "ns|tkey" lines
  std::string tkey;       // one key (stored form), without a keys file
  std::string lookup;     // a lookup record's key ("l|HASH") dropped too; "": none

  nlohmann::json ToJson() const;
  static Result<DropRule> FromJson(const nlohmann::json& json);
  friend bool operator==(const DropRule&, const DropRule&) = default;
};

// A rule with its keys file read into memory.
struct LoadedDropRule {
  DropRule rule;
  bool every_key = true;
  std::unordered_set<std::string, TextHash, std::equal_to<>> keys;

  // `keys_path`: where the rule's keys file is on this host (a task may have
  // been shipped it under another name).
  static Result<std::unique_ptr<LoadedDropRule>> Load(const DropRule& rule, const std::string& keys_path);
};

// The rules one input must obey.
class DropFilter {
 public:
  DropFilter() = default;
  explicit DropFilter(std::vector<const LoadedDropRule*> rules) : rules_(std::move(rules)) {}
  bool empty() const { return rules_.empty(); }

  enum class Verdict { kKeep, kRewritten, kDrop };
  // kRewritten: the line with some total columns taken out is in *rewritten.
  Verdict Apply(std::string_view line, std::string* rewritten) const;

 private:
  std::vector<const LoadedDropRule*> rules_;
};

class DroppingSource : public LineSource {
 public:
  DroppingSource(LineSource* input, DropFilter filter) : input_(input), filter_(std::move(filter)) {}
  bool Next(std::string_view* line) override;
  const Status& status() const override { return input_->status(); }
  const std::string& name() const override { return input_->name(); }

  uint64_t lines_dropped() const { return lines_dropped_; }
  uint64_t lines_rewritten() const { return lines_rewritten_; }

 private:
  LineSource* input_;
  DropFilter filter_;
  std::string rewritten_;
  uint64_t lines_dropped_ = 0;
  uint64_t lines_rewritten_ = 0;
};

}  // namespace clickatron::rebuild
