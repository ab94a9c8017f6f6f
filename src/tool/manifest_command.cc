// `clickatron manifest FILE`: checks an existing sorted archive file (one
// migrated from sortdb, say), converts it to the one archive format replicas
// serve (format 2: its day and span records made from its hours, in place
// of any it had, by the rebuild's own step, rebuild/day_records.h), and
// writes the manifest FILE.manifest that an archive replica needs before it
// serves the file (manifest.h). The converted file replaces FILE atomically
// (written beside it, fsynced, renamed); a file already converted comes out
// the same.
//
// The file is read through a read-only mapping, one pass, and must pass, on
// every line in order (the first fault stops the run and nothing is written):
//  - the replica's order rules (CheckSortedLine, sorted_lines.h: no empty
//    line, a ',' on every line, whole lines strictly increasing in LC_ALL=C
//    order, no key twice): what `[archive] verify_sorted_on_load` refuses;
//  - ParseArchiveLine: a valid archive record. The replica serves any sorted
//    lines, but the API parses what it reads and the rebuild merges the next
//    day into this file trusting every line was validated (rebuild/split.h);
//  - with --shard S --shard-count N: ShardOf(shard key) == S, the function the
//    rebuild partitions archive files with (shard.h, rebuild/split.cc);
// and the file must end with a newline (the rebuild's merge refuses a previous
// generation that does not: rebuild/archive_merge.cc).
//
// last_day is the UTC day of the latest hour code in the file (a total's last
// column, the hour in a subtotal's or unique record's key, a day record's
// day; lookups and span records have none: a span may end after the data it
// holds, whose hours date the file), "" when no record has one. The rebuild itself never reads it from the data:
// a nightly `run --date D` sets max(previous last_day, D) and a `load` keeps
// the previous one (rebuild/generation.cc). For a migrated file the day of its
// last hour plays the role of D: queries take realtime only for later days,
// and `run` refuses days up to it (ALREADY_ARCHIVED).
#include <fmt/format.h>

#include <unistd.h>

#include <chrono>
#include <memory>
#include <string>

#include "clickatron/file_util.h"
#include "clickatron/key_codec.h"
#include "clickatron/manifest.h"
#include "clickatron/record.h"
#include "clickatron/shard.h"
#include "clickatron/sorted_lines.h"
#include "clickatron/ymdh.h"
#include "commands.h"
#include "day_records.h"
#include "sortmerge/line_io.h"

