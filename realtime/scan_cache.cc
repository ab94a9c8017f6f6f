#include "scan_cache.h"

#include <algorithm>
#include <cstring>

namespace clickatron::realtime {

void CachedRecords::Add(std::string_view key, std::string_view raw_value) {
  items_.push_back(Item{data_.size(), static_cast<uint32_t>(key.size()), static_cast<uint32_t>(raw_value.size())});
  data_.append(key);
  data_.append(raw_value);
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

std::string ScanCache::KeyOf(int64_t day, std::string_view prefix) {
  std::string key(sizeof day, '\0');
  std::memcpy(key.data(), &day, sizeof day);
  key.append(prefix);
  return key;
}

CachedRecordsPtr ScanCache::Find(int64_t day, std::string_view prefix, uint64_t version) {
  if (!enabled_) return nullptr;
  const Entry* entry = entries_.Find(KeyOf(day, prefix));
  if (entry == nullptr || entry->version != version) {
    ++misses_;
    return nullptr;
  }
  ++hits_;
  return entry->records;
}

void ScanCache::Put(int64_t day, std::string_view prefix, uint64_t version, CachedRecordsPtr records) {
  if (!enabled_ || records->size() < min_records_) return;
  const std::string key = KeyOf(day, prefix);
  // A scan that began before the store changed ends after one that began
  // after: it must not replace the newer records.
  if (const Entry* kept = entries_.Find(key); kept != nullptr && kept->version > version) return;
  const size_t charge = records->bytes() + key.size() + kEntryOverhead;
  entries_.Put(key, Entry{version, std::move(records)}, charge);
}

}  // namespace clickatron::realtime
