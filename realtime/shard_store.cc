#include "shard_store.h"

#include <fmt/format.h>
#include <rocksdb/cache.h>
#include <rocksdb/convenience.h>
#include <rocksdb/db.h>
#include <rocksdb/filter_policy.h>
#include <rocksdb/slice_transform.h>
#include <rocksdb/table.h>
#include <rocksdb/write_batch.h>
#include <spdlog/spdlog.h>

#include <algorithm>
#include <charconv>
#include <climits>
#include <mutex>

#include "clickatron/file_util.h"
#include "clickatron/key_codec.h"
#include "clickatron/record.h"
#include "clickatron/unique_sketch.h"
#include "clickatron/ymdh.h"
#include "counter_merge.h"
#include "record_value.h"

namespace clickatron::realtime {
namespace {

constexpr std::string_view kDayFamilyPrefix = "day-";

Status FromRocks(const rocksdb::Status& s, std::string_view what) {
  if (s.ok()) return Status::Ok();
  if (s.IsCorruption()) return Status::Corruption(fmt::format("{}: {}", what, s.ToString()));
  if (s.IsIOError()) return Status::IoError(fmt::format("{}: {}", what, s.ToString()));
  return Status::Internal(fmt::format("{}: {}", what, s.ToString()));
}

rocksdb::Slice ToSlice(std::string_view s) { return rocksdb::Slice(s.data(), s.size()); }

// The best compression this RocksDB build has for the lower levels.
rocksdb::CompressionType LowerLevelCompression() {
  const std::vector<rocksdb::CompressionType> supported = rocksdb::GetSupportedCompressions();
  for (rocksdb::CompressionType want : {rocksdb::kLZ4Compression, rocksdb::kSnappyCompression}) {
    if (std::find(supported.begin(), supported.end(), want) != supported.end()) return want;
  }
  return rocksdb::kNoCompression;
}

// Options for a day's column family, tuned for a write-heavy counter load:
// - Counters are merge operands (no read before write). A large memtable
//   (write_buffer_mb) lets the many increments to hot keys collapse in memory;
//   a flush folds each key's operands into one value, so the files on disk
//   hold one entry per counter. Three memtables let writes go on while one
//   is being flushed instead of stalling.
// - Reads are point lookups (get/mget) and short prefix scans (fwmatch), so
//   every table gets a 10 bits/key Bloom filter (~1% false positives), and
//   the memtable gets a whole-key Bloom filter too: a get for a key that is
//   not there (most hours of most keys) skips the memtable and the files.
//   Index and filter blocks live in the shared block cache, so memory is
//   bounded by block_cache_mb; L0's stay pinned because every read hits them.
// - L0 and L1 are rewritten often and hold the hottest data: no compression,
//   so flushes and the first compactions cost CPU only for merging. Lower
//   levels (older, colder data of long-lived retained days) use LZ4 (or
//   Snappy) to save disk.
// - level_compaction_dynamic_level_bytes keeps space amplification low as a
//   day's data grows from nothing to its final size.
rocksdb::ColumnFamilyOptions DayFamilyOptions(const StoreOptions& options, const std::shared_ptr<rocksdb::Cache>& cache,
                                              const std::shared_ptr<rocksdb::MergeOperator>& merge) {
  rocksdb::ColumnFamilyOptions cf;
  cf.merge_operator = merge;
  cf.write_buffer_size = static_cast<size_t>(std::max(1, options.write_buffer_mb)) << 20;
  cf.max_write_buffer_number = 3;
  cf.memtable_prefix_bloom_size_ratio = 0.02;
  cf.memtable_whole_key_filtering = true;
  // ShardStore::Write applies a batch in (day, key) order: one insert hint
  // for every key (a prefix of length 0) starts each skip-list insert from
  // where the previous one ended, instead of from the head. RocksDB uses
  // hints on the single-writer path only (allow_concurrent_memtable_write is
  // off below: a shard has one writer).
  cf.memtable_insert_with_hint_prefix_extractor.reset(rocksdb::NewFixedPrefixTransform(0));
  cf.level_compaction_dynamic_level_bytes = true;
  const rocksdb::CompressionType lower = LowerLevelCompression();
  cf.compression_per_level = {rocksdb::kNoCompression, rocksdb::kNoCompression, lower, lower, lower, lower, lower};
  rocksdb::BlockBasedTableOptions table;
  table.block_cache = cache;
  table.filter_policy.reset(rocksdb::NewBloomFilterPolicy(10));
  table.whole_key_filtering = true;
  table.cache_index_and_filter_blocks = true;
  table.pin_l0_filter_and_index_blocks_in_cache = true;
  cf.table_factory.reset(rocksdb::NewBlockBasedTableFactory(table));
  return cf;
}

class CursorImpl;

}  // namespace

// Owns the database. Column family handles, snapshots and cursors hold a
// shared_ptr to it, so it closes only after the last of them is gone.
struct DbCore {
  std::unique_ptr<rocksdb::DB> db;
};

namespace {

class SnapshotImpl : public StoreSnapshot {
 public:
  explicit SnapshotImpl(std::shared_ptr<DbCore> core) : core_(std::move(core)), snapshot_(core_->db->GetSnapshot()) {}
  ~SnapshotImpl() override { core_->db->ReleaseSnapshot(snapshot_); }
  const rocksdb::Snapshot* get() const { return snapshot_; }