namespace clickatron::tool {
namespace {

// Archive records always end their key at a comma (record.h).
constexpr char kSeparator = ',';

struct ManifestOptions {
  std::string file;
  uint32_t shard = 0;
  uint32_t shard_count = 1;
  uint64_t generation = 1;
  bool force = false;
};

// The hour code a record is dated by ("" for a lookup).
Result<std::string> LatestHourOf(const ArchiveRecord& record) {
  switch (record.type) {
    case RecordType::kLookup:
      return std::string();
    case RecordType::kTotal:
      // Columns are sorted by name (ParseArchiveLine checks it), and YMDH
      // order is time order: the last column is the latest hour.
      return record.columns.back().name;
    case RecordType::kDaySubtotal:
    case RecordType::kDayUniqueTotal:
    case RecordType::kDayUniqueSubtotal:
      // Day and span records are made again from the hours (the conversion
      // below drops those in the file): the hours date the file, not them.
      return std::string();
    case RecordType::kSubtotal:
    case RecordType::kUniqueTotal:
    case RecordType::kUniqueSubtotal: {
      Result<RealtimeKey> key = ParseArchiveKey(record.key);
      if (!key.ok()) return key.status();
      return key->ymdh;
    }
  }
  return std::string();
}

// Checks a line that passed the order check: a valid archive record of
// archive shard options.shard. Raises *latest_hour to the record's hour.
Status CheckRecord(std::string_view line, const ManifestOptions& options, std::string* latest_hour) {
  Result<ArchiveRecord> record = ParseArchiveLine(line);
  if (!record.ok()) return record.status();
  // The counts a load of the file would take (clickatron-rebuild load
  // --format archive): the replica would serve any.
  CLICKATRON_RETURN_IF_ERROR(CheckArchiveCounts(*record));
  Result<std::string> hour = LatestHourOf(*record);
  if (!hour.ok()) return hour.status();
  // YMDH codes compare bytewise in time order (ymdh.h).
  if (*hour > *latest_hour) *latest_hour = *hour;
  Result<std::string_view> shard_key = ShardKeyOfArchiveKey(record->key);
  if (!shard_key.ok()) return shard_key.status();
  if (const uint32_t shard = ShardOf(*shard_key, options.shard_count); shard != options.shard) {
    return Status::InvalidArgument(
        fmt::format("key {} belongs to archive shard {} of {} (crc32 of {} % {}), not to shard {}",
                    QuoteForMessage(record->key), shard, options.shard_count, QuoteForMessage(*shard_key),
                    options.shard_count, options.shard),
        "WRONG_SHARD");
  }
  return Status::Ok();
}

Status WriteManifestFor(const ManifestOptions& options) {
  if (options.shard >= options.shard_count) {
    return Status::InvalidArgument(
        fmt::format("--shard {} is not below --shard-count {}", options.shard, options.shard_count));
  }
  if (options.generation == 0) {
    return Status::InvalidArgument("--generation must be at least 1: generation 0 means \"no archive file\"");
  }
  // A generation the next build could not number above (the command line
  // reads -1 as 2^64-1, and saturates a number past it there).
  if (options.generation > uint64_t{1} << 62) {
    return Status::InvalidArgument(fmt::format("--generation {} is over 2^62", options.generation));
  }
  const std::string manifest_path = ManifestPathFor(options.file);
  if (!options.force && FileExists(manifest_path)) {
    return Status::FailedPrecondition(
        fmt::format("{} exists: not replacing a manifest (--force replaces it)", manifest_path), "EXISTS");
  }
  auto mapping = MappedFile::Open(options.file);
  if (!mapping.ok()) return mapping.status();
  const std::string_view data = (*mapping)->data();

  std::string latest_hour;
  uint64_t line_no = 0;
  Status checked = CheckSorted(
      data, kSeparator,
      [&](std::string_view line, uint64_t n) {
        Status st = CheckRecord(line, options, &latest_hour);
        return st.ok() ? st : st.WithContext(fmt::format("line {}", n));
      },
      &line_no);
  if (!checked.ok()) return checked.WithContext(options.file);
  if (!data.empty() && data.back() != '\n') {
    return Status::InvalidArgument(fmt::format(
        "{}: line {} (the last) does not end with a newline; clickatron-rebuild cannot merge a later day into "
        "such a file (add one: echo >> FILE)",
        options.file, line_no));
  }

  // The day and span records, made from the hours; the checks above hold
  // for the converted file too (DayRecordSource keeps the order and drops
  // the records it makes again).
  const std::string converting = options.file + ".converting";
  // A conversion that fails leaves FILE as it was and nothing beside it.
  struct RemoveOnFailure {
    const std::string& path;
    bool done = false;
    ~RemoveOnFailure() {
      if (!done) ::unlink(path.c_str());
    }
  } remove_on_failure{converting};
  {
    rebuild::TextLineSource lines(data, options.file);
    rebuild::DayRecordSource with_records(&lines);
    auto out = rebuild::LineWriter::Create(converting);
    if (!out.ok()) return out.status();
    std::string_view line;
    while (with_records.Next(&line)) CLICKATRON_RETURN_IF_ERROR((*out)->Put(line));
    if (!with_records.status().ok()) return with_records.status().WithContext(options.file);
    CLICKATRON_RETURN_IF_ERROR((*out)->Finish());
  }
  (*mapping).reset();
  CLICKATRON_RETURN_IF_ERROR(RenameDurably(converting, options.file));
  remove_on_failure.done = true;
  auto converted = MappedFile::Open(options.file);
  if (!converted.ok()) return converted.status();

  Manifest manifest;
  manifest.format = kArchiveFormat;
  manifest.day_subtotals = true;
  manifest.day_subtotals_every_day = true;
  manifest.day_uniques_every_day = true;
  manifest.generation = options.generation;
  manifest.shard = static_cast<int>(options.shard);
  manifest.shard_count = static_cast<int>(options.shard_count);
  DescribeArchiveData((*converted)->data(), &manifest);
  if (!latest_hour.empty()) {
    Result<int64_t> hour_start = UnixFromYmdh(latest_hour);
    if (!hour_start.ok()) return hour_start.status();  // ParseArchiveLine checked it already
    manifest.last_day = FormatDate(FloorDiv(*hour_start, kSecondsPerDay));
  }
  manifest.created = FormatIsoTime(
      std::chrono::duration_cast<std::chrono::seconds>(std::chrono::system_clock::now().time_since_epoch()).count());
  CLICKATRON_RETURN_IF_ERROR(WriteManifestAtomically(manifest_path, manifest));
  PrintLine(fmt::format(
      "converted {} to archive format {} and wrote {}: {} records, {} bytes, crc32 {}, first key {}, last key {}, "
      "last_day {}, generation {}, shard {} of {}",
      options.file, manifest.format, manifest_path, manifest.records, manifest.bytes, manifest.crc32, QuoteForMessage(manifest.first_key),
      QuoteForMessage(manifest.last_key), manifest.last_day.empty() ? "\"\" (no dated record)" : manifest.last_day,
      manifest.generation, manifest.shard, manifest.shard_count));
  return Status::Ok();
}

void AddManifestCommand(Command& app) {
  Command sub = app.AddCommand(
      "manifest",
      "Check an existing sorted archive file (e.g. from sortdb), convert it to the served format and write "
      "FILE.manifest for it");
  SetDetails(sub,
             "FILE must be archive lines (key,value), sorted as whole lines in LC_ALL=C order, with no\n"
             "empty line, no key twice, every line a valid archive record, and a final newline. The first\n"
             "fault is reported with its line number and nothing is written. Then FILE is rewritten in\n"
             "place with its day and span records (sums of its hours; format 2, the only one replicas\n"
             "serve). With --shard/--shard-count,\n"
             "every key must belong to that archive shard (crc32(ns|tkey) % N). last_day is the day of the\n"
             "latest hour code in the file. --generation: 1 (the default) for a new cluster, whose next\n"
             "nightly run then builds 2; the same G for every shard of one cluster. Examples:\n"
             "  clickatron manifest var/archive/shard-0.csv\n"
             "  clickatron manifest --shard 1 --shard-count 2 var/archive/shard-1.csv");
  auto options = std::make_shared<ManifestOptions>();
  sub.Option("FILE", options->file, "the sorted archive file").Required();
  CommandOption shard =
      sub.Option("--shard", options->shard, "the archive shard FILE is for (default 0)").NonNegative();
  CommandOption count =
      sub.Option("--shard-count", options->shard_count, "the cluster's archive_shards (default 1)").Range(1u, 1u << 30);
  shard.Needs(count);
  count.Needs(shard);
  sub.Option("--generation", options->generation,
             "the manifest's generation (default 1: 0 means \"no file\" to replicas and API nodes)")
      .NonNegative();
  sub.Flag("--force", options->force, "replace an existing FILE.manifest");
  SetAction(sub, [options] { return WriteManifestFor(*options); });
}

const bool kManifestRegistered = RegisterCommand(65, AddManifestCommand);

}  // namespace
}  // namespace clickatron::tool
