// Combining archive lines with equal keys, on the lines' own bytes.
//
// The rules are the core's (CombineArchiveRecords in convert.h): totals union
// their hour columns and sum equal hours, subtotals union their skeys and sum
// equal ones, lookups with identical values are kept once and different
// values are CORRUPTION; a sum that overflows int64 is OUT_OF_RANGE; unique
// records unite their sketches (through the core, parsed: no text fast path).
// Every line inside the rebuild was validated when it entered (converted by
// the core rules, or read back from a file the rebuild wrote and checksummed),
// so this works on text without re-parsing: merging two sorted column lists
// is a walk over both, and the usual case, columns that all come after the
// existing ones (a new day's hours), is an append.
// tests/rebuild/sortmerge/line_combine_test.cc checks it against CombineArchiveRecords.
#pragma once

#include <string>
#include <string_view>

#include "clickatron/status.h"

namespace clickatron::rebuild {

// REQUIRES: both are valid archive lines of one record. For counter records
// (subtotals, day and span records) only `from`'s value is read, so it may
// be a day's record added into its span's (rebuild/day_records.cc).
Status CombineArchiveLineInto(std::string* into, std::string_view from);

}  // namespace clickatron::rebuild
