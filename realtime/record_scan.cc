#include "record_scan.h"

#include <fmt/format.h>

#include <algorithm>
#include <optional>

#include "clickatron/record.h"
#include "clickatron/unique_sketch.h"
#include "counter_merge.h"
#include "key_prefix.h"
#include "mem_table.h"
#include "record_value.h"

namespace clickatron::realtime {
namespace {

// A k-way merge of per-day cursors (k is at most a handful: no heap needed).
// With `unite_days`, a unique record's hours of one UTC day are one line
// (record_scan.h).
class MergedScan : public LineSource {
 public:
  MergedScan(std::vector<std::unique_ptr<StoreCursor>> cursors, uint64_t limit, bool unite_days = false)
      : cursors_(std::move(cursors)), limit_(limit), unite_days_(unite_days) {}

  bool Fill(std::string* out, size_t budget) override {
    const size_t target = out->size() + budget;
    while (out->size() < target) {
      if (done_) return false;
      if (!Step(out)) {
        done_ = true;
        return false;
      }
    }
    return !done_;
  }
  Status status() const override { return status_; }
  uint64_t lines() const override { return lines_; }

 private:
  // The cursor at the smallest key, or nullptr at the end (or on an error:
  // status_ is set).
  StoreCursor* Smallest() {
    StoreCursor* first = nullptr;
    for (auto& c : cursors_) {
      if (!c->Valid()) {
        if (Status st = c->status(); !st.ok()) {
          status_ = st;
          return nullptr;
        }
        continue;
      }
      if (first == nullptr || c->key() < first->key()) first = c.get();
    }
    return first;
  }

  // Adds every cursor's part of record `key` to `value`, moving past it.
  Status AddParts(std::string_view key, RecordValue* value) {
    for (auto& c : cursors_) {
      if (!c->Valid() || c->key() != key) continue;
      if (const UniqueSketch* held = c->sketch()) {
        // The in-memory table's, already decoded.
        CLICKATRON_RETURN_IF_ERROR(value->AddSketch(*held));
      } else {
        CLICKATRON_RETURN_IF_ERROR(c->value_is_text() ? value->AddStoredText(c->raw_value())
                                                      : value->AddStored(c->raw_value()));
      }
      c->Next();
    }
    return Status::Ok();
  }

  // Emits the next line; false at the end or on an error.
  bool Step(std::string* out) {
    if (limit_ != 0 && lines_ >= limit_) return false;
    StoreCursor* first = Smallest();
    if (first == nullptr) return false;
    const std::string key(first->key());
    RecordValue value(key);
    if (Status st = AddParts(key, &value); !st.ok()) return Fail(st);
    // The same record's later hours of the day come next in key order (an
    // hour code is its day's code and one character): united into this line,
    // which keeps the day's first hour as its key.
    const std::string_view day = unite_days_ ? UniqueKeyOfDay(key) : std::string_view();
    while (!day.empty()) {
      StoreCursor* next = Smallest();
      if (next == nullptr) {
        if (!status_.ok()) return false;
        break;
      }
      if (UniqueKeyOfDay(next->key()) != day) break;
      const std::string hour(next->key());
      if (Status st = AddParts(hour, &value); !st.ok()) return Fail(st);
    }
    out->append(key);
    out->push_back(',');
    value.AppendText(out);
    out->push_back('\n');
    ++lines_;
    return true;
  }

  bool Fail(Status st) {
    status_ = std::move(st);
    return false;
  }

