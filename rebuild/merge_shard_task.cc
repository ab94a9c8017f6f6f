#include "merge_shard_task.h"

#include <sys/stat.h>

#include <algorithm>
#include <map>
#include <memory>

#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include "archive_merge.h"
#include "backup.h"
#include "clickatron/file_util.h"
#include "clickatron/generation_fetch.h"
#include "clickatron/http_client.h"
#include "clickatron/shard.h"
#include "day_records.h"
#include "mapped_file_lines.h"
#include "retention_rollup.h"
#include "clickatron/timezone.h"
#include "clickatron/ymdh.h"
#include "sortmerge/line_io.h"
#include "sortmerge/merge.h"
#include "sortmerge/progress.h"
#include "split.h"

namespace clickatron::rebuild {
namespace {

// The previous generation's file of the shard from the first replica that
// serves it whole (FetchShardFile checks size, crc32 and generation).
Status FetchPrevious(const MergeShardSpec& spec, const ClusterConfig& cluster, const std::string& path) {
  BlockingHttpClient client(cluster);
  std::string failures;
  for (const MemberConfig* replica : cluster.ArchiveReplicas(spec.shard)) {
    const Status fetched = FetchShardFile(client, replica->listen, *spec.previous_manifest, path, spec.fetch_timeout_ms);
    if (fetched.ok()) {
      spdlog::info("shard {}: generation {} fetched from {} ({} bytes)", spec.shard, spec.previous_manifest->generation,
                   replica->name, spec.previous_manifest->bytes);
      return Status::Ok();
    }
    failures += fmt::format("{}{}: {}", failures.empty() ? "" : "; ", replica->name, fetched.message());
  }
  return Status::Unavailable(fmt::format("no replica of archive shard {} gave generation {}: {}", spec.shard,
                                         spec.previous_manifest->generation,
                                         failures.empty() ? "the cluster file names none" : failures));
}

// The spec's retention boundaries with their zones. The boundaries were
// planned on the rebuild host: a task host whose tzdata cuts a zone's days
// elsewhere would roll a day across one that moves tonight, so that is
// refused. (One that did not move was applied before; a later tzdata may cut
// that day elsewhere, and what was rolled stays.)
Result<std::vector<RetentionSource::Rule>> RetentionRules(const MergeShardSpec& spec) {
  std::vector<RetentionSource::Rule> rules;
  TimeZoneDb zones;
  for (const AppliedRetention& applied : spec.retention) {
    auto zone = RetentionZone::Open(applied.zone, zones);
    if (!zone.ok()) return zone.status().WithContext(fmt::format("retention of namespace {}", applied.ns));
    const AppliedRetention* before = spec.previous_manifest ? spec.previous_manifest->RetentionOf(applied.ns) : nullptr;
    const std::optional<int64_t> moved_hourly_from =
        before && before->hourly_from == applied.hourly_from ? std::nullopt
                                                             : std::optional<int64_t>(applied.hourly_from);
    const std::optional<int64_t> moved_kept_from =
        before && before->kept_from == applied.kept_from ? std::nullopt : applied.kept_from;
    for (const std::optional<int64_t> boundary : {moved_hourly_from, moved_kept_from}) {
      if (boundary && zone->DayStart(zone->DayOf(*boundary)) != *boundary) {
        return Status::FailedPrecondition(
            fmt::format("retention of namespace {}: {} is not the start of a day of {} by this host's tzdata (the "
                        "rebuild host planned it as one): make the hosts' tzdata agree",
                        applied.ns, FormatIsoTime(*boundary), applied.zone),
            "TZDATA_DIFFERS");
      }
    }
    rules.push_back({applied, std::move(zone).value()});
  }
  return rules;
}

// Whether this generation's retention rolls up only whole UTC days and drops
// nothing the previous one kept: a UTC policy (or a zone at offset 0 over the
// newly aged days) whose kept_from did not move. Then every rolled day's
// anchor is in the UTC day of its hours, so no day or span record changes,
// and the previous file's records of those namespaces can be kept as they
// are instead of being made again from the hours.
bool RollsWithinUtcDays(const MergeShardSpec& spec, const std::vector<RetentionSource::Rule>& rules) {
  for (const RetentionSource::Rule& rule : rules) {
    const AppliedRetention& r = rule.applied;
    const AppliedRetention* before = spec.previous_manifest ? spec.previous_manifest->RetentionOf(r.ns) : nullptr;
    if (before ? before->kept_from != r.kept_from : r.kept_from.has_value()) return false;
    if (before && before->zone != r.zone) return false;
    const int64_t from = before ? before->hourly_from : 0;
    if (from < r.hourly_from && rule.zone.OffsetHoursDuring(from, r.hourly_from) != std::vector<int>{0}) return false;
  }
  return true;
}

}  // namespace

bool MergeShardSpec::RetentionMoved() const {
  for (const AppliedRetention& r : retention) {
    const AppliedRetention* before = previous_manifest ? previous_manifest->RetentionOf(r.ns) : nullptr;
    if (before == nullptr || *before != r) return true;
  }
  return false;
}

nlohmann::json MergeShardSpec::ToJson() const {
  nlohmann::json j = {{"kind", "merge-shard"}, {"shard", shard},     {"shard_count", shard_count},
                      {"generation", generation}, {"last_day", last_day}, {"created", created},
                      {"late_inputs", late_inputs}, {"inputs", inputs}, {"backup", backup}};
  if (previous_manifest) {
    j["previous"] = {{"file", previous_file},
                     {"manifest", previous_manifest->ToJson()},
                     {"fetch", fetch_previous},
                     {"fetch_timeout_ms", fetch_timeout_ms}};
  } else {
    j["previous"] = nullptr;
  }
  if (!drop_rules.empty()) {
    nlohmann::json rules = nlohmann::json::array();
    for (const DropRule& rule : drop_rules) rules.push_back(rule.ToJson());
    j["drop_rules"] = std::move(rules);
    j["input_drops"] = input_drops;
    j["previous_drops"] = previous_drops;
  }
  if (!retention.empty()) j["retention"] = RetentionListJson(retention);
  if (!reshard_from.empty()) {
    nlohmann::json files = nlohmann::json::array();
    for (const PreviousShardFile& f : reshard_from) files.push_back({{"file", f.file}, {"manifest", f.manifest.ToJson()}});
    j["reshard_from"] = std::move(files);
  }
  return j;
}

Result<MergeShardSpec> MergeShardSpec::FromJson(const nlohmann::json& j) {
  MergeShardSpec spec;
  spec.shard = j.at("shard").get<int>();
  spec.shard_count = j.at("shard_count").get<int>();
  spec.generation = j.at("generation").get<uint64_t>();
  spec.last_day = j.at("last_day").get<std::string>();
  spec.created = j.at("created").get<std::string>();
  spec.late_inputs = j.at("late_inputs").get<std::vector<std::string>>();
  spec.inputs = j.at("inputs").get<std::vector<std::string>>();
  spec.backup = j.value("backup", "");
  if (const nlohmann::json& previous = j.at("previous"); !previous.is_null()) {
    spec.previous_file = previous.at("file").get<std::string>();
    spec.fetch_previous = previous.value("fetch", false);
    spec.fetch_timeout_ms = previous.value("fetch_timeout_ms", spec.fetch_timeout_ms);
    auto manifest = Manifest::FromJson(previous.at("manifest"));
    if (!manifest.ok()) return manifest.status();
    spec.previous_manifest = *manifest;
  }
  if (j.contains("retention")) {
    auto retention = RetentionListFromJson(j.at("retention"));
    if (!retention.ok()) return retention.status();
    spec.retention = std::move(retention).value();
  }
  if (j.contains("reshard_from")) {
    for (const nlohmann::json& f : j.at("reshard_from")) {
      auto manifest = Manifest::FromJson(f.at("manifest"));
      if (!manifest.ok()) return manifest.status();
      spec.reshard_from.push_back({f.at("file").get<std::string>(), *manifest});
    }
  }
  if (j.contains("drop_rules")) {
    for (const nlohmann::json& r : j.at("drop_rules")) {
      auto rule = DropRule::FromJson(r);
      if (!rule.ok()) return rule.status();
      spec.drop_rules.push_back(*rule);
    }
    spec.input_drops = j.at("input_drops").get<std::vector<std::vector<int>>>();
    if (j.contains("previous_drops")) {
      spec.previous_drops = j.at("previous_drops").get<std::vector<int>>();
    } else {
      for (size_t r = 0; r < spec.drop_rules.size(); ++r) spec.previous_drops.push_back(static_cast<int>(r));
    }
    std::vector<const std::vector<int>*> named = {&spec.previous_drops};
    for (const std::vector<int>& drops : spec.input_drops) named.push_back(&drops);
    for (const std::vector<int>* drops : named) {
      for (int d : *drops) {
        if (d < 0 || static_cast<size_t>(d) >= spec.drop_rules.size()) {
          return Status::InvalidArgument(fmt::format("merge-shard: input_drops names rule {} of {}", d,
                                                     spec.drop_rules.size()));
        }
      }
    }
  }
  if (spec.previous_manifest && !spec.reshard_from.empty()) {
    return Status::InvalidArgument("merge-shard: a previous file to merge into and files to reshard from");
  }
  if (spec.shard_count < 1 || spec.shard < 0 || spec.shard >= spec.shard_count) {
    return Status::InvalidArgument(fmt::format("merge-shard: shard {} of {}", spec.shard, spec.shard_count));
  }
  return spec;
}

Result<std::unique_ptr<MappedFile>> MapCheckedPreviousFile(const std::string& path, const Manifest& manifest) {
  auto mapped = MappedFile::Open(path);
  if (!mapped.ok()) return mapped.status();
  (void)(*mapped)->Advise("sequential");  // a hint only
  const std::string_view data = (*mapped)->data();
  const uint32_t crc = Crc32(data);
  if (crc != manifest.crc32 || data.size() != manifest.bytes) {
    return Status::Corruption(fmt::format(
        "{} does not match its manifest (generation {} shard {}: crc32 {} vs {}, {} vs {} bytes); not building on it",
        path, manifest.generation, manifest.shard, crc, manifest.crc32, data.size(), manifest.bytes));
  }
  return mapped;
}

std::string MergeShardOutput(const TaskPaths& task, int shard) {
  return fmt::format("{}/shard-{}.csv", task.Out(), shard);
}

Result<nlohmann::json> RunMergeShard(const TaskPaths& task, const MergeShardSpec& spec, const ClusterConfig& cluster,
                                     const TaskResources& resources) {
  const std::string out_path = MergeShardOutput(task, spec.shard);
  std::string previous_path = spec.previous_manifest ? task.Resolve(spec.previous_file) : "";
  if (spec.previous_manifest && spec.fetch_previous) {
    previous_path = task.Tmp() + "/previous.csv";
    CLICKATRON_RETURN_IF_ERROR(FetchPrevious(spec, cluster, previous_path));
  }
  std::unique_ptr<Progress> own_progress;
  Progress* progress = resources.progress;
  if (progress == nullptr) {
    uint64_t total = spec.previous_manifest ? spec.previous_manifest->bytes : 0;
    for (const std::string& input : spec.inputs) total += FileSizeOrZero(task.Resolve(input));
    for (const PreviousShardFile& f : spec.reshard_from) total += FileSizeOrZero(task.Resolve(f.file));
    own_progress = std::make_unique<Progress>(fmt::format("merge shard {}", spec.shard), total);
    progress = own_progress.get();
  }

  // The previous generation's shard file, mapped (none for the first generation).
  std::unique_ptr<MappedFile> previous_file;
  std::string_view previous_data;
  if (spec.previous_manifest) {
    auto mapped = MappedFile::Open(previous_path);
    if (!mapped.ok()) return mapped.status();
    previous_file = std::move(mapped).value();
    (void)previous_file->Advise("sequential");  // a hint only
    previous_data = previous_file->data();
  }
  // The restatements' and deletions' rules, and a filter of the rules each
  // input obeys.
  std::vector<std::unique_ptr<LoadedDropRule>> rules;
  for (const DropRule& rule : spec.drop_rules) {
    auto loaded = LoadedDropRule::Load(rule, task.Resolve(rule.keys_file));
    if (!loaded.ok()) return loaded.status();
    rules.push_back(std::move(loaded).value());
  }
  std::vector<const LoadedDropRule*> previous_rules;
  for (int d : spec.previous_drops) previous_rules.push_back(rules[static_cast<size_t>(d)].get());
  std::vector<std::unique_ptr<DroppingSource>> droppers;
  auto obeying = [&](LineSource* source, std::vector<const LoadedDropRule*> obeyed) -> LineSource* {
    if (obeyed.empty()) return source;
    droppers.push_back(std::make_unique<DroppingSource>(source, DropFilter(std::move(obeyed))));
    return droppers.back().get();
  };
  // This shard's part of every new input, merged into one sorted stream.
  std::vector<std::unique_ptr<LineReader>> readers;
  std::vector<std::unique_ptr<ShardFilter>> filters;
  std::vector<LineSource*> sources;
  for (size_t i = 0; i < spec.inputs.size(); ++i) {
    auto reader = LineReader::Open(task.Resolve(spec.inputs[i]), {.buffer_bytes = 1u << 20});
    if (!reader.ok()) return reader.status();
    filters.push_back(std::make_unique<ShardFilter>(reader->get(), static_cast<uint32_t>(spec.shard),
                                                    static_cast<uint32_t>(spec.shard_count)));
    std::vector<const LoadedDropRule*> obeyed;
    if (i < spec.input_drops.size()) {
      for (int d : spec.input_drops[i]) obeyed.push_back(rules[static_cast<size_t>(d)].get());
    }
    sources.push_back(obeying(filters.back().get(), std::move(obeyed)));
    readers.push_back(std::move(reader).value());
  }
  // A previous file without a day record for every day and a span record
  // for every span with subtotal or unique hours (an older format, or brought
  // in by hand) is read in full, as one more input, once: its day and span
  // records are made from its hours instead of being added to. So is one
  // that restatements take hours out of: the day and span records of those
  // hours are made again from what is left.
  //
  // A retention boundary that moved needs only the lines of the namespaces
  // with a policy: those ranges of the file are read and rolled up (their
  // day and span records kept when only UTC days roll up, else made again)
  // and the merge skips them; the rest is copied as every night.
  auto retention_rules = RetentionRules(spec);
  if (!retention_rules.ok()) return retention_rules.status();
  std::unique_ptr<MappedFileLines> previous_lines;
  std::vector<std::unique_ptr<TextLineSource>> aged_ranges;
  std::vector<std::pair<size_t, size_t>> skipped;
  bool keep_range_day_records = false;
  std::string_view merge_base = previous_data;
  const bool made_again = !spec.previous_manifest || !spec.previous_manifest->SpanRecordsWhole() ||
                          !previous_rules.empty();
  if (previous_file && !made_again && spec.RetentionMoved()) {
    skipped = NamespaceRanges(previous_data,
                              [&](std::string_view ns) { return RetentionOf(spec.retention, ns) != nullptr; });
    keep_range_day_records = RollsWithinUtcDays(spec, *retention_rules);
    uint64_t bytes = 0;
    for (const auto& [begin, end] : skipped) {
      aged_ranges.push_back(
          std::make_unique<TextLineSource>(previous_data.substr(begin, end - begin), previous_file->path()));
      if (!keep_range_day_records) sources.push_back(aged_ranges.back().get());
      bytes += end - begin;
    }
    spdlog::info("generation {} shard {}: retention boundaries moved; the {} bytes of {} of namespaces with a policy "
                 "are read to roll up their aged days ({}), the other {} bytes copied",
                 spec.generation, spec.shard, bytes, previous_file->path(),
                 keep_range_day_records ? "whole UTC days: their day and span records kept"
                                        : "their day and span records made again",
                 previous_data.size() - bytes);
  } else if (previous_file && made_again) {
    previous_lines = std::make_unique<MappedFileLines>(previous_data, previous_file->path());
    sources.push_back(obeying(previous_lines.get(), previous_rules));
    merge_base = {};
    if (previous_rules.empty()) {
      spdlog::info("generation {} shard {}: {} is of format {}; adding day and span records to every day it holds",
                   spec.generation, spec.shard, previous_file->path(), spec.previous_manifest->format);
    } else {
      spdlog::info("generation {} shard {}: {} restatements and deletions take hours out of {}; its day and span "
                   "records are made again",
                   spec.generation, spec.shard, previous_rules.size(), previous_file->path());
    }
  }
  // A reshard: this shard's lines of every previous file are inputs like the
  // new ones (their day records dropped and made again from the hours, so a
  // day's record is the sum of its hours exactly once).
  std::vector<std::unique_ptr<MappedFile>> reshard_files;
  std::vector<std::unique_ptr<TextLineSource>> reshard_lines;
  for (const PreviousShardFile& f : spec.reshard_from) {
    auto mapped = MapCheckedPreviousFile(task.Resolve(f.file), f.manifest);
    if (!mapped.ok()) return mapped.status();
    reshard_files.push_back(std::move(mapped).value());
    reshard_lines.push_back(std::make_unique<TextLineSource>(reshard_files.back()->data(), reshard_files.back()->path()));
    filters.push_back(std::make_unique<ShardFilter>(reshard_lines.back().get(), static_cast<uint32_t>(spec.shard),
                                                    static_cast<uint32_t>(spec.shard_count)));
    sources.push_back(obeying(filters.back().get(), previous_rules));
  }
  if (!spec.reshard_from.empty()) {
    spdlog::info("generation {} shard {}: re-partitioned from the {} files of generation {} (cut into {} shards) "
                 "into {} shards",
                 spec.generation, spec.shard, spec.reshard_from.size(), spec.reshard_from.front().manifest.generation,
                 spec.reshard_from.front().manifest.shard_count, spec.shard_count);
  }
  MergingSource merged(std::move(sources), "new inputs");
  // Aged hours rolled into days, hours past retention dropped.
  std::unique_ptr<RetentionSource> retention;
  LineSource* kept = &merged;
  if (!retention_rules->empty()) {
    retention = std::make_unique<RetentionSource>(&merged, *retention_rules);
    kept = retention.get();
  }
  // Each day's record of the new hours; the merge adds it to the previous
  // generation's record of that day, if it has one.
  DayRecordSource day_records(kept);
  LineSource* additions = &day_records;
  // Ranges rolled within UTC days keep their day and span records, and the
  // new lines' records add to them as they would to the file's.
  std::unique_ptr<MergingSource> ranges;
  std::unique_ptr<RetentionSource> ranges_rolled;
  std::unique_ptr<MergingSource> with_ranges;
  if (keep_range_day_records) {
    std::vector<LineSource*> range_sources;
    for (const auto& range : aged_ranges) range_sources.push_back(range.get());
    ranges = std::make_unique<MergingSource>(std::move(range_sources), "aged ranges");
    ranges_rolled = std::make_unique<RetentionSource>(ranges.get(), *retention_rules, /*keep_day_records=*/true);
    with_ranges = std::make_unique<MergingSource>(std::vector<LineSource*>{&day_records, ranges_rolled.get()},
                                                  "new inputs and aged ranges");
    additions = with_ranges.get();
  }
  auto writer = ShardFileWriter::Create(out_path + ".tmp");
  if (!writer.ok()) return writer.status();
  ArchiveMergeStats stats;
  CLICKATRON_RETURN_IF_ERROR(MergeIntoArchive(
      merge_base, additions, writer->get(),
      {.progress = progress, .previous_is_file_mapping = true, .skipped = std::move(skipped)}, &stats));
  if (previous_file) {
    const Manifest& m = *spec.previous_manifest;
    // The merge checksums its base as it copies it; a file read as an input
    // is checksummed as it is read (MappedFileLines).
    const uint32_t previous_crc = previous_lines ? previous_lines->crc32() : stats.previous_crc32;
    if (previous_crc != m.crc32 || previous_data.size() != m.bytes) {
      return Status::Corruption(fmt::format(
          "{} does not match its manifest (crc32 {} vs {}, {} vs {} bytes); not building on it",
          previous_file->path(), previous_crc, m.crc32, previous_data.size(), m.bytes));
    }
  }
  CLICKATRON_RETURN_IF_ERROR((*writer)->Finish());
  CLICKATRON_RETURN_IF_ERROR(RenameDurably(out_path + ".tmp", out_path));

  Manifest manifest;
  manifest.generation = spec.generation;
  manifest.shard = spec.shard;
  manifest.shard_count = spec.shard_count;
  (*writer)->Describe(&manifest);
  manifest.last_day = spec.last_day;
  manifest.created = spec.created;
  manifest.late_inputs = spec.late_inputs;
  manifest.format = kArchiveFormat;
  manifest.day_subtotals = true;  // implied by the next, kept for older readers of the manifest
  manifest.day_subtotals_every_day = true;
  manifest.day_uniques_every_day = true;
  manifest.retention = spec.retention;
  CLICKATRON_RETURN_IF_ERROR(WriteManifestAtomically(ManifestPathFor(out_path), manifest));

  if (!spec.backup.empty()) {
    BackupOptions backup;
    backup.source = out_path;
    backup.dest_gz = spec.backup[0] == '/' ? spec.backup : task.Out() + "/" + spec.backup;
    backup.manifest = manifest;
    CLICKATRON_RETURN_IF_ERROR(MakeDirs(DirName(backup.dest_gz)));
    CLICKATRON_RETURN_IF_ERROR(BackupShardFile(backup));
  }
  spdlog::info(
      "generation {} shard {}: {} previous + {} new records ({} combined, {} day subtotals, {} day uniques, {} "
      "spans) -> {} records ({} bytes), backup {}",
      spec.generation, spec.shard, stats.previous_lines, merged.lines_out(), stats.combined,
      day_records.subtotal_days_written(), day_records.unique_days_written(), day_records.spans_written(),
      manifest.records, manifest.bytes, spec.backup.empty() ? std::string("skipped") : spec.backup);
  if (own_progress) own_progress->Finish();
  uint64_t restated_lines = 0, restated_rewritten = 0;
  for (const auto& d : droppers) {
    restated_lines += d->lines_dropped();
    restated_rewritten += d->lines_rewritten();
  }
  if (!rules.empty()) {
    spdlog::info("generation {} shard {}: restatements and deletions took out {} records and hours from {} totals",
                 spec.generation,
                 spec.shard, restated_lines, restated_rewritten);
  }
  nlohmann::json retention_counts = nlohmann::json::object();
  std::map<std::string, RetentionSource::Counts> rolled;
  for (const RetentionSource* source : {retention.get(), ranges_rolled.get()}) {
    if (source == nullptr) continue;
    for (const auto& [ns, c] : source->counts()) rolled[ns].Add(c);
  }
  for (const auto& [ns, c] : rolled) {
    spdlog::info("generation {} shard {}: retention of namespace {} ({}): {} hours rolled into days, {} day "
                 "records of rolled days, {} hours dropped",
                 spec.generation, spec.shard, ns, DescribeRetention(*manifest.RetentionOf(ns)), c.hours_rolled,
                 c.anchors_written, c.hours_dropped);
    retention_counts[ns] = {{"hours_rolled", c.hours_rolled},
                            {"rolled_days", c.anchors_written},
                            {"hours_dropped", c.hours_dropped}};
  }
  return nlohmann::json{{"manifest", manifest.ToJson()},
                        {"retention", std::move(retention_counts)},
                        {"restated_lines_dropped", restated_lines},
                        {"restated_totals_rewritten", restated_rewritten},
                        {"previous_lines", stats.previous_lines},
                        {"new_lines", merged.lines_out()},
                        {"combined", stats.combined},
                        {"day_subtotals", day_records.subtotal_days_written()},
                        {"day_uniques", day_records.unique_days_written()},
                        {"spans", day_records.spans_written()}};
}

}  // namespace clickatron::rebuild
