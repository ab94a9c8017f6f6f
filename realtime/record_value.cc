#include "record_value.h"

#include <fmt/format.h>

#include <iterator>

#include "clickatron/key_codec.h"
#include "clickatron/record.h"
#include "counter_merge.h"
#include "shard_store.h"

namespace clickatron::realtime {

RecordValue::RecordValue(std::string_view key)
    : key_(key), kind_(IsLookupKey(key) ? Kind::kLookup : IsUniqueKey(key) ? Kind::kUnique : Kind::kCounter) {}

Status RecordValue::AddStored(std::string_view raw) {
  switch (kind_) {
    case Kind::kLookup:
      AddLookup(raw);
      return Status::Ok();
    case Kind::kUnique: {
      if (!found_) {
        if (Status st = UniqueSketch::AppendTextOfBinary(raw, &pending_text_); !st.ok()) return BadSketch(st);
        text_pending_ = true;
        found_ = true;
        return Status::Ok();
      }
      return UniteSecondPart(UniqueSketch::FromBinary(raw));
    }
    case Kind::kCounter: {
      int64_t count = 0;
      if (!DecodeCounter(raw, &count)) {
        return Status::Corruption(fmt::format("counter {} holds {} bytes, not {}", QuoteForMessage(key_), raw.size(),
                                              kCounterBytes));
      }
      return AddCounter(count);
    }
  }
  return Status::Internal("unknown record kind");
}

Status RecordValue::AddStoredText(std::string_view text) {
  if (kind_ != Kind::kUnique) {
    return Status::Corruption(fmt::format("record {} is not a unique record, yet holds sketch text", QuoteForMessage(key_)));
  }
  if (!found_) {
    // Not copied: a day of a busy key's sketches is most of what a scan
    // moves, and `text` outlives this value (its cursor's records do).
    pending_view_ = text;
    text_pending_ = true;
    found_ = true;
    return Status::Ok();
  }
  return UniteSecondPart(UniqueSketch::FromText(text));
}

Status RecordValue::UniteSecondPart(const Result<UniqueSketch>& sketch) {
  CLICKATRON_RETURN_IF_ERROR(DecodePendingText());
  if (!sketch.ok()) return BadSketch(sketch.status());
  visitors_.Merge(*sketch);
  return Status::Ok();
}

Status RecordValue::AddCounter(int64_t delta) {
  // The key is quoted only for an error: this runs for every record a read
  // or an export passes.
  if (Status st = AddCount(&sum_, delta); !st.ok()) return st.WithContext(QuoteForMessage(key_));
  found_ = true;
  return Status::Ok();
}

Status RecordValue::AddSketch(const UniqueSketch& sketch) {
  CLICKATRON_RETURN_IF_ERROR(DecodePendingText());
  visitors_.Merge(sketch);
  found_ = true;
  return Status::Ok();
}

Status RecordValue::DecodePendingText() {
  if (!text_pending_) return Status::Ok();
  text_pending_ = false;
  Result<UniqueSketch> sketch = UniqueSketch::FromText(PendingText());
  if (!sketch.ok()) return BadSketch(sketch.status());
  visitors_.Merge(*sketch);
  return Status::Ok();
}

Status RecordValue::BadSketch(const Status& why) const {
  return Status::Corruption(fmt::format("sketch {}: {}", QuoteForMessage(key_), why.message()));
}

void RecordValue::AddLookup(std::string_view value) {
  if (found_) return;
  lookup_.assign(value);
  found_ = true;
}

void RecordValue::AppendText(std::string* out) const {
  switch (kind_) {
    case Kind::kLookup:
      out->append(lookup_);
      return;
    case Kind::kUnique:
      if (text_pending_) {
        out->append(PendingText());
      } else {
        visitors_.AppendText(out);
      }
      return;
    case Kind::kCounter:
      fmt::format_to(std::back_inserter(*out), "{}", sum_);
      return;
  }
}

}  // namespace clickatron::realtime