  std::vector<std::unique_ptr<StoreCursor>> cursors_;
  uint64_t limit_;
  bool unite_days_;
  uint64_t lines_ = 0;
  bool done_ = false;
  Status status_;
};

// Adds the part of a record that one in-memory table holds for `day`.
Status AddHeld(const MemTable& table, int64_t day, std::string_view key, RecordValue* value) {
  if (value->lookup()) {
    if (const std::pmr::string* held = table.Lookup(day, key)) value->AddLookup(*held);
  } else if (value->unique()) {
    if (const UniqueSketch* held = table.Sketch(day, key)) return value->AddSketch(*held);
  } else if (std::optional<int64_t> delta = table.Counter(day, key)) {
    return value->AddCounter(*delta);
  }
  return Status::Ok();
}

}  // namespace

Result<std::optional<std::string>> ReadRecord(const ReadView& view, const std::vector<int64_t>& days,
                                              std::string_view key) {
  RecordValue value(key);
  // A lookup takes the first value found: the newest table's first.
  const auto done = [&] { return value.lookup() && value.found(); };
  for (int64_t day : days) {
    for (auto t = view.tables.rbegin(); t != view.tables.rend() && !done(); ++t) {
      CLICKATRON_RETURN_IF_ERROR(AddHeld(**t, day, key, &value));
    }
    if (done()) break;
    Result<std::optional<std::string>> raw = view.store->Get(day, key, view.at.get());
    if (!raw.ok()) return raw.status();
    if (raw->has_value()) CLICKATRON_RETURN_IF_ERROR(value.AddStored(**raw));
    if (done()) break;
  }
  if (!value.found()) return std::optional<std::string>();
  std::string text;
  value.AppendText(&text);
  return std::optional<std::string>(std::move(text));
}

namespace {

// Appends the cursors of the view's tables over `day`'s records under
// `prefix` that hold any (each a copy: later Apply() calls do not change it),
// the newest table first: a lookup takes the first cursor's value.
void AddHeldCursors(const ReadView& view, int64_t day, std::string_view prefix,
                    std::vector<std::unique_ptr<StoreCursor>>* cursors) {
  for (auto t = view.tables.rbegin(); t != view.tables.rend(); ++t) {
    if (!(*t)->HasDay(day)) continue;
    std::unique_ptr<StoreCursor> mem = (*t)->NewCursor(day, prefix);
    mem->Seek(prefix);
    if (mem->Valid()) cursors->push_back(std::move(mem));
  }
}

}  // namespace

Result<std::unique_ptr<LineSource>> ScanPrefix(const ReadView& view, const std::vector<int64_t>& days,
                                               std::string_view prefix, uint64_t limit, bool unite_days) {
  CursorOptions options;
  options.upper_bound = PrefixSuccessor(prefix);
  options.at = view.at;
  options.by_key_prefix = ScansByKeyPrefix(prefix);
  std::vector<std::unique_ptr<StoreCursor>> cursors;
  for (int64_t day : days) {
    AddHeldCursors(view, day, prefix, &cursors);
    Result<std::unique_ptr<StoreCursor>> cursor = view.store->NewCursor(day, options);
    if (!cursor.ok()) return cursor.status();
    (*cursor)->Seek(prefix);
    cursors.push_back(std::move(cursor).value());
  }
  return std::unique_ptr<LineSource>(new MergedScan(std::move(cursors), limit, unite_days));
}

namespace {

// One prefix's view of a store cursor that other prefixes share: it ends
// where the keys stop starting with the prefix (the shared cursor has no
// upper bound, since each prefix needs its own). `prefix` outlives it. With
// a `cache`, each record it passes is also added to `*record` (for the scan
// cache), made at the first: most prefixes read nothing from the store.
class PrefixOfSharedCursor : public StoreCursor {
 public:
  PrefixOfSharedCursor(StoreCursor* shared, std::string_view prefix, const ScanCache* cache,
                       std::shared_ptr<CachedRecords>* record)
      : shared_(shared), prefix_(prefix), cache_(cache), record_(record) {}
  void Seek(std::string_view target) override { shared_->Seek(target); }
  bool Valid() const override { return shared_->Valid() && shared_->key().starts_with(prefix_); }
  std::string_view key() const override { return shared_->key(); }
  std::string_view raw_value() const override { return shared_->raw_value(); }
  void Next() override {
    // MergedScan moves past a record only once it has read it, and reads
    // each record once: what passes here is the prefix's records, in order.
    if (cache_ != nullptr && Valid()) {
      if (!*record_) *record_ = cache_->NewRecording();
      (*record_)->Add(key(), raw_value());
    }
    shared_->Next();
  }
  Status status() const override { return shared_->status(); }

