// The columns of a kept subtotal or unique record, decoded once and kept with
// the answer in the API node's archive cache (archive_reply_cache.h), so that
// later queries of the key skip its text. Why: a 365-day breakdown of a busy
// key reads 365 day records, and a unique record's sketches cost far more to
// decode (base64, then varints or packed registers) than to merge.
//
// Decoded only for answers read from the cache: an answer asked once is read
// from its text, as before, without the copies this form takes.
//
// Thread-safety: a value type; a kept one is shared immutable (const).
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "clickatron/status.h"
#include "clickatron/unique_sketch.h"
#include "query/merge/rollup.h"
#include "query/merge/unique_records.h"

namespace clickatron::api {

struct DecodedColumns {
  std::vector<std::pair<std::string, int64_t>> counts;  // a subtotal record: (skey, count)
  // A unique record: (skey, sketch); one column keyed "" for a total.
  std::vector<std::pair<std::string, std::shared_ptr<const UniqueSketch>>> sketches;
  // Heap held, for the cache's budget.
  size_t Bytes() const;
};

// An archive (day) subtotal value "skey:count …", checked as
// AddArchiveSubtotalColumns checks it.
Result<DecodedColumns> DecodeSubtotalRecord(std::string_view value);
// An archive unique subtotal value "skey:SKETCH …", or (`total`) a unique
// total value "SKETCH"; a /get answer's trailing newline allowed.
Result<DecodedColumns> DecodeUniqueRecord(std::string_view value, bool total);

// What AddArchiveSubtotalColumns and AddArchiveUnique* add for the text.
void AddDecodedSubtotals(const DecodedColumns& columns, int64_t hour, HourlyBreakdown* out);
// Every column, or only the one named `only_key` when it is not empty.
void AddDecodedSketches(const DecodedColumns& columns, int64_t hour, std::string_view only_key, HourlySketches* out);

}  // namespace clickatron::api
