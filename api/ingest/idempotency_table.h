// The Idempotency-Key values an API node remembers (docs/protocols.md,
// "Retries and idempotency keys"), after the IETF draft "The
// Idempotency-Key HTTP Header Field".
//
// A key is in one of two states:
//   in flight  its request was taken into the write window and its commit
//              has not reported yet: the same key again is 409;
//   done       its commit is durable in the oplog: the same key with the
//              same request digest is answered again from here (nothing is
//              counted), with another digest it is 422.
// A request that fails (a bad line, overload, a failed commit) is forgotten:
// nothing of it was taken, so its retry is processed normally.
//
// A done key is kept for `window_seconds` after its commit; past
// `max_keys`, the oldest are forgotten early (counted: a retry of one of
// those would be counted again). The durable copy of each done key is the
// commit frame of the oplog that made its increments durable (oplog.h);
// Restore() refills the table from it at start.
//
// Thread-safety: not thread-safe; the write path's loop owns it.
#pragma once

#include <cstddef>
#include <cstdint>
#include <deque>
#include <string>
#include <string_view>
#include <unordered_map>

#include "clickatron/text_hash.h"

namespace clickatron::api {

// 1 to 255 characters of printable ASCII (0x20-0x7e), as the draft's key is
// an sf-string.
bool ValidIdempotencyKey(std::string_view key);

class IdempotencyTable {
 public:
  struct Options {
    int64_t window_seconds = 24 * 3600;
    size_t max_keys = 1'000'000;
  };
  enum class Verdict {
    kNew,       // not known: now in flight; Complete() or Abort() must follow
    kReplay,    // done with this digest: answer `increments` again
    kReused,    // done, or in flight, with another digest (422)
    kInFlight,  // in flight with this digest (409)
  };
  struct Lookup {
    Verdict verdict = Verdict::kNew;
    uint64_t increments = 0;  // kReplay: what the first request was answered
  };
  struct Counters {
    uint64_t replays = 0;
    uint64_t reused = 0;
    uint64_t in_flight_refusals = 0;
    uint64_t expired = 0;
    uint64_t evicted = 0;  // forgotten before the window ended (max_keys)
    uint64_t restored = 0;
  };

  explicit IdempotencyTable(Options options) : options_(options) {}

  Lookup Begin(std::string_view key, std::string_view digest, int64_t now);
  // The key's commit is durable: remembered until `now` + window.
  void Complete(std::string_view key, uint64_t increments, int64_t now);
  // Nothing of the key's request was taken.
  void Abort(std::string_view key);
  // A done key found in the oplog at start (committed at `unix`); ignored
  // when already past the window at `now`.
  void Restore(std::string_view key, std::string_view digest, uint64_t increments, int64_t unix, int64_t now);
  // Forgets done keys past the window, then the oldest past max_keys.
  void Expire(int64_t now);

  size_t size() const { return entries_.size(); }
  size_t in_flight() const { return in_flight_; }
  // Bytes held, as counted here (keys, digests and per-entry overhead).
  size_t bytes() const { return bytes_; }
  const Counters& counters() const { return counters_; }
  const Options& options() const { return options_; }

 private:
  struct Entry {
    std::string digest;
    uint64_t increments = 0;
    bool in_flight = true;
  };
  // What one entry costs besides its key and digest: the map node, the
  // order entry and the key's second copy there.
  static constexpr size_t kEntryOverhead = 96;
  size_t EntryBytes(std::string_view key, const Entry& e) const {
    return 2 * key.size() + e.digest.size() + kEntryOverhead;
  }
  void Forget(std::string_view key);

  Options options_;
  // Looked up by string_view (TextHash is transparent): no copy of the key per request.
  std::unordered_map<std::string, Entry, TextHash, std::equal_to<>> entries_;
  std::deque<std::pair<int64_t, std::string>> done_order_;  // (done_unix, key), oldest first
  size_t in_flight_ = 0;
  size_t bytes_ = 0;
  Counters counters_;
};

}  // namespace clickatron::api
