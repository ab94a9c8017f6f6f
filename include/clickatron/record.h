// The record types in their realtime and archive formats (docs/protocols.md).
//
// Realtime (one hour, one value; a RocksDB key and an int64 counter):
//   total     ns|tkey.YMDH,value            u|jehiah.c41l,5
//   subtotal  sns.ns|tkey.skey.YMDH,value   c.u|jehiah.US.c41l,4
//   lookup    l|HASH,full value             (a put, not a counter)
//   unique total     ~ns|tkey.YMDH,SKETCH          ~u|jehiah.c41l,eAQ…
//   unique subtotal  ~sns.ns|tkey.skey.YMDH,SKETCH ~c.u|jehiah.US.c41l,eAQ…
// Archive (multi-column; one line per key):
//   total     ns|tkey,YMDH:v YMDH:v …       u|jehiah,c413:2 c41l:5   (columns by YMDH)
//   subtotal  sns.ns|tkey.YMDH,skey:v …     c.u|jehiah.c41l,JP:1 US:4 (columns by skey)
//   lookup    l|HASH,full value
//   day subtotal  sns.ns|tkey.DAY,skey:v …  c.u|jehiah.c41,JP:3 US:9 (a UTC day's
//             subtotal hours summed: DAY is a day code, ymdh.h; written by
//             the rebuild only, beside its hours, so a query over whole days
//             reads one record per day instead of 24)
//   unique total     ~ns|tkey.YMDH,SKETCH            (one line per key-hour)
//   unique subtotal  ~sns.ns|tkey.YMDH,skey:SKETCH …  (columns by skey)
//   day unique total     ~ns|tkey.DAY,SKETCH          (a UTC day's unique
//   day unique subtotal  ~sns.ns|tkey.DAY,skey:SKETCH …  hours united; like
//             day subtotals, rebuild-written and archive only)
// A unique record is the counter record's key behind a '~' (a byte no
// namespace holds, sorting after them all), valued by the text form of a
// UniqueSketch (unique_sketch.h). Unlike a total, a unique total stays one
// line per hour in the archive: a busy hour's sketch is 16 KiB of text, and
// one line holding years of them could not be read for a 30-day query.
//
// tkey/skey here are always the *stored* forms (hashed when needed), so they
// never contain '.', '|', ',', ':' or space. A line's key ends at its first
// comma; a lookup's value may itself contain commas.
//
// Sort order: files are sorted as whole lines, bytewise (LC_ALL=C sort). For
// distinct keys that is the order of key+"," (CompareArchiveKeys), which is
// what binary search and merges use. Realtime keys never prefix one another,
// so RocksDB's bytewise key order equals whole-line order for them.
//
// Thread-safety: pure functions of their arguments; any thread may call them.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "clickatron/status.h"
#include "clickatron/unique_sketch.h"

