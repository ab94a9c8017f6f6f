// Opening one generation of the archive file and deciding whether it may be
// served: the checks a replica makes before a swap.
//
// Checks, in order:
//  - no file at the path: an empty SortedFile (docs/protocols.md; a new cluster has
//    no archive yet); the caller decides whether that may replace a file;
//  - FILE.manifest must exist and parse: a file that cannot be checked is
//    refused;
//  - size, line count, crc32 of the whole file, first and last key must equal
//    the manifest's. This is one sequential pass over the file (zlib crc32 and
//    a memchr line count, about 1 s per GB from page cache); it also pulls the
//    file into the page cache, which random reads want anyway;
//  - with verify_sorted: the full order check (CheckSorted), one more pass.
// Then madvise / mlock / warmup as configured.
//
// Runs on the reload thread: nothing here touches the event loop.
#pragma once

#include <string>

#include "clickatron/config.h"
#include "clickatron/status.h"
#include "sorted_file.h"

namespace clickatron::archive {

struct LoadOptions {
  std::string path;             // the member's file
  char separator = ',';         // archive.field_separator
  std::string madvise = "random";
  bool mlock = false;
  bool warmup = false;
  bool verify_sorted = false;   // archive.verify_sorted_on_load
  // The name the file is served under when it is checked under another (a
  // fetched generation is checked before it is renamed into place); "" = path.
  std::string served_path;
  // Under the cluster clock "system": a manifest whose last_day is today or
  // later (UTC, by this host's clock) is refused (LAST_DAY_AHEAD). No
  // nightly run writes one, and a replica serving it would hide the days
  // realtime still holds (a damaged manifest of a version without
  // manifest_crc32, or one edited by hand). Off for a manual clock, whose
  // tests replay any days.
  bool refuse_last_day_from_today = false;

  static LoadOptions From(const MemberConfig& member, const ArchiveConfig& archive);
};

// The reason of a file whose bytes do not match its manifest (its size,
// line count, crc32 or first and last keys), as opposed to a manifest that
// is itself refused (MANIFEST_DAMAGED, LAST_DAY_AHEAD).
inline constexpr const char* kFileMismatch = "FILE_MISMATCH";

// The file now at options.path, checked; or why it may not be served
// (CORRUPTION for a file that does not match its manifest, NOT_FOUND for a
// missing manifest, IO_ERROR when the OS refused).
Result<SortedFilePtr> LoadSortedFile(const LoadOptions& options);

}  // namespace clickatron::archive
