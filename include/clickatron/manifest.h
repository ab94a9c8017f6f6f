// The manifest beside every archive file (docs/protocols.md): written by the rebuild,
// checked by the archive server before it serves a file, read by the API to
// know which days the archive already holds.
//
// On disk: FILE + ".manifest", one JSON object:
//   {"format":2, "generation":7, "shard":0, "shard_count":2,
//    "records":12345, "bytes":678901, "crc32":305419896,
//    "first_key":"c.u|a.c3p0", "last_key":"u|zz", "last_day":"2012-03-25",
//    "created":"2012-03-26T02:10:00Z", "late_inputs":["…"], "day_subtotals":true,
//    "day_subtotals_every_day":true, "day_uniques_every_day":true}
// crc32 is zlib's crc32 of the whole file; records is its line count.
// last_day "" means the file holds no day yet (an empty generation).
// day_subtotals_every_day (absent: false) says every UTC day with one or more
// subtotal hours of a key also has its day subtotal record (record.h), so the
// next rebuild may add to them and a reader may take a day record the file
// lacks for a day without hours of that key; the rebuild writes it, a file
// brought in by hand lacks it. day_subtotals (absent: false) is the older,
// weaker promise: every UTC day with two or more hours has its record (files
// of that rule still exist; a file of the newer one keeps it too).
// day_uniques_every_day (absent: false) makes the same promise for unique
// records: every UTC day with one or more unique hours of a key (total, or a
// subtotal namespace's) has its day unique record.
// format 2 (the rebuild writes it) adds span records: every aligned span of
// 2^k days (k = 1 .. kMaxSpanLevel, ymdh.h) with one or more subtotal or
// unique hours of a key has its record (docs/protocols.md, "Day and span
// records"), and the day records are whole as above. A generation merged
// with a file of format 2 that also says both *_every_day flags adds to its
// day and span records (SpanRecordsWhole); with a file of
// format 1 (older, or brought in with `clickatron manifest`) it reads the
// file in full once and makes them all. Binaries older than format 2 refuse
// its manifests: upgrade every daemon before the first rebuild that writes it.
//
// "retention" (absent: none) lists, per namespace, the boundaries of its
// rolled-up and dropped days (retention.h): readers refuse hourly answers
// before them. A binary that does not know the field would answer hours
// that are whole days: upgrade every API node before the first policy.
//
// Thread-safety: plain values and functions; files are written atomically
// (temp file, fsync, rename), so a reader never sees half a manifest.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "clickatron/retention.h"
#include "clickatron/status.h"

namespace clickatron {

// The format the rebuild writes and replicas serve. Manifests of format 1
// still parse: the rebuild converts such a previous generation.
inline constexpr int kArchiveFormat = 2;

// A Manifest made in code describes what the rebuild writes (format 2, its
// promises whole); one read from disk says what its file says (absent
// fields: false, an older file).
struct Manifest {
  int format = kArchiveFormat;
  uint64_t generation = 0;
  int shard = 0;
  int shard_count = 1;
  uint64_t records = 0;
  uint64_t bytes = 0;
  uint32_t crc32 = 0;
  std::string first_key;
  std::string last_key;
  std::string last_day;  // YYYY-MM-DD, "" when none
  std::string created;
  std::vector<std::string> late_inputs;  // late-data segments folded into this generation
  bool day_subtotals = true;              // a record for every day of 2+ hours (see above)
  bool day_subtotals_every_day = true;    // a record for every day of 1+ hours (see above)
  bool day_uniques_every_day = true;      // the same for unique records (see above)
  // Every day and span record there is to have (format 2): a generation
  // merged with this file adds to them; otherwise it makes them again from
  // the hours.
  bool SpanRecordsWhole() const { return format >= 2 && day_subtotals_every_day && day_uniques_every_day; }
  // What retention policies did to the namespaces that have rolled-up or
  // dropped days (retention.h); every shard's manifest of a generation says
  // the same. Absent: none.
  std::vector<AppliedRetention> retention;
  const AppliedRetention* RetentionOf(std::string_view ns) const;

  nlohmann::json ToJson() const;
  static Result<Manifest> FromJson(const nlohmann::json& json);
};

std::string ManifestPathFor(const std::string& archive_file);
Result<Manifest> ReadManifest(const std::string& manifest_path);
Status WriteManifestAtomically(const std::string& manifest_path, const Manifest& manifest);

// Scans `data` (a whole archive file) and fills records, bytes, crc32,
// first_key and last_key.
void DescribeArchiveData(std::string_view data, Manifest* manifest);

}  // namespace clickatron
