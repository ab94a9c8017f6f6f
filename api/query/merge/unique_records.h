// Decoding unique records (sketches) from what the archive and realtime
// daemons answer, and rolling them up into query units. Pure functions,
// thread-safe.
//
// Which source owns which day is as for counters (read_records.h): realtime
// hours of days the archive has taken in are skipped. (A union would also
// be right if they were not, as a visitor counted twice is still one
// visitor; skipping them saves the decoding.)
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "clickatron/status.h"
#include "clickatron/unique_sketch.h"
#include "query/merge/read_records.h"
#include "query/merge/rollup.h"

namespace clickatron::api {

// Sketches as they come: (hour, subtotal key or "", sketch), any order, an
// hour (and key) possibly more than once: the rollup unites them.
// A sketch is shared, not copied: a kept record's decoded sketches
// (decoded_columns.h) are read by every query of its key.
struct HourSketch {
  int64_t hour = 0;
  std::string key;  // the stored skey of a subtotal; "" for a total
  std::shared_ptr<const UniqueSketch> sketch;
};
using HourlySketches = std::vector<HourSketch>;

// Calls fn(skey, sketch) for each sketch of an archive unique value: a
// unique total value "SKETCH" (`total`; skey "") or a unique subtotal value
// "skey:SKETCH …" (every column, or only the one named `only_key` when it is
// not empty); a trailing newline allowed. A bad sketch is CORRUPTION.
Status ForEachArchiveSketch(
    std::string_view value, bool total, std::string_view only_key,
    const std::function<Status(std::string_view skey, std::shared_ptr<const UniqueSketch> sketch)>& fn);
// An archive unique total value (a sketch's text; a trailing newline allowed).
Status AddArchiveUniqueTotal(std::string_view value, int64_t hour, HourlySketches* out);
// An archive unique subtotal value "skey:SKETCH …" of `hour`: every column,
// or only the column named `only_key` when it is not empty.
Status AddArchiveUniqueSubtotals(std::string_view value, int64_t hour, std::string_view only_key,
                                 HourlySketches* out);
// Realtime answers to fwmatch of `prefix`, lines "prefix[skey.]YMDH,SKETCH":
// with `keyed_lines` each line names its skey after the prefix
// ("~sns.ns|tkey." for a breakdown); without, the prefix is the record up to
// its hour ("~ns|tkey." or "~sns.ns|tkey.skey."; key ""). Hours archived or
// outside `span` are skipped.
Status AddRealtimeUniqueLines(std::string_view body, std::string_view prefix, bool keyed_lines,
                              const ArchiveLastDay& last_day, const HourSpan& span, HourlySketches* out);

// Distinct visitors per unit (index as in the window), and over the window.
std::vector<uint64_t> UniquesByUnit(const UnitWindow& window, const HourlySketches& hours);
uint64_t UniquesOverWindow(const UnitWindow& window, const HourlySketches& hours);
// Per unit, stored subtotal key -> distinct visitors; and over the window.
using KeyUniques = std::map<std::string, uint64_t>;
std::vector<KeyUniques> KeyUniquesByUnit(const UnitWindow& window, const HourlySketches& hours);
KeyUniques KeyUniquesOverWindow(const UnitWindow& window, const HourlySketches& hours);

}  // namespace clickatron::api
