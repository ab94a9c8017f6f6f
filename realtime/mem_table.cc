#include "mem_table.h"

#include <fmt/format.h>

#include <algorithm>

#include "clickatron/record.h"
#include "counter_merge.h"

namespace clickatron::realtime {
namespace {

// A unique record's sketch object on its counter's entry, with malloc's
// header (its hashes or registers are counted by UniqueSketch::MemoryBytes).
constexpr size_t kSketchOverhead = 64;

// One record of a MemCursor: a counter or lookup in its stored encoding, or
// a sketch as it is (a copy costs less than encoding it for a reader that
// would decode it again).
struct CursorEntry {
  std::string key;
  mutable std::string raw;  // a sketch's binary form, made only if asked for
  std::optional<UniqueSketch> sketch;
  bool operator<(const CursorEntry& other) const { return key < other.key; }
};

// Owns the records it returns: a frozen copy of part of a table.
class MemCursor : public StoreCursor {
 public:
  explicit MemCursor(std::vector<CursorEntry> entries) : entries_(std::move(entries)) {}

  void Seek(std::string_view target) override {
    pos_ = static_cast<size_t>(
        std::lower_bound(entries_.begin(), entries_.end(), target,
                         [](const CursorEntry& e, std::string_view t) { return e.key < t; }) -
        entries_.begin());
  }
  bool Valid() const override { return pos_ < entries_.size(); }
  std::string_view key() const override { return entries_[pos_].key; }
  std::string_view raw_value() const override {
    const CursorEntry& e = entries_[pos_];
    if (e.sketch && e.raw.empty()) e.sketch->AppendBinary(&e.raw);
    return e.raw;
  }
  const UniqueSketch* sketch() const override {
    return entries_[pos_].sketch ? &*entries_[pos_].sketch : nullptr;
  }
  void Next() override { ++pos_; }
  Status status() const override { return Status::Ok(); }