 private:
  std::shared_ptr<DbCore> core_;
  const rocksdb::Snapshot* snapshot_;
};

const rocksdb::Snapshot* RocksSnapshot(const StoreSnapshot* at) {
  return at == nullptr ? nullptr : static_cast<const SnapshotImpl*>(at)->get();
}

}  // namespace

using FamilyPtr = std::shared_ptr<rocksdb::ColumnFamilyHandle>;

struct ShardStore::Impl {
  StoreOptions options;
  std::shared_ptr<rocksdb::Cache> cache;
  std::shared_ptr<rocksdb::MergeOperator> merge;
  std::shared_ptr<DbCore> core;
  FamilyPtr meta;                      // the default column family
  std::map<int64_t, FamilyPtr> days;
  std::vector<FamilyPtr> foreign;      // families we don't know: kept open, untouched
  mutable std::mutex days_mu;  // `days` is read by the checkpoint thread

  FamilyPtr Wrap(rocksdb::ColumnFamilyHandle* handle) {
    std::shared_ptr<DbCore> keep = core;
    return FamilyPtr(handle, [keep](rocksdb::ColumnFamilyHandle* h) { keep->db->DestroyColumnFamilyHandle(h).PermitUncheckedError(); });
  }
  rocksdb::ColumnFamilyHandle* Day(int64_t day) const {
    std::lock_guard lock(days_mu);
    auto it = days.find(day);
    return it == days.end() ? nullptr : it->second.get();
  }
};

namespace {

class CursorImpl : public StoreCursor {
 public:
  CursorImpl(std::shared_ptr<DbCore> core, FamilyPtr family, const CursorOptions& options)
      : core_(std::move(core)), family_(std::move(family)), upper_bound_text_(options.upper_bound) {
    rocksdb::ReadOptions ro;
    if (options.at) {
      at_ = options.at;
      ro.snapshot = RocksSnapshot(at_.get());
    }
    if (options.bulk_scan) {
      // An export reads a whole day once: don't evict the hot blocks reads
      // need, and read ahead in large sequential requests.
      ro.fill_cache = false;
      ro.readahead_size = 2u << 20;
    }
    if (!upper_bound_text_.empty()) {
      upper_bound_ = rocksdb::Slice(upper_bound_text_);
      ro.iterate_upper_bound = &upper_bound_;
    }
    iter_.reset(core_->db->NewIterator(ro, family_.get()));
  }
  ~CursorImpl() override {
    iter_.reset();  // before the snapshot and the family it reads
  }