 private:
  StoreCursor* shared_;
  std::string_view prefix_;
  const ScanCache* cache_;
  std::shared_ptr<CachedRecords>* record_;
};

// ScanPrefixes' lines: the prefixes' MergedScans one after another, each
// made when the one before has ended (so the shared cursors are only ever
// positioned by one of them).
class PrefixesScan : public LineSource {
 public:
  struct Prefix {
    std::string prefix;
    std::vector<std::unique_ptr<StoreCursor>> held;  // the tables' cursors, made (and copied) up front
    // By day: the records the scan cache kept, or null (the day's store
    // cursor is read).
    std::vector<CachedRecordsPtr> kept;
  };
  // `store`: one cursor per day of `days` (null for a day whose every
  // prefix the cache kept, or that the cache knows has no stored record);
  // `cache`: null, or enabled.
  // `by_key_prefix`: the store cursors seek by key part (CursorOptions):
  // each prefix is sought, as the cursor ends with the part before it.
  PrefixesScan(std::vector<int64_t> days, std::vector<std::unique_ptr<StoreCursor>> store,
               std::vector<Prefix> prefixes, std::shared_ptr<ScanCache> cache, uint64_t store_version,
               bool unite_days, bool by_key_prefix)
      : days_(std::move(days)),
        by_key_prefix_(by_key_prefix),
        store_(std::move(store)),
        positioned_(store_.size(), false),
        prefixes_(std::move(prefixes)),
        cache_(std::move(cache)),
        store_version_(store_version),
        unite_days_(unite_days) {
    recording_.reserve(store_.size());  // never moves: the cursors point into it
  }

  bool Fill(std::string* out, size_t budget) override {
    const size_t start = out->size();
    while (status_.ok()) {
      const size_t grown = out->size() - start;
      if (!current_) {
        if (next_ >= prefixes_.size()) return false;
        // A filled budget returns before the next prefix is sought.
        if (grown >= budget) return true;
        Begin(prefixes_[next_++]);
        continue;
      }
      if (grown >= budget) return true;
      if (current_->Fill(out, budget - grown)) continue;
      finished_lines_ += current_->lines();
      status_ = current_->status();
      current_.reset();
      // The prefix's store records were read to their end: keep them.
      if (status_.ok()) {
        for (Recording& r : recording_) {
          cache_->Put(r.day, prefixes_[next_ - 1].prefix, store_version_, std::move(r.records));
        }
      }
      recording_.clear();
    }
    return false;
  }
  Status status() const override { return status_; }
  uint64_t lines() const override { return finished_lines_ + (current_ ? current_->lines() : 0); }

 private:
  struct Recording {
    int64_t day;
    std::shared_ptr<CachedRecords> records;  // null until a record is read
  };

  void Begin(Prefix& p) {
    std::vector<std::unique_ptr<StoreCursor>> cursors = std::move(p.held);
    for (size_t i = 0; i < store_.size(); ++i) {
      if (p.kept[i]) {
        std::unique_ptr<StoreCursor> kept = NewCachedRecordsCursor(p.kept[i]);
        kept->Seek(p.prefix);
        if (kept->Valid()) cursors.push_back(std::move(kept));
        continue;
      }
      StoreCursor* shared = store_[i].get();
      if (shared == nullptr) continue;  // the day has no stored record
      // The prefixes are sorted and disjoint, and the one before ran to the
      // first key past its own: where a seek to this prefix would land
      // already, unless that key is still before it. (At the end, every
      // later seek ends there too: a cursor reads one snapshot.) Not by key
      // part: that cursor ends (is not valid) where the part before ends,
      // and it passed over the files without that part, which may hold
      // this one's.
      if (by_key_prefix_ || !positioned_[i] || (shared->Valid() && shared->key() < std::string_view(p.prefix))) {
        shared->Seek(p.prefix);
      }
      positioned_[i] = true;
      std::shared_ptr<CachedRecords>* record = nullptr;
      if (cache_) {
        recording_.push_back(Recording{days_[i], nullptr});
        record = &recording_.back().records;
      }
      cursors.push_back(std::make_unique<PrefixOfSharedCursor>(shared, p.prefix, cache_.get(), record));
    }
    // No limit: the recordings are kept as the prefix's whole records only
    // because the scan runs until every cursor has ended.
    current_ = std::make_unique<MergedScan>(std::move(cursors), 0, unite_days_);
  }

