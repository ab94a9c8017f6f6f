#include "drop_rules.h"

#include <algorithm>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "clickatron/record.h"
#include "clickatron/ymdh.h"

namespace clickatron::rebuild {

nlohmann::json DropRule::ToJson() const {
  return {{"id", id},           {"ns", ns},     {"from_unix", from_unix}, {"to_unix", to_unix},
          {"keys_file", keys_file}, {"tkey", tkey}, {"lookup", lookup}};
}

Result<DropRule> DropRule::FromJson(const nlohmann::json& json) {
  DropRule rule;
  try {
    rule.id = json.at("id").get<std::string>();
    rule.ns = json.at("ns").get<std::string>();
    rule.from_unix = json.at("from_unix").get<int64_t>();
    rule.to_unix = json.at("to_unix").get<int64_t>();
    rule.keys_file = json.value("keys_file", "");
    rule.tkey = json.value("tkey", "");
    rule.lookup = json.value("lookup", "");
  } catch (const nlohmann::json::exception& e) {
    return Status::Corruption(fmt::format("drop rule: {}", e.what()));
  }
  if (rule.ns.empty() || rule.from_unix % kSecondsPerHour != 0 || rule.to_unix % kSecondsPerHour != 0 ||
      rule.to_unix <= rule.from_unix) {
    return Status::Corruption(fmt::format("drop rule {}: not a namespace over whole hours", rule.id));
  }
  return rule;
}

Result<std::unique_ptr<LoadedDropRule>> LoadedDropRule::Load(const DropRule& rule, const std::string& keys_path) {
  auto loaded = std::make_unique<LoadedDropRule>();
  loaded->rule = rule;
  loaded->every_key = rule.keys_file.empty() && rule.tkey.empty();
  if (!rule.tkey.empty()) loaded->keys.emplace(rule.ns + "|" + rule.tkey);
  if (rule.keys_file.empty()) return loaded;
  auto reader = LineReader::Open(keys_path);
  if (!reader.ok()) return reader.status().WithContext(fmt::format("keys of restatement {}", rule.id));
  std::string_view line;
  while ((*reader)->Next(&line)) {
    if (!line.empty()) loaded->keys.emplace(line);
  }
  if (!(*reader)->status().ok()) return (*reader)->status();
  return loaded;
}

namespace {

bool HourInRule(const DropRule& rule, std::string_view code) {
  Result<int64_t> hour = UnixFromYmdh(code);
  return hour.ok() && *hour >= rule.from_unix && *hour < rule.to_unix;
}

// The columns of a total line left after taking out every hour some rule
// drops; false when none was taken out.
bool RewriteTotal(std::string_view line, const std::vector<const LoadedDropRule*>& rules, std::string* out) {
  const size_t comma = line.find(',');
  if (comma == std::string_view::npos) return false;
  out->assign(line.substr(0, comma + 1));
  bool dropped = false;
  (void)ForEachValueColumn(line.substr(comma + 1), [&](std::string_view hour, std::string_view count) {
    const bool drop = std::any_of(rules.begin(), rules.end(), [&](const LoadedDropRule* r) { return HourInRule(r->rule, hour); });
    dropped = dropped || drop;
    if (!drop) {
      if (out->back() != ',') out->push_back(' ');
      out->append(hour).append(":").append(count);
    }
    return Status::Ok();
  });
  return dropped;
}

}  // namespace

DropFilter::Verdict DropFilter::Apply(std::string_view line, std::string* rewritten) const {
  if (rules_.empty()) return Verdict::kKeep;
  const ArchiveKeyView key = SplitArchiveKey(LineKey(line));
  if (key.type == RecordType::kLookup) {
    const std::string_view lookup = LineKey(line);
    const bool named = std::any_of(rules_.begin(), rules_.end(),
                                   [&](const LoadedDropRule* r) { return !r->rule.lookup.empty() && r->rule.lookup == lookup; });
    return named ? Verdict::kDrop : Verdict::kKeep;
  }
  if (key.type == RecordType::kLookup || IsDayType(key.type) || key.ns.empty()) return Verdict::kKeep;
  std::vector<const LoadedDropRule*> applying;
  for (const LoadedDropRule* r : rules_) {
    if (r->rule.ns != key.ns) continue;
    if (!r->every_key && r->keys.find(key.ns_tkey) == r->keys.end()) continue;
    applying.push_back(r);
  }
  if (applying.empty()) return Verdict::kKeep;
  if (key.type == RecordType::kTotal) {
    if (!RewriteTotal(line, applying, rewritten)) return Verdict::kKeep;
    return rewritten->back() == ',' ? Verdict::kDrop : Verdict::kRewritten;
  }
  for (const LoadedDropRule* r : applying) {
    if (HourInRule(r->rule, key.code)) return Verdict::kDrop;
  }
  return Verdict::kKeep;
}

bool DroppingSource::Next(std::string_view* line) {
  while (input_->Next(line)) {
    switch (filter_.Apply(*line, &rewritten_)) {
      case DropFilter::Verdict::kKeep:
        return true;
      case DropFilter::Verdict::kRewritten:
        ++lines_rewritten_;
        *line = rewritten_;
        return true;
      case DropFilter::Verdict::kDrop:
        ++lines_dropped_;
        break;
    }
  }
  return false;
}

}  // namespace clickatron::rebuild