  void Seek(std::string_view target) override { iter_->Seek(ToSlice(target)); }
  bool Valid() const override { return iter_->Valid(); }
  std::string_view key() const override { return iter_->key().ToStringView(); }
  std::string_view raw_value() const override { return iter_->value().ToStringView(); }
  void Next() override { iter_->Next(); }
  Status status() const override { return FromRocks(iter_->status(), "iterating the store"); }

 private:
  std::shared_ptr<DbCore> core_;
  FamilyPtr family_;
  std::string upper_bound_text_;
  rocksdb::Slice upper_bound_;
  SnapshotPtr at_;
  std::unique_ptr<rocksdb::Iterator> iter_;
};

}  // namespace

ShardStore::ShardStore(std::string dir, std::unique_ptr<Impl> impl) : dir_(std::move(dir)), impl_(std::move(impl)) {}

ShardStore::~ShardStore() {
  if (!impl_ || !impl_->core) return;
  // Flush-free close: what was not persisted by a checkpoint is re-sent by
  // the API from its oplog (above the durable watermarks). Handles first (the DB must
  // outlive them); cursors still alive keep the core open until they go.
  impl_->days.clear();
  impl_->foreign.clear();
  impl_->meta.reset();
}

Result<std::unique_ptr<ShardStore>> ShardStore::Open(const std::string& dir, const StoreOptions& options) {
  CLICKATRON_RETURN_IF_ERROR(MakeDirs(dir));
  auto impl = std::make_unique<Impl>();
  impl->options = options;
  impl->cache = rocksdb::NewLRUCache(static_cast<size_t>(std::max(1, options.block_cache_mb)) << 20);
  impl->merge = NewCounterMergeOperator();

  rocksdb::DBOptions db_options;
  db_options.create_if_missing = true;
  db_options.create_missing_column_families = true;
  // Two cores on the reference machine: one flush and one compaction at a time.
  db_options.max_background_jobs = 2;
  // Writes come from one thread: nothing to gain from parallel memtable
  // inserts, and with them off RocksDB honours the insert hint (see
  // DayFamilyOptions).
  db_options.allow_concurrent_memtable_write = false;
  // Checkpoints are written without the WAL and made durable by flushing
  // every family at once: the flushed files commit to the MANIFEST together,
  // so a crash never keeps one day's records without the watermarks (in the
  // default family) that go with them.
  db_options.atomic_flush = true;
  // One WAL is shared by every day. A quiet day (Yesterday, a retained day)
  // would otherwise pin old WAL files forever; past this size RocksDB
  // flushes the families holding the oldest WAL so it can be deleted.
  db_options.max_total_wal_size = (static_cast<uint64_t>(std::max(1, options.write_buffer_mb)) << 20) * 4;
  db_options.bytes_per_sync = 1u << 20;
  db_options.keep_log_file_num = 5;

  const rocksdb::ColumnFamilyOptions day_options = DayFamilyOptions(options, impl->cache, impl->merge);
  rocksdb::ColumnFamilyOptions meta_options;
  meta_options.write_buffer_size = 4u << 20;  // a few keys, rewritten in place

  std::vector<std::string> names;
  rocksdb::Status listed = rocksdb::DB::ListColumnFamilies(db_options, dir, &names);
  if (!listed.ok() || names.empty()) names = {rocksdb::kDefaultColumnFamilyName};  // a new database
  std::vector<rocksdb::ColumnFamilyDescriptor> descriptors;
  for (const std::string& name : names) {
    bool is_day = DayFromFamilyName(name).has_value();
    descriptors.emplace_back(name, name == rocksdb::kDefaultColumnFamilyName ? meta_options
                                   : is_day                                  ? day_options
                                                                             : rocksdb::ColumnFamilyOptions());
  }
  std::vector<rocksdb::ColumnFamilyHandle*> handles;
  rocksdb::DB* raw = nullptr;
  rocksdb::Status s = rocksdb::DB::Open(db_options, dir, descriptors, &handles, &raw);
  if (!s.ok()) return FromRocks(s, fmt::format("opening RocksDB in {}", dir));
  impl->core = std::make_shared<DbCore>();
  impl->core->db.reset(raw);
  for (size_t i = 0; i < handles.size(); ++i) {
    FamilyPtr family = impl->Wrap(handles[i]);
    if (names[i] == rocksdb::kDefaultColumnFamilyName) {
      impl->meta = std::move(family);
    } else if (std::optional<int64_t> day = DayFromFamilyName(names[i])) {
      impl->days[*day] = std::move(family);
    } else {
      spdlog::warn("{}: unknown column family \"{}\" left untouched", dir, names[i]);
      impl->foreign.push_back(std::move(family));
    }
  }
  return std::unique_ptr<ShardStore>(new ShardStore(dir, std::move(impl)));
}

std::vector<int64_t> ShardStore::Days() const {
  std::lock_guard lock(impl_->days_mu);
  std::vector<int64_t> out;
  for (const auto& [day, family] : impl_->days) out.push_back(day);
  return out;
}

bool ShardStore::HasDay(int64_t day) const {
  std::lock_guard lock(impl_->days_mu);
  return impl_->days.count(day) > 0;
}

Status ShardStore::CreateDay(int64_t day) {
  if (HasDay(day)) return Status::Ok();
  rocksdb::ColumnFamilyHandle* handle = nullptr;
  rocksdb::Status s = impl_->core->db->CreateColumnFamily(DayFamilyOptions(impl_->options, impl_->cache, impl_->merge),
                                                          DayFamilyName(day), &handle);
  if (!s.ok()) return FromRocks(s, fmt::format("creating the store for {}", FormatDate(day)));
  std::lock_guard lock(impl_->days_mu);
  impl_->days[day] = impl_->Wrap(handle);
  return Status::Ok();
}

Status ShardStore::DropDay(int64_t day) {
  FamilyPtr family;
  {
    std::lock_guard lock(impl_->days_mu);
    auto it = impl_->days.find(day);
    if (it == impl_->days.end()) return Status::Ok();
    family = it->second;
  }
  CLICKATRON_RETURN_IF_ERROR(FromRocks(impl_->core->db->DropColumnFamily(family.get()),
                                       fmt::format("dropping the store for {}", FormatDate(day))));
  std::lock_guard lock(impl_->days_mu);
  impl_->days.erase(day);
  return Status::Ok();
}

Status ShardStore::Write(const StoreWrite& write) {
  rocksdb::WriteBatch batch;
  std::string counter;
  // Lines of a batch are nearly always for one day: remember the last lookup.
  int64_t last_day = INT64_MIN;
  rocksdb::ColumnFamilyHandle* family = nullptr;
  auto family_of = [&](int64_t day) -> rocksdb::ColumnFamilyHandle* {
    if (day != last_day) {
      last_day = day;
      family = impl_->Day(day);
    }
    return family;
  };
  // Merge operands go into the memtable (a skip list) in key order: each
  // insert then starts its search from the previous one's position instead
  // of from the top, which was most of the cost of applying a batch in
  // random order (the combiner's hash order). Counters, then sketches (whose
  // '~' keys sort after every counter's), each by day and key.
  const auto by_day_and_key = [](const auto* a, const auto* b) {
    return a->day != b->day ? a->day < b->day : a->key < b->key;
  };
  // "~" + counter key sorts as the counter keys do.
  const auto by_day_and_counter_key = [](const auto* a, const auto* b) {
    return a->day != b->day ? a->day < b->day : a->counter_key < b->counter_key;
  };
  std::vector<const StoreWrite::Increment*> in_order;
  in_order.reserve(write.increments.size());
  for (const StoreWrite::Increment& inc : write.increments) in_order.push_back(&inc);
  std::sort(in_order.begin(), in_order.end(), by_day_and_key);
  std::vector<const StoreWrite::Unite*> sketches_in_order;
  sketches_in_order.reserve(write.sketches.size());
  for (const StoreWrite::Unite& unite : write.sketches) sketches_in_order.push_back(&unite);
  std::sort(sketches_in_order.begin(), sketches_in_order.end(), by_day_and_counter_key);
  for (const StoreWrite::Increment* next : in_order) {
    const StoreWrite::Increment& inc = *next;
    rocksdb::ColumnFamilyHandle* cf = family_of(inc.day);
    if (cf == nullptr) return Status::Internal(fmt::format("no store for {}", FormatDate(inc.day)));
    counter.clear();
    AppendCounter(inc.delta, &counter);
    CLICKATRON_RETURN_IF_ERROR(FromRocks(batch.Merge(cf, ToSlice(inc.key), counter), "building a batch"));
  }
  std::string operand;  // reused, as is the key: the batch copies both
  std::string key;
  for (const StoreWrite::Unite* next : sketches_in_order) {
    const StoreWrite::Unite& unite = *next;
    rocksdb::ColumnFamilyHandle* cf = family_of(unite.day);
    if (cf == nullptr) return Status::Internal(fmt::format("no store for {}", FormatDate(unite.day)));
    operand.clear();
    unite.sketch->AppendBinary(&operand);
    key.assign(1, kUniqueMark);
    key.append(unite.counter_key);
    CLICKATRON_RETURN_IF_ERROR(FromRocks(batch.Merge(cf, key, operand), "building a batch"));
  }
  for (const StoreWrite::Put& put : write.puts) {
    rocksdb::ColumnFamilyHandle* cf = family_of(put.day);
    if (cf == nullptr) return Status::Internal(fmt::format("no store for {}", FormatDate(put.day)));
    CLICKATRON_RETURN_IF_ERROR(FromRocks(batch.Put(cf, ToSlice(put.key), ToSlice(put.value)), "building a batch"));
  }
  for (const auto& [source, seq] : write.watermarks) {
    const std::string key = std::string(kWatermarkPrefix) + source;
    CLICKATRON_RETURN_IF_ERROR(FromRocks(batch.Put(impl_->meta.get(), key, std::to_string(seq)), "building a batch"));
  }
  rocksdb::WriteOptions wo;
  wo.disableWAL = true;  // made durable by Persist() (see the header)
  return FromRocks(impl_->core->db->Write(wo, &batch), "writing a checkpoint");
}

Status ShardStore::Persist(const std::optional<std::vector<int64_t>>& days) {
  std::vector<rocksdb::ColumnFamilyHandle*> families;
  std::vector<FamilyPtr> keep;  // alive while flushing
  {
    std::lock_guard lock(impl_->days_mu);
    keep.push_back(impl_->meta);
    if (days) {
      for (int64_t day : *days) {
        auto it = impl_->days.find(day);
        if (it == impl_->days.end()) return Status::Internal(fmt::format("no store for {}", FormatDate(day)));
        keep.push_back(it->second);
      }
    } else {
      for (const auto& [day, family] : impl_->days) keep.push_back(family);
    }
  }
  for (const FamilyPtr& f : keep) families.push_back(f.get());
  rocksdb::FlushOptions fo;
  fo.wait = true;
  fo.allow_write_stall = true;  // the flush is the point: wait for room rather than fail
  return FromRocks(impl_->core->db->Flush(fo, families), "persisting a checkpoint (atomic flush)");
}

Status ShardStore::Resume() { return FromRocks(impl_->core->db->Resume(), "resuming the store after an error"); }

SnapshotPtr ShardStore::Snapshot() const { return std::make_shared<SnapshotImpl>(impl_->core); }

Result<std::optional<std::string>> ShardStore::Get(int64_t day, std::string_view key, const StoreSnapshot* at) const {
  rocksdb::ColumnFamilyHandle* cf = impl_->Day(day);
  if (cf == nullptr) return std::optional<std::string>();
  std::string value;
  rocksdb::ReadOptions ro;
  ro.snapshot = RocksSnapshot(at);
  rocksdb::Status s = impl_->core->db->Get(ro, cf, ToSlice(key), &value);
  if (s.IsNotFound()) return std::optional<std::string>();
  if (!s.ok()) return FromRocks(s, fmt::format("reading {}", QuoteForMessage(key)));
  return std::optional<std::string>(std::move(value));
}

Result<std::unique_ptr<StoreCursor>> ShardStore::NewCursor(int64_t day, const CursorOptions& options) const {
  FamilyPtr family;
  {
    std::lock_guard lock(impl_->days_mu);
    auto it = impl_->days.find(day);
    if (it == impl_->days.end()) return Status::NotFound(fmt::format("no store for {}", FormatDate(day)));
    family = it->second;
  }
  return std::unique_ptr<StoreCursor>(new CursorImpl(impl_->core, std::move(family), options));
}

Result<std::optional<std::string>> ShardStore::GetMeta(std::string_view key) const {
  std::string value;
  rocksdb::Status s = impl_->core->db->Get(rocksdb::ReadOptions(), impl_->meta.get(), ToSlice(key), &value);
  if (s.IsNotFound()) return std::optional<std::string>();
  if (!s.ok()) return FromRocks(s, fmt::format("reading metadata {}", key));
  return std::optional<std::string>(std::move(value));
}

Status ShardStore::PutMeta(std::string_view key, std::string_view value, bool sync) {
  rocksdb::WriteOptions wo;
  wo.sync = sync;
  return FromRocks(impl_->core->db->Put(wo, impl_->meta.get(), ToSlice(key), ToSlice(value)),
                   fmt::format("writing metadata {}", key));
}

Result<std::map<std::string, uint64_t>> ShardStore::LoadWatermarks() const {
  std::map<std::string, uint64_t> out;
  std::unique_ptr<rocksdb::Iterator> it(impl_->core->db->NewIterator(rocksdb::ReadOptions(), impl_->meta.get()));
  for (it->Seek(ToSlice(kWatermarkPrefix)); it->Valid() && it->key().starts_with(ToSlice(kWatermarkPrefix)); it->Next()) {
    std::string_view source = it->key().ToStringView().substr(kWatermarkPrefix.size());
    std::string_view text = it->value().ToStringView();
    uint64_t seq = 0;
    auto [ptr, ec] = std::from_chars(text.data(), text.data() + text.size(), seq);
    if (ec != std::errc() || ptr != text.data() + text.size()) {
      return Status::Corruption(fmt::format("watermark of {} is not a number: {}", QuoteForMessage(source),
                                            QuoteForMessage(text)));
    }
    out[std::string(source)] = seq;
  }
  CLICKATRON_RETURN_IF_ERROR(FromRocks(it->status(), "reading watermarks"));
  return out;
}

std::optional<uint64_t> ShardStore::DayProperty(int64_t day, const std::string& property) const {
  rocksdb::ColumnFamilyHandle* cf = impl_->Day(day);
  uint64_t value = 0;
  if (cf == nullptr || !impl_->core->db->GetIntProperty(cf, property, &value)) return std::nullopt;
  return value;
}

std::optional<uint64_t> ShardStore::DbProperty(const std::string& property) const {
  uint64_t value = 0;
  if (!impl_->core->db->GetAggregatedIntProperty(property, &value)) return std::nullopt;
  return value;
}

bool IsLookupKey(std::string_view key) { return key.size() >= 2 && key[0] == 'l' && key[1] == '|'; }

Status AppendValueText(std::string_view key, std::string_view raw, std::string* out) {
  RecordValue value(key);
  CLICKATRON_RETURN_IF_ERROR(value.AddStored(raw));
  value.AppendText(out);
  return Status::Ok();
}

std::string DayFamilyName(int64_t day) { return std::string(kDayFamilyPrefix) + FormatDate(day); }

std::optional<int64_t> DayFromFamilyName(std::string_view name) {
  if (name.substr(0, kDayFamilyPrefix.size()) != kDayFamilyPrefix) return std::nullopt;
  Result<int64_t> day = ParseDate(name.substr(kDayFamilyPrefix.size()));
  if (!day.ok()) return std::nullopt;
  return *day;
}

}  // namespace clickatron::realtime