 private:
  std::vector<CursorEntry> entries_;
  size_t pos_ = 0;
};

}  // namespace

std::string_view KeyGroup(std::string_view key) {
  const size_t bar = key.find('|');
  if (bar == std::string_view::npos) return key;
  const size_t dot = key.find('.', bar + 1);
  if (dot == std::string_view::npos) return key;
  return key.substr(0, dot + 1);
}

MemTable::Day& MemTable::DayFor(int64_t day) { return days_.try_emplace(day, &arena_).first->second.day(); }

MemTable::Entry& MemTable::EntryFor(Day& day, std::string_view key, uint64_t hash) {
  bool made = false;
  Entry* entry = day.counters.FindOrMake(key, hash, &made);
  if (made) Index(day, entry);
  return *entry;
}

bool MemTable::Add(Day& day, std::string_view key, uint64_t hash, int64_t delta, Entry** entry) {
  Entry& found = EntryFor(day, key, hash);
  int64_t sum = 0;  // the stored value changes only when the sum fits (a new entry's 0 + delta always does)
  if (__builtin_add_overflow(found.delta, delta, &sum)) return false;
  found.delta = sum;
  *entry = &found;
  return true;
}

void MemTable::Index(Day& day, const Entry* entry) {
  day.unindexed.push_back(entry);
  ++entries_;
}

void MemTable::IndexPending(const Day& day) {
  for (const Entry* entry : day.unindexed) {
    Group& group = day.groups.try_emplace(KeyGroup(entry->key)).first->second;
    if (!group.entries.empty() && group.entries.back()->key > entry->key) group.sorted = false;
    group.entries.push_back(entry);
  }
  day.unindexed.clear();
}

void MemTable::Unite(Day& day, Entry& entry, const UniqueSketch& sketch) {
  if (!entry.visitors) {
    entry.visitors = std::make_unique<UniqueSketch>(sketch);
    ++day.sketches;
    ++sketch_records_;
    sketch_bytes_ += kSketchOverhead + entry.visitors->MemoryBytes();
    return;
  }
  const size_t before = entry.visitors->MemoryBytes();
  entry.visitors->Merge(sketch);
  sketch_bytes_ += entry.visitors->MemoryBytes();  // unsigned: also right when turning dense shrank it
  sketch_bytes_ -= before;
}

void MemTable::Undo(Day& day, std::string_view key, int64_t delta) {
  // The entry stays (at 0 if the batch created it): reads and checkpoints
  // skip zeros, as no line ever adds 0.
  if (Entry* entry = day.counters.Find(key, CounterIndex::Hash(key)); entry != nullptr) entry->delta -= delta;
}

Status MemTable::Apply(const ParsedBatch& batch, int64_t lookup_day) {
  // Lines of a batch nearly always share a day: remember the last one.
  int64_t last_day = 0;
  Day* day = nullptr;
  // With unique lines: each counter line's entry, for the "~" line after it.
  std::vector<Entry*> counted;
  if (batch.uniques > 0) counted.assign(batch.lines.size(), nullptr);
  // Every counter line's hash first, then its slot asked for kSlotAhead
  // lines before it is used, and the entry in that slot kEntryAhead lines
  // before: a batch of new keys pays its cache misses side by side instead
  // of one after another (counter_index.h).
  constexpr size_t kSlotAhead = 16;
  constexpr size_t kEntryAhead = 4;
  std::vector<uint64_t> hashes(batch.lines.size());
  for (size_t i = 0; i < batch.lines.size(); ++i) {
    const BatchLine& line = batch.lines[i];
    if (!line.lookup && !line.unique) hashes[i] = CounterIndex::Hash(line.key);
  }
  auto ahead = [&](size_t j, bool entry) {
    if (j >= batch.lines.size()) return;
    const BatchLine& line = batch.lines[j];
    if (line.lookup || line.unique || day == nullptr || line.day != last_day) return;
    if (entry) {
      day->counters.PrefetchEntry(hashes[j]);
    } else {
      day->counters.Prefetch(hashes[j]);
    }
  };
  for (size_t i = 0; i < batch.lines.size(); ++i) {
    const BatchLine& line = batch.lines[i];
    if (line.lookup || line.unique) continue;
    if (day == nullptr || line.day != last_day) {
      day = &DayFor(line.day);
      last_day = line.day;
      for (size_t j = i; j < i + kSlotAhead; ++j) ahead(j, false);
    }
    ahead(i + kSlotAhead, false);
    ahead(i + kEntryAhead, true);
    Entry* entry = nullptr;
    if (!Add(*day, line.key, hashes[i], line.delta, &entry)) {
      for (size_t j = 0; j < i; ++j) {
        const BatchLine& done = batch.lines[j];
        if (!done.lookup && !done.unique) Undo(DayFor(done.day), done.key, done.delta);
      }
      return Status(StatusCode::kInternal,
                    fmt::format("counter {} would pass the int64 range; nothing of the batch applied",
                                std::string(line.key)),
                    "COUNTER_OVERFLOW");
    }
    if (!counted.empty()) counted[i] = entry;
  }
  if (batch.uniques > 0) {
    for (size_t i = 0; i < batch.lines.size(); ++i) {
      const BatchLine& line = batch.lines[i];
      if (!line.unique) continue;
      if (day == nullptr || line.day != last_day) {
        day = &DayFor(line.day);
        last_day = line.day;
      }
      // A batch not made by ParseBatch could set the mark wrongly: find the
      // entry by key then.
      // The counter line's entry is its day's: a line of another day finds
      // its own (the day's sketch count must be of the day that holds it).
      Entry* rides_on =
          line.follows_its_counter && i > 0 && batch.lines[i - 1].day == line.day ? counted[i - 1] : nullptr;
      const std::string_view counter_key = line.key.substr(1);
      Entry& entry = rides_on != nullptr ? *rides_on : EntryFor(*day, counter_key, CounterIndex::Hash(counter_key));
      Unite(*day, entry, batch.sketches[line.sketch]);
    }
  }
  if (batch.lookups > 0) {
    Day& today = DayFor(lookup_day);
    for (const BatchLine& line : batch.lines) {
      if (!line.lookup) continue;
      auto it = today.lookups.find(line.key);
      if (it == today.lookups.end()) {
        today.lookups.emplace(std::piecewise_construct, std::forward_as_tuple(line.key),
                              std::forward_as_tuple(line.value));
        ++lookup_records_;
      } else {
        it->second.assign(line.value);  // the old value's bytes stay in the arena, counted
      }
    }
  }
  return Status::Ok();
}

std::optional<int64_t> MemTable::Counter(int64_t day, std::string_view key) const {
  auto d = days_.find(day);
  if (d == days_.end()) return std::nullopt;
  const Entry* entry = d->second.day().counters.Find(key, CounterIndex::Hash(key));
  if (entry == nullptr || entry->delta == 0) return std::nullopt;
  return entry->delta;
}

const UniqueSketch* MemTable::Sketch(int64_t day, std::string_view key) const {
  if (!IsUniqueKey(key)) return nullptr;
  auto d = days_.find(day);
  if (d == days_.end()) return nullptr;
  const std::string_view counter_key = key.substr(1);
  const Entry* entry = d->second.day().counters.Find(counter_key, CounterIndex::Hash(counter_key));
  return entry == nullptr ? nullptr : entry->visitors.get();
}

const std::pmr::string* MemTable::Lookup(int64_t day, std::string_view key) const {
  auto d = days_.find(day);
  if (d == days_.end()) return nullptr;
  auto it = d->second.day().lookups.find(key);
  return it == d->second.day().lookups.end() ? nullptr : &it->second;
}

std::unique_ptr<StoreCursor> MemTable::NewCursor(int64_t day, std::string_view prefix) const {
  std::vector<CursorEntry> entries;
  auto d = days_.find(day);
  if (d != days_.end()) {
    const Day& t = d->second.day();
    IndexPending(t);
    // Unique records ride on their counters' entries (see the header): a
    // "~" prefix is matched against the entries' keys without its '~'.
    const bool unique_prefix = IsUniqueKey(prefix);
    const bool want_counters = !unique_prefix;
    const bool want_sketches = unique_prefix || prefix.empty();
    const std::string_view entry_prefix = unique_prefix ? prefix.substr(1) : prefix;
    auto take_group = [&](Group& group) {
      if (!group.sorted) {
        std::sort(group.entries.begin(), group.entries.end(),
                  [](const Entry* a, const Entry* b) { return a->key < b->key; });
        group.sorted = true;
      }
      for (const Entry* e : group.entries) {
        if (!e->key.starts_with(entry_prefix)) continue;
        const Entry& entry = *e;
        if (want_counters && entry.delta != 0) {
          entries.push_back(CursorEntry{std::string(e->key), EncodeCounter(entry.delta), std::nullopt});
        }
        if (want_sketches && entry.visitors) {
          std::string key;
          key.reserve(e->key.size() + 1);
          key.push_back(kUniqueMark);
          key.append(e->key);
          entries.push_back(CursorEntry{std::move(key), std::string(), *entry.visitors});
        }
      }
    };
    const size_t bar = entry_prefix.find('|');
    const bool names_group =
        bar != std::string_view::npos && entry_prefix.find('.', bar + 1) != std::string_view::npos;
    if (names_group) {
      // The prefix names a whole group (or more): one group holds every
      // match, of one kind, in key order.
      if (auto g = t.groups.find(KeyGroup(entry_prefix)); g != t.groups.end()) take_group(g->second);
    } else {
      // A shorter prefix: every group that starts with it (see the header).
      for (auto& [name, g] : t.groups) {
        if (name.starts_with(entry_prefix)) take_group(g);
      }
      std::sort(entries.begin(), entries.end());
    }
    const size_t counters_end = entries.size();
    // Lookups ("l|HASH") all sit in Today: walk them only for a prefix that
    // can match one, not for every counter scan.
    constexpr std::string_view kLookupPrefix = "l|";
    if (kLookupPrefix.starts_with(prefix) || prefix.starts_with(kLookupPrefix)) {
      for (const auto& [key, value] : t.lookups) {
        if (key.starts_with(prefix)) {
          entries.push_back(
              CursorEntry{std::string(std::string_view(key)), std::string(std::string_view(value)), std::nullopt});
        }
      }
    }
    if (entries.size() > counters_end) std::sort(entries.begin(), entries.end());
  }
  return std::make_unique<MemCursor>(std::move(entries));
}

bool MemTable::HasDay(int64_t day) const {
  auto d = days_.find(day);
  return d != days_.end() && !(d->second.day().counters.empty() && d->second.day().lookups.empty());
}

void MemTable::ReserveLike(const MemTable& previous) {
  // The counters' slots only for the day that had the most: the day being
  // written. After midnight the day before gets a few late records, not its
  // count again (and a clock a little ahead, a few on the next day).
  const Day* busiest = nullptr;
  for (const auto& [day, slot] : previous.days_) {
    if (busiest == nullptr || slot.day().counters.size() > busiest->counters.size()) busiest = &slot.day();
  }
  for (const auto& [day, slot] : previous.days_) {
    const Day& t = slot.day();
    if (t.counters.empty()) continue;
    Day& mine = DayFor(day);
    if (&t == busiest) mine.counters.Reserve(t.counters.size());
    mine.groups.reserve(t.groups.size());
  }
}

size_t MemTable::keys(int64_t day) const {
  auto d = days_.find(day);
  return d == days_.end() ? 0 : d->second.day().counters.size() + d->second.day().lookups.size() + d->second.day().sketches;
}

std::map<int64_t, SortableCounters> MemTable::CheckpointCounters() const {
  std::map<int64_t, SortableCounters> out;
  for (const auto& [day, slot] : days_) {
    const Day& t = slot.day();
    if (t.counters.empty()) continue;
    SortableCounters counters;
    counters.reserve(t.counters.size());
    t.counters.ForEach([&](const Entry& entry) {
      if (entry.delta != 0) counters.push_back(SortableCounter{SortKey(entry.key), entry.delta});
    });
    // A day whose entries are all 0 (a batch undone after overflow, or
    // visitors alone) has no counter to write: an empty day here would be
    // an empty file, which RocksDB refuses, and every retry with it.
    if (!counters.empty()) out.emplace(day, std::move(counters));
  }
  return out;
}

void MemTable::ForEachSketch(const std::function<void(int64_t, std::string_view, const UniqueSketch&)>& fn) const {
  for (const auto& [day, slot] : days_) {
    const Day& t = slot.day();
    if (t.sketches == 0) continue;
    t.counters.ForEach([&](const Entry& entry) {
      if (entry.visitors) fn(day, entry.key, *entry.visitors);
    });
  }
}

void MemTable::ForEachLookup(const std::function<void(int64_t, std::string_view, std::string_view)>& fn) const {
  for (const auto& [day, slot] : days_) {
    const Day& t = slot.day();
    for (const auto& [key, value] : t.lookups) fn(day, key, value);
  }
}

}  // namespace clickatron::realtime
