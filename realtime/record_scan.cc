#include "record_scan.h"

#include <fmt/format.h>

#include "clickatron/record.h"
#include "clickatron/unique_sketch.h"
#include "counter_merge.h"
#include "mem_table.h"

namespace clickatron::realtime {
namespace {

// A k-way merge of per-day cursors (k is at most a handful: no heap needed).
class MergedScan : public LineSource {
 public:
  MergedScan(std::vector<std::unique_ptr<StoreCursor>> cursors, uint64_t limit)
      : cursors_(std::move(cursors)), limit_(limit) {}

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
  // Emits the next line; false at the end or on an error.
  bool Step(std::string* out) {
    if (limit_ != 0 && lines_ >= limit_) return false;
    StoreCursor* first = nullptr;
    for (auto& c : cursors_) {
      if (!c->Valid()) {
        if (Status st = c->status(); !st.ok()) return Fail(st);
        continue;
      }
      if (first == nullptr || c->key() < first->key()) first = c.get();
    }
    if (first == nullptr) return false;
    const std::string key(first->key());
    const bool lookup = IsLookupKey(key);
    const bool unique = IsUniqueKey(key);
    int64_t sum = 0;
    bool have_lookup = false;
    std::string lookup_copy;
    UniqueSketch visitors;
    for (auto& c : cursors_) {
      if (!c->Valid() || c->key() != key) continue;
      if (unique) {
        Result<UniqueSketch> part = UniqueSketch::FromBinary(c->raw_value());
        if (!part.ok()) return Fail(Status::Corruption(fmt::format("sketch {}: {}", key, part.status().message())));
        visitors.Merge(*part);
      } else if (lookup) {
        if (!have_lookup) {
          lookup_copy = std::string(c->raw_value());
          have_lookup = true;
        }
      } else {
        int64_t count = 0;
        if (!DecodeCounter(c->raw_value(), &count)) {
          return Fail(Status::Corruption(fmt::format("counter {} holds {} bytes, not {}", key, c->raw_value().size(),
                                                     kCounterBytes)));
        }
        if (Status st = AddCount(&sum, count); !st.ok()) return Fail(st.WithContext(key));
      }
      c->Next();
    }
    out->append(key);
    out->push_back(',');
    if (unique) {
      visitors.AppendText(out);
    } else if (lookup) {
      out->append(lookup_copy);
    } else {
      fmt::format_to(std::back_inserter(*out), "{}", sum);
    }
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
  uint64_t lines_ = 0;
  bool done_ = false;
  Status status_;
};

// ReadRecord of a unique record: the union over the stores and tables.
Result<std::optional<std::string>> ReadSketch(const ReadView& view, const std::vector<int64_t>& days,
                                              std::string_view key) {
  UniqueSketch visitors;
  bool found = false;
  for (int64_t day : days) {
    for (const MemTable* t : view.tables) {
      if (const UniqueSketch* held = t->Sketch(day, key)) {
        visitors.Merge(*held);
        found = true;
      }
    }
    Result<std::optional<std::string>> raw = view.store->Get(day, key, view.at.get());
    if (!raw.ok()) return raw.status();
    if (!raw->has_value()) continue;
    Result<UniqueSketch> stored = UniqueSketch::FromBinary(**raw);
    if (!stored.ok()) return Status::Corruption(fmt::format("sketch {}: {}", key, stored.status().message()));
    visitors.Merge(*stored);
    found = true;
  }
  if (!found) return std::optional<std::string>();
  return std::optional<std::string>(visitors.ToText());
}

}  // namespace

Result<std::optional<std::string>> ReadRecord(const ReadView& view, const std::vector<int64_t>& days,
                                              std::string_view key) {
  const bool lookup = IsLookupKey(key);
  if (IsUniqueKey(key)) return ReadSketch(view, days, key);
  bool found = false;
  int64_t sum = 0;
  for (int64_t day : days) {
    if (lookup) {
      for (auto t = view.tables.rbegin(); t != view.tables.rend(); ++t) {  // the newest put first
        if (const std::string* value = (*t)->Lookup(day, key)) return std::optional<std::string>(*value);
      }
    } else {
      for (const MemTable* t : view.tables) {
        if (std::optional<int64_t> delta = t->Counter(day, key)) {
          CLICKATRON_RETURN_IF_ERROR(AddCount(&sum, *delta));
          found = true;
        }
      }
    }
    Result<std::optional<std::string>> raw = view.store->Get(day, key, view.at.get());
    if (!raw.ok()) return raw.status();
    if (!raw->has_value()) continue;
    if (lookup) return std::optional<std::string>(std::move(**raw));
    int64_t count = 0;
    if (!DecodeCounter(**raw, &count)) {
      return Status::Corruption(fmt::format("counter {} holds {} bytes, not {}", key, (*raw)->size(), kCounterBytes));
    }
    CLICKATRON_RETURN_IF_ERROR(AddCount(&sum, count));
    found = true;
  }
  if (!found) return std::optional<std::string>();
  return std::optional<std::string>(std::to_string(sum));
}

Result<std::unique_ptr<LineSource>> ScanPrefix(const ReadView& view, const std::vector<int64_t>& days,
                                               std::string_view prefix, uint64_t limit) {
  CursorOptions options;
  options.upper_bound = PrefixSuccessor(prefix);
  options.at = view.at;
  std::vector<std::unique_ptr<StoreCursor>> cursors;
  for (int64_t day : days) {
    // The newest table first: a lookup takes the first cursor's value.
    for (auto t = view.tables.rbegin(); t != view.tables.rend(); ++t) {
      if (!(*t)->HasDay(day)) continue;
      std::unique_ptr<StoreCursor> mem = (*t)->NewCursor(day, prefix);
      mem->Seek(prefix);
      if (mem->Valid()) cursors.push_back(std::move(mem));
    }
    Result<std::unique_ptr<StoreCursor>> cursor = view.store->NewCursor(day, options);
    if (!cursor.ok()) return cursor.status();
    (*cursor)->Seek(prefix);
    cursors.push_back(std::move(cursor).value());
  }
  return std::unique_ptr<LineSource>(new MergedScan(std::move(cursors), limit));
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
