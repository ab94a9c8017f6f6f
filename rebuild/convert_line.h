// Realtime line -> one-column archive line, fast.
//
// The rebuild converts tens of millions of lines a night; the core's
// RealtimeToArchiveLine validates through allocating parsers (~600 ns a line).
// ConvertRealtimeLine recognises the common shape of a line (ASCII key parts,
// a real YMDH, a decimal count) with no allocation and writes the same bytes
// RealtimeToArchiveLine would; anything else (lookups, hashes with unusual
// bytes, non-ASCII, any error) goes to RealtimeToArchiveLine itself, so the
// accepted set, the output and the error messages are the core's, with one
// rule more for the rebuild's inputs: a counter's count must be positive and
// at most 10^15 (BAD_COUNT): clicks are counted up (a bulk-loaded -7 would
// read back as -7 clicks), and a key-hour past 10^15 is no real count but
// would overflow the sums of a query.
// tests/rebuild/convert_line_test.cc checks the two agree line for line.
#pragma once

#include <string>
#include <string_view>

#include "clickatron/status.h"

namespace clickatron::rebuild {

// Appends the archive line for `realtime_line` to *out (no newline).
// On error *out is unchanged and the Status is the core's.
Status ConvertRealtimeLine(std::string_view realtime_line, std::string* out);

// Same for a line already in archive format: validated by ParseArchiveLine
// (and counts as above) and written in canonical form (FormatArchiveLine).
Status NormalizeArchiveLine(std::string_view archive_line, std::string* out);

}  // namespace clickatron::rebuild