namespace clickatron {

// The day types are archive only (docs/protocols.md, "Day and span
// records"): the hours of one key over a span of whole UTC days (one day, or
// 2^k aligned days: ymdh.h's DaySpan) summed (subtotals) or united (uniques)
// into one record keyed by the span's code. A day record is the span of one
// day.
enum class RecordType {
  kTotal,
  kSubtotal,
  kLookup,
  kUniqueTotal,
  kUniqueSubtotal,
  kDaySubtotal,
  kDayUniqueTotal,
  kDayUniqueSubtotal,
};
inline constexpr char kUniqueMark = '~';
inline bool IsUniqueType(RecordType type) {
  return type == RecordType::kUniqueTotal || type == RecordType::kUniqueSubtotal ||
         type == RecordType::kDayUniqueTotal || type == RecordType::kDayUniqueSubtotal;
}
// A day record, and the hour type whose hours it holds.
inline bool IsDayType(RecordType type) {
  return type == RecordType::kDaySubtotal || type == RecordType::kDayUniqueTotal ||
         type == RecordType::kDayUniqueSubtotal;
}
inline RecordType DayTypeOf(RecordType hour_type) {
  switch (hour_type) {
    case RecordType::kSubtotal: return RecordType::kDaySubtotal;
    case RecordType::kUniqueTotal: return RecordType::kDayUniqueTotal;
    case RecordType::kUniqueSubtotal: return RecordType::kDayUniqueSubtotal;
    default: return hour_type;  // totals and lookups have no day records
  }
}
// Records whose value is one sketch (no columns).
inline bool IsSketchValueType(RecordType type) {
  return type == RecordType::kUniqueTotal || type == RecordType::kDayUniqueTotal;
}
// A unique record's key, in either format (no other check).
inline bool IsUniqueKey(std::string_view key) { return !key.empty() && key[0] == kUniqueMark; }
// A unique hour record's key up to its day code (the key without its hour
// character: an hour code is its day's code and one character); empty when
// the key is not a unique record ending in an hour code. Two keys with the
// same (non-empty) one are one record's hours of one UTC day.
std::string_view UniqueKeyOfDay(std::string_view key);

// Whether a realtime counter or unique key ("ns|tkey.YMDH",
// "sns.ns|tkey.skey.YMDH", "~…") is a record of namespace `ns` (its totals,
// every subtotal namespace of it, its uniques), of key `tkey` (stored form;
// "" = every key), at an hour in [from_unix, to_unix): what a deletion
// covers. Lookup keys never are. Used by realtime tombstones and the
// rebuild's late data filter alike.
bool RealtimeKeyCovered(std::string_view key, std::string_view ns, std::string_view tkey, int64_t from_unix,
                        int64_t to_unix);

// The parts of a realtime key.
struct RealtimeKey {
  RecordType type = RecordType::kTotal;
  std::string sns;   // subtotals only
  std::string ns;    // all but lookups
  std::string tkey;  // all but lookups (stored form); lookup: the HASH
  std::string skey;  // subtotals only (stored form); in an archive key, empty
  std::string ymdh;  // all but lookups (and archive totals); a day record's day code
};

std::string FormatRealtimeKey(const RealtimeKey& key);
// Parses and validates every part (namespaces, YMDH, no reserved characters).
Result<RealtimeKey> ParseRealtimeKey(std::string_view key);

// The same parts as views into the key: for a shard's batches, which check
// every line and keep only its type and hour (copying five strings a line
// was a tenth of a shard's CPU under keys never seen before).
struct RealtimeKeyView {
  RecordType type = RecordType::kTotal;
  std::string_view sns, ns, tkey, skey, ymdh;
  int64_t hour_start = 0;  // ymdh's hour as unix seconds (checked by decoding it); 0 for keys without one
};

// "key,value" with value a decimal int64 (total/subtotal), the full value
// (lookup) or a sketch's text (uniques; decoded once, here).
struct RealtimeLine {
  RealtimeKey key;
  int64_t count = 0;        // total, subtotal
  std::string lookup_value; // lookup
  UniqueSketch sketch;      // unique total, unique subtotal
};
Result<RealtimeLine> ParseRealtimeLine(std::string_view line);
// A line checked as ParseRealtimeLine checks it, with the same errors, but
// for a unique line's sketch, which is left to the caller: `value` is the
// text after the comma (a lookup's value, a sketch's text), `count` a
// counter's value.
struct RealtimeLineView {
  RealtimeKeyView key;
  std::string_view value;
  int64_t count = 0;
};
Status ParseRealtimeLineView(std::string_view line, RealtimeLineView* out);
std::string FormatRealtimeLine(const RealtimeLine& line);

// One column of an archive value: "YMDH:v" (total), "skey:v" (subtotal) or
// "skey:SKETCH" (unique subtotal).
struct ArchiveColumn {
  std::string name;
  int64_t count = 0;
  UniqueSketch sketch{};  // unique subtotal
  friend bool operator==(const ArchiveColumn&, const ArchiveColumn&) = default;
};

struct ArchiveRecord {
  RecordType type = RecordType::kTotal;
  std::string key;                    // everything before the first comma
  std::vector<ArchiveColumn> columns; // total, subtotal, unique subtotal: sorted by name, names unique
  std::string lookup_value;           // lookup
  UniqueSketch sketch;                // unique total
};
// Parses and validates: key shape by type, columns well formed, sorted and unique.
Result<ArchiveRecord> ParseArchiveLine(std::string_view line);

// A counter's count on one line of a file loaded, restated or adopted:
// clicks are counted up, so zero or less is no count (BAD_COUNT), and at
// most kMaxLineCount, so that a year of a key's hours (8,784 lines at the
// most) cannot overflow the sums a query adds up.
inline constexpr int64_t kMaxLineCount = 1'000'000'000'000'000;
Status CheckLineCount(int64_t count);
// CheckLineCount of every count an archive record carries (totals,
// subtotals and day subtotals; the other types carry none).
Status CheckArchiveCounts(const ArchiveRecord& record);
std::string FormatArchiveLine(const ArchiveRecord& record);

// The parts of an archive key, validated like ParseRealtimeKey: a total has no
// ymdh, and skey is always empty (in the archive it is a column name).
// A unique total's archive key is its realtime key (one line per hour).
Result<RealtimeKey> ParseArchiveKey(std::string_view key);

// A counter value: decimal int64, optional leading '-', no '+', no spaces, no
// overflow. Negative values are valid stored data (decrements).
Result<int64_t> ParseCount(std::string_view text);
// *sum += delta, or OUT_OF_RANGE (sum untouched) if the result overflows int64.
Status AddCount(int64_t* sum, int64_t delta);

// Record type from a key's namespace part (and, for an archive subtotal or
// unique, the shape of its code: a day code makes it a day record), without
// full validation.
RecordType RecordTypeOfKey(std::string_view key);
// key+"," order (see above). <0, 0, >0.
int CompareArchiveKeys(std::string_view a, std::string_view b);
// The key of a line (up to the first comma; the whole line if none).
std::string_view LineKey(std::string_view line);

// The parts of an archive key as views into it, found by its separators
// only (no validation, no allocation): for the rebuild's filters, which look
// at every line of a file. A lookup has only `type`; a total has no `code`;
// every other record's `code` is its hour, day or span code.
struct ArchiveKeyView {
  RecordType type = RecordType::kTotal;
  std::string_view ns;
  std::string_view tkey;
  std::string_view ns_tkey;  // "ns|tkey", one run of the key's bytes (its shard key)
  std::string_view code;
};
ArchiveKeyView SplitArchiveKey(std::string_view key);

// Calls fn(name, value_text) for each "name:value" column of an archive
// line's value (what follows its first comma), in order, and stops at the
// first Status fn returns that is not OK. No checks: for lines already
// validated (api/query/merge/read_records.h's ForEachColumn checks a peer's).
template <typename Fn>
Status ForEachValueColumn(std::string_view value, Fn&& fn) {
  while (!value.empty()) {
    const size_t space = value.find(' ');
    const std::string_view column = value.substr(0, space);
    value = space == std::string_view::npos ? std::string_view{} : value.substr(space + 1);
    const size_t colon = column.rfind(':');
    CLICKATRON_RETURN_IF_ERROR(fn(column.substr(0, colon), colon == std::string_view::npos
                                                               ? std::string_view{}
                                                               : column.substr(colon + 1)));
  }
  return Status::Ok();
}

// Key builders, from stored parts.
std::string TotalArchiveKey(std::string_view ns, std::string_view tkey);                 // ns|tkey
std::string SubtotalArchiveKey(std::string_view sns, std::string_view ns,
                               std::string_view tkey, std::string_view ymdh);            // sns.ns|tkey.YMDH
std::string LookupKey(std::string_view hash);                                            // l|HASH
std::string DaySubtotalArchiveKey(std::string_view sns, std::string_view ns,
                                  std::string_view tkey, std::string_view day_code);     // sns.ns|tkey.DAY
std::string UniqueTotalKey(std::string_view ns, std::string_view tkey, std::string_view ymdh);  // ~ns|tkey.YMDH
std::string UniqueSubtotalArchiveKey(std::string_view sns, std::string_view ns, std::string_view tkey,
                                     std::string_view ymdh);                                // ~sns.ns|tkey.YMDH

}  // namespace clickatron