  std::vector<int64_t> days_;
  bool by_key_prefix_;
  std::vector<std::unique_ptr<StoreCursor>> store_;  // one per day, shared by the prefixes
  std::vector<bool> positioned_;                     // by day: its cursor has been sought once
  std::vector<Prefix> prefixes_;
  std::shared_ptr<ScanCache> cache_;
  uint64_t store_version_;
  bool unite_days_;
  size_t next_ = 0;
  std::unique_ptr<MergedScan> current_;
  std::vector<Recording> recording_;  // the current prefix's store records, by day read from the store
  uint64_t finished_lines_ = 0;
  Status status_;
};

}  // namespace

Result<std::unique_ptr<LineSource>> ScanPrefixes(const ReadView& view, const std::vector<int64_t>& days,
                                                 std::vector<std::string> prefixes, std::shared_ptr<ScanCache> cache,
                                                 bool unite_days) {
  if (cache && !cache->enabled()) cache.reset();
  std::vector<PrefixesScan::Prefix> scans;
  scans.reserve(prefixes.size());
  std::vector<bool> day_needs_store(days.size(), cache == nullptr);
  // By day, whether the cache knows its store holds no record (true: no
  // prefix looks there; unknown: found out below).
  std::vector<std::optional<bool>> day_empty(days.size());
  for (size_t i = 0; cache && i < days.size(); ++i) day_empty[i] = cache->DayEmpty(days[i], view.store_version);
  for (std::string& prefix : prefixes) {
    PrefixesScan::Prefix p;
    for (size_t i = 0; i < days.size(); ++i) {
      AddHeldCursors(view, days[i], prefix, &p.held);
      if (day_empty[i].value_or(false)) {
        cache->CountEmptyDaySkip();
        p.kept.push_back(nullptr);
        continue;
      }
      CachedRecordsPtr kept = !cache        ? nullptr
                              : unite_days ? cache->FindUnited(days[i], prefix, view.store_version)
                                           : cache->Find(days[i], prefix, view.store_version);
      if (!kept) day_needs_store[i] = true;
      p.kept.push_back(std::move(kept));
    }
    p.prefix = std::move(prefix);
    scans.push_back(std::move(p));
  }
  CursorOptions options;
  options.at = view.at;
  // Every prefix a key part or longer (the read path's always are): the
  // store cursors seek only the files holding each.
  options.by_key_prefix = std::all_of(scans.begin(), scans.end(),
                                      [](const PrefixesScan::Prefix& p) { return ScansByKeyPrefix(p.prefix); });
  std::vector<std::unique_ptr<StoreCursor>> store;
  for (size_t i = 0; i < days.size(); ++i) {
    if (!day_needs_store[i]) {
      store.push_back(nullptr);  // every prefix reads the day from the cache, or it has no stored record
      continue;
    }
    Result<std::unique_ptr<StoreCursor>> cursor = view.store->NewCursor(days[i], options);
    if (!cursor.ok()) return cursor.status();
    if (cache && !day_empty[i]) {
      // Once per day and store version: whether the day has any record (a
      // cursor in key order, with no upper bound, can tell).
      std::unique_ptr<StoreCursor> in_key_order;  // by key part, the shared cursor cannot
      if (options.by_key_prefix) {
        CursorOptions every_key;
        every_key.at = view.at;
        Result<std::unique_ptr<StoreCursor>> made = view.store->NewCursor(days[i], every_key);
        if (!made.ok()) return made.status();
        in_key_order = std::move(made).value();
      }
      StoreCursor* probe = in_key_order ? in_key_order.get() : cursor->get();
      probe->Seek("");
      if (Status st = probe->status(); !st.ok()) return st;
      const bool empty = !probe->Valid();
      cache->NoteDayEmpty(days[i], view.store_version, empty);
      if (empty) {
        store.push_back(nullptr);
        continue;
      }
    }
    store.push_back(std::move(cursor).value());
  }
  return std::unique_ptr<LineSource>(new PrefixesScan(days, std::move(store), std::move(scans), std::move(cache),
                                                      view.store_version, unite_days, options.by_key_prefix));
}

Result<std::unique_ptr<LineSource>> ScanDayForExport(const ShardStore& store, int64_t day) {
  CursorOptions options;
  options.at = store.Snapshot();
  options.bulk_scan = true;
  Result<std::unique_ptr<StoreCursor>> cursor = store.NewCursor(day, options);
  if (!cursor.ok()) return cursor.status();
  (*cursor)->Seek("");
  std::vector<std::unique_ptr<StoreCursor>> cursors;
  cursors.push_back(std::move(cursor).value());
  return std::unique_ptr<LineSource>(new MergedScan(std::move(cursors), 0));
}

std::string PrefixSuccessor(std::string_view prefix) {
  std::string out(prefix);
  while (!out.empty() && static_cast<unsigned char>(out.back()) == 0xff) out.pop_back();
  if (out.empty()) return out;
  out.back() = static_cast<char>(static_cast<unsigned char>(out.back()) + 1);
  return out;
}

}  // namespace clickatron::realtime
