#include "scan_cache.h"

#include <algorithm>
#include <cstring>

#include "clickatron/record.h"
#include "clickatron/unique_sketch.h"
#include "record_value.h"

namespace clickatron::realtime {

void CachedRecords::Add(std::string_view key, std::string_view raw_value) {
  if (overflowed_) return;
  // Measured by what the records use, as they will be charged once shrunk
  // (capacity, which grows by doubling, would stop them well short of it).
  // A unique record is kept as text: a third larger than its binary.
  const bool unique = IsUniqueKey(key);
  const size_t value_bytes = unique ? (raw_value.size() * 4 + 2) / 3 : raw_value.size();
  if (data_.size() + key.size() + value_bytes + (items_.size() + 1) * sizeof(Item) > max_bytes_) {
    overflowed_ = true;
    data_ = std::string();
    items_ = std::vector<Item>();
    return;
  }
  const size_t at = data_.size();
  data_.append(key);
  bool text = false;
  if (unique) {
    text = UniqueSketch::AppendTextOfBinary(raw_value, &data_).ok();
    if (!text) data_.resize(at + key.size());
  }
  if (!text) data_.append(raw_value);
  items_.push_back(Item{at, static_cast<uint32_t>(key.size()), static_cast<uint32_t>(data_.size() - at - key.size()),
                        text});
}

void CachedRecords::AddKept(std::string_view key, std::string_view value, bool text) {
  const size_t at = data_.size();
  data_.append(key);
  data_.append(value);
  items_.push_back(Item{at, static_cast<uint32_t>(key.size()), static_cast<uint32_t>(value.size()), text});
}

void CachedRecords::ShrinkToFit() {
  data_.shrink_to_fit();
  items_.shrink_to_fit();
}

size_t CachedRecords::LowerBound(std::string_view target) const {
  size_t lo = 0;
  size_t hi = items_.size();
  while (lo < hi) {
    const size_t mid = lo + (hi - lo) / 2;
    if (key(mid) < target) {
      lo = mid + 1;
    } else {
      hi = mid;
    }
  }
  return lo;
}

namespace {

class CachedRecordsCursor : public StoreCursor {
 public:
  explicit CachedRecordsCursor(CachedRecordsPtr records) : records_(std::move(records)) {}
  void Seek(std::string_view target) override { at_ = records_->LowerBound(target); }
  bool Valid() const override { return at_ < records_->size(); }
  std::string_view key() const override { return records_->key(at_); }
  std::string_view raw_value() const override { return records_->value(at_); }
  bool value_is_text() const override { return records_->value_is_text(at_); }
  void Next() override { ++at_; }
  Status status() const override { return Status::Ok(); }

 private:
  CachedRecordsPtr records_;
  size_t at_ = 0;
};

}  // namespace

std::unique_ptr<StoreCursor> NewCachedRecordsCursor(CachedRecordsPtr records) {
  return std::make_unique<CachedRecordsCursor>(std::move(records));
}

std::shared_ptr<const CachedRecords> UniteDays(const CachedRecords& hours) {
  auto out = std::make_shared<CachedRecords>();
  std::string text;
  for (size_t i = 0; i < hours.size();) {
    const std::string_view key = hours.key(i);
    const std::string_view day = UniqueKeyOfDay(key);
    size_t end = i + 1;
    while (!day.empty() && end < hours.size() && UniqueKeyOfDay(hours.key(end)) == day) ++end;
    if (end == i + 1) {
      out->AddKept(key, hours.value(i), hours.value_is_text(i));
      i = end;
      continue;
    }
    // United as a scan unites a record's parts (the hours outlive it).
    RecordValue united(key);
    for (; i < end; ++i) {
      const Status st =
          hours.value_is_text(i) ? united.AddStoredText(hours.value(i)) : united.AddStored(hours.value(i));
      if (!st.ok()) return nullptr;
    }
    text.clear();
    united.AppendText(&text);
    out->AddKept(key, text, /*text=*/true);
  }
  out->ShrinkToFit();
  return out;
}

std::string_view ScanCache::KeyOf(int64_t day, std::string_view prefix) {
  key_.assign(sizeof day, '\0');
  std::memcpy(key_.data(), &day, sizeof day);
  key_.append(prefix);
  return key_;
}

ScanCache::Entry* ScanCache::EntryOf(int64_t day, std::string_view prefix, uint64_t version) {
  newest_version_ = std::max(newest_version_, version);
  const std::string_view key = KeyOf(day, prefix);
  Entry* entry = entries_.Find(key);
  if (entry != nullptr && entry->version != version) {
    // Views' versions only rise: older records are never used again.
    if (entry->version < version) entries_.Erase(key);
    return nullptr;
  }
  return entry;
}

CachedRecordsPtr ScanCache::Find(int64_t day, std::string_view prefix, uint64_t version) {
  if (!enabled()) return nullptr;
  const Entry* entry = EntryOf(day, prefix, version);
  if (entry == nullptr) {
    ++misses_;
    return nullptr;
  }
  ++hits_;
  return entry->records;
}

CachedRecordsPtr ScanCache::FindUnited(int64_t day, std::string_view prefix, uint64_t version) {
  if (!enabled()) return nullptr;
  Entry* entry = EntryOf(day, prefix, version);
  CachedRecordsPtr united = entry != nullptr ? entry->united : nullptr;
  if (entry != nullptr && !united) {
    united = UniteDays(*entry->records);
    if (united) {
      // Kept again with both charged (the budget may drop older entries).
      const CachedRecordsPtr hours = entry->records;
      const size_t charge = hours->bytes() + united->bytes() + key_.size() + kEntryOverhead;
      entries_.Put(key_, Entry{version, hours, united}, charge);  // key_: KeyOf(day, prefix), as EntryOf left it
    }
  }
  // Records that do not unite are read from the store (which reports them).
  if (!united) {
    ++misses_;
    return nullptr;
  }
  ++hits_;
  return united;
}

void ScanCache::Put(int64_t day, std::string_view prefix, uint64_t version, std::shared_ptr<CachedRecords> records) {
  if (!records) {
    if (min_records_ > 0) return;
    records = std::make_shared<CachedRecords>();  // a scan that read nothing, kept when asked to
  }
  if (!enabled() || records->overflowed() || records->size() < min_records_) return;
  // A scan that began before the store changed can end after one that
  // began after it: its records must not take the place of newer ones.
  if (version < newest_version_) return;
  newest_version_ = version;
  records->ShrinkToFit();
  const std::string_view key = KeyOf(day, prefix);
  const size_t charge = records->bytes() + key.size() + kEntryOverhead;
  entries_.Put(key, Entry{version, std::move(records), nullptr}, charge);
}

std::optional<bool> ScanCache::DayEmpty(int64_t day, uint64_t version) const {
  if (!enabled()) return std::nullopt;
  for (const DayFact& f : day_facts_) {
    if (f.day == day && f.version == version) return f.empty;
  }
  return std::nullopt;
}

void ScanCache::NoteDayEmpty(int64_t day, uint64_t version, bool empty) {
  if (!enabled() || version < newest_version_) return;
  newest_version_ = version;
  // Facts of older versions are never asked again: dropped, which also
  // bounds the list by the days read at one version.
  std::erase_if(day_facts_, [&](const DayFact& f) { return f.day == day || f.version < version; });
  day_facts_.push_back(DayFact{day, version, empty});
}

}  // namespace clickatron::realtime
