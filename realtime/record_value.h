// The value of one record gathered from the places that hold a part of it:
// the day's store and the in-memory tables (record_scan.h). The one place
// that knows how parts combine: counters sum, a unique record's sketches
// unite, a lookup takes its first value (callers offer the newest first).
//
// Thread-safety: a value type.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include "clickatron/status.h"
#include "clickatron/unique_sketch.h"

namespace clickatron::realtime {

class RecordValue {
 public:
  // The kind comes from the key ("l|…" lookup, "~…" unique, else counter).
  // REQUIRES: `key` outlives the value (it names the key in errors).
  explicit RecordValue(std::string_view key);

  bool lookup() const { return kind_ == Kind::kLookup; }
  bool unique() const { return kind_ == Kind::kUnique; }
  // Whether any part was added.
  bool found() const { return found_; }

  // A part as a store holds it: an 8-byte counter, a binary sketch, a lookup
  // value. CORRUPTION naming the key when it does not decode, OUT_OF_RANGE
  // when a sum overflows.
  Status AddStored(std::string_view raw);
  // A unique record's stored part already as sketch text (the scan cache
  // keeps them so): sent as it is when it is the only part. REQUIRES: `text`
  // outlives the value (it is not copied). CORRUPTION for
  // a record of another kind, or when a second part must be united with
  // text that does not decode.
  Status AddStoredText(std::string_view text);
  Status AddCounter(int64_t delta);
  // CORRUPTION when a part held as text (above) does not decode.
  Status AddSketch(const UniqueSketch& sketch);
  void AddLookup(std::string_view value);  // ignored once a value is held

  // The value as it follows the comma of a line: decimal, text sketch, lookup.
  void AppendText(std::string* out) const;

 private:
  enum class Kind { kCounter, kUnique, kLookup };
  // Decodes a sketch held only as text (below) into visitors_.
  Status DecodePendingText();
  // A stored part after the first (of another day's store, or the scan
  // cache's beside the store's): the first is decoded, then both united.
  Status UniteSecondPart(const Result<UniqueSketch>& sketch);
  // CORRUPTION naming the key, for a stored sketch that does not decode.
  Status BadSketch(const Status& why) const;

  std::string_view key_;
  Kind kind_;
  bool found_ = false;
  int64_t sum_ = 0;
  UniqueSketch visitors_;
  // A unique record stored in one place only (the common case) is sent as
  // it is stored, turned into text without decoding its sketch; it is
  // decoded only when a second part must be united with it.
  std::string pending_text_;
  std::optional<std::string_view> pending_view_;  // set: the pending text is held there (AddStoredText)
  bool text_pending_ = false;
  std::string_view PendingText() const { return pending_view_ ? *pending_view_ : std::string_view(pending_text_); }
  std::string lookup_;
};

}  // namespace clickatron::realtime
