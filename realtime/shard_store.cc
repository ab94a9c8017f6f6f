#include "shard_store.h"

#include <fmt/format.h>
#include <rocksdb/cache.h>
#include <rocksdb/convenience.h>
#include <rocksdb/db.h>
#include <rocksdb/filter_policy.h>
#include <rocksdb/table.h>
#include <rocksdb/write_buffer_manager.h>
#include <rocksdb/write_batch.h>
#include <spdlog/spdlog.h>

#include <algorithm>
#include <array>
#include <atomic>
#include <charconv>
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <mutex>
#include <thread>

#include "clickatron/file_util.h"
#include "clickatron/key_codec.h"
#include "clickatron/record.h"
#include "clickatron/ymdh.h"
#include "checkpoint_file.h"
#include "rocks_logger.h"
#include "rocks_status.h"
#include "counter_merge.h"
#include "key_prefix.h"
#include "record_value.h"

namespace clickatron::realtime {
namespace {

constexpr std::string_view kDayFamilyPrefix = "day-";

rocksdb::Slice ToSlice(std::string_view s) { return rocksdb::Slice(s.data(), s.size()); }

// The best compression this RocksDB build has for the lower levels.
rocksdb::CompressionType LowerLevelCompression() {
  const std::vector<rocksdb::CompressionType> supported = rocksdb::GetSupportedCompressions();
  for (rocksdb::CompressionType want : {rocksdb::kLZ4Compression, rocksdb::kSnappyCompression}) {
    if (std::find(supported.begin(), supported.end(), want) != supported.end()) return want;
  }
  return rocksdb::kNoCompression;
}

// The block cache in shards of 16 MiB at least (at most 64 of them). An
// LRU shard never keeps a block larger than itself (RocksDB frees it at
// once), and RocksDB's own choice, shards of 512 KiB up to 64 (2 MiB at
// block_cache_mb = 128), is smaller than the Bloom filter of one full table
// of a busy day (a million short keys, 10 bits each, and their key parts):
// every prefix seek read that filter from its file again and checked its
// checksum, 29% of a shard's CPU under the live query benchmark (perf).
// Few shards cost little here: the read loop, the checkpoint thread and two
// compaction jobs use the cache. (A filter past 16 MiB, a table of some ten
// million keys, would still not be kept.)
int BlockCacheShardBits(size_t capacity) {
  constexpr size_t kLeastShardBytes = size_t{16} << 20;
  int bits = 0;
  while (bits < 6 && (capacity >> (bits + 1)) >= kLeastShardBytes) ++bits;
  return bits;
}

// Every family's tables use the one block cache (a family left with
// RocksDB's default table options would make a cache of its own, outside
// block_cache_mb), and what RocksDB can charge to it is charged: the Bloom
// filters being built (about 8 bytes a key of a checkpoint or a compaction
// output), the table readers and the files' metadata.
std::shared_ptr<rocksdb::TableFactory> TablesInCache(const std::shared_ptr<rocksdb::Cache>& cache) {
  rocksdb::BlockBasedTableOptions table;
  table.block_cache = cache;
  table.filter_policy.reset(rocksdb::NewBloomFilterPolicy(10));
  table.whole_key_filtering = true;
  table.cache_index_and_filter_blocks = true;
  table.pin_l0_filter_and_index_blocks_in_cache = true;
  for (rocksdb::CacheEntryRole role : {rocksdb::CacheEntryRole::kFilterConstruction,
                                       rocksdb::CacheEntryRole::kBlockBasedTableReader,
                                       rocksdb::CacheEntryRole::kFileMetadata}) {
    table.cache_usage_options.options_overrides.insert(
        {role, rocksdb::CacheEntryRoleOptions{.charged = rocksdb::CacheEntryRoleOptions::Decision::kEnabled}});
  }
  return std::shared_ptr<rocksdb::TableFactory>(rocksdb::NewBlockBasedTableFactory(table));
}

// Options for a day's column family, tuned for a write-heavy counter load:
// - Records arrive as checkpoint files (ShardStore::Write), one per
//   checkpoint, each holding a key once: counters and sketches as merge
//   operands (no read before write), lookups as puts. RocksDB puts each in
//   the lowest level it does not overlap (L0 once a day has data);
//   compactions fold each key's operands into one value. The memtable takes
//   no checkpoint records (write_buffer_mb sizes it for anything else).
// - Reads are point lookups (get/mget) and short prefix scans (fwmatch), so
//   every table gets a 10 bits/key Bloom filter (~1% false positives): a get
//   for a key that is not there (most hours of most keys) skips the files.
//   Index and filter blocks live in the shared block cache, so memory is
//   bounded by block_cache_mb; L0's stay pinned because every read hits them.
// - L0 and L1 are rewritten often and hold the hottest data: no compression,
//   so checkpoints and the first compactions cost CPU only for merging. Lower
//   levels (older, colder data of long-lived retained days) use LZ4 (or
//   Snappy) to save disk.
// - level_compaction_dynamic_level_bytes keeps space amplification low as a
//   day's data grows from nothing to its final size.
// - Compaction out of L0 starts at 8 files, not RocksDB's 4. Under keys
//   never seen before every checkpoint file spans the day's whole key range,
//   so each L0 compaction rewrites all of the level below it: twice the
//   files per compaction halves that rewrite. An alternating A/B under
//   uniform keys read 1.03-1.19M lines per shard CPU-second against
//   0.75-0.91M; the live query benchmark read the same cluster CPU per query
//   within its noise (0.94-1.09). The costs: a hot counter read before
//   compaction folds up to about 8 operands, not 4 (gets skip the L0 files
//   without the key by their Bloom filters; scans of hot prefixes are kept,
//   scan_cache.h); and a checkpoint has 12 files of room in L0, not 16,
//   before it waits for compaction at level0_slowdown_writes_trigger (20).
rocksdb::ColumnFamilyOptions DayFamilyOptions(const StoreOptions& options, const std::shared_ptr<rocksdb::Cache>& cache,
                                              const std::shared_ptr<rocksdb::MergeOperator>& merge) {
  rocksdb::ColumnFamilyOptions cf;
  cf.merge_operator = merge;
  cf.write_buffer_size = static_cast<size_t>(std::max(1, options.write_buffer_mb)) << 20;
  cf.level_compaction_dynamic_level_bytes = true;
  cf.level0_file_num_compaction_trigger = 8;
  cf.disable_auto_compactions = !options.auto_compactions;
  const rocksdb::CompressionType lower = LowerLevelCompression();
  cf.compression_per_level = {rocksdb::kNoCompression, rocksdb::kNoCompression, lower, lower, lower, lower, lower};
  cf.table_factory = TablesInCache(cache);
  // A filter of each file's key parts beside its keys' (key_prefix.h): a
  // scan of one key seeks only the files that hold it.
  cf.prefix_extractor = NewKeyPrefixTransform();
  return cf;
}

// A family's options for the files a checkpoint ingests: no compression (an
// SstFileWriter would take the last level's). Most land in L0 and are
// rewritten by the next compaction; a day's first few may land lower, and
// stay uncompressed until a compaction rewrites them.
rocksdb::ColumnFamilyOptions UncompressedFileOptions(rocksdb::ColumnFamilyOptions cf) {
  cf.compression_per_level.clear();
  cf.compression = rocksdb::kNoCompression;
  cf.bottommost_compression = rocksdb::kDisableCompressionOption;
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
  SnapshotImpl(std::shared_ptr<DbCore> core, uint64_t version)
      : StoreSnapshot(version), core_(std::move(core)), snapshot_(core_->db->GetSnapshot()) {}
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
  // What checkpoint files are made with (the families' own options, but
  // uncompressed: they land in L0), and where they are made.
  rocksdb::Options day_file_options;
  rocksdb::Options meta_file_options;
  std::string staging;
  uint64_t staged_files = 0;  // names them; the checkpoint thread's alone
  std::shared_ptr<rocksdb::Cache> cache;
  std::shared_ptr<rocksdb::WriteBufferManager> write_buffers;  // charged to `cache`
  std::shared_ptr<rocksdb::MergeOperator> merge;
  std::shared_ptr<DbCore> core;
  FamilyPtr meta;                      // the default column family
  std::map<int64_t, FamilyPtr> days;
  std::vector<FamilyPtr> foreign;      // families we don't know: kept open, untouched
  mutable std::mutex days_mu;  // `days` is read by the checkpoint thread
  std::atomic<uint64_t> version{0};  // version(): bumped by the checkpoint thread too

  FamilyPtr Wrap(rocksdb::ColumnFamilyHandle* handle) {
    std::shared_ptr<DbCore> keep = core;
    return FamilyPtr(handle, [keep](rocksdb::ColumnFamilyHandle* h) { keep->db->DestroyColumnFamilyHandle(h).PermitUncheckedError(); });
  }
  // The day's family, kept alive by the pointer (null: no such day).
  FamilyPtr DayFamily(int64_t day) const {
    std::lock_guard lock(days_mu);
    auto it = days.find(day);
    return it == days.end() ? nullptr : it->second;
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
    // By key part: RocksDB skips the files whose prefix filter lacks the
    // sought key's part, and the cursor ends where that part does. Else
    // every file in key order, as a cursor that crosses keys needs.
    ro.total_order_seek = !options.by_key_prefix;
    ro.prefix_same_as_start = options.by_key_prefix;
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
  const size_t cache_bytes = static_cast<size_t>(std::max(1, options.block_cache_mb)) << 20;
  impl->cache = rocksdb::NewLRUCache(cache_bytes, BlockCacheShardBits(cache_bytes));
  impl->merge = NewCounterMergeOperator();

  rocksdb::DBOptions db_options;
  // The write buffers (every family's memtables) are charged to the block
  // cache, which evicts blocks to make room. Near write_buffer_mb in all
  // (7/8 of it) RocksDB flushes the family with the oldest memtable; writes
  // never stall on it (the metadata family, the only one written through
  // the memtable, holds a few keys). The cache is not strict: what is in
  // use (held charges, L0's pinned index and filter blocks, blocks being
  // read) can pass block_cache_mb for a moment; /stats shows it.
  impl->write_buffers = std::make_shared<rocksdb::WriteBufferManager>(
      static_cast<size_t>(std::max(1, options.write_buffer_mb)) << 20, impl->cache);
  db_options.write_buffer_manager = impl->write_buffers;
  db_options.create_if_missing = true;
  db_options.create_missing_column_families = true;
  // Two cores on the reference machine: two background jobs (compactions;
  // only the metadata family still flushes).
  db_options.max_background_jobs = 2;
  // Checkpoints are ingested as files, all of a checkpoint's families in one
  // MANIFEST record (ShardStore::Write): no memtable, WAL or flush holds
  // them. The WAL serves the ring state only; past this size RocksDB
  // flushes the families holding the oldest WAL so it can be deleted.
  db_options.max_total_wal_size = (static_cast<uint64_t>(std::max(1, options.write_buffer_mb)) << 20) * 4;
  db_options.bytes_per_sync = 1u << 20;
  // RocksDB's log into ours, not a LOG file (rocks_logger.h: a full disk
  // aborted the daemon there).
  db_options.info_log = NewDaemonLogForRocks();

  const rocksdb::ColumnFamilyOptions day_options = DayFamilyOptions(options, impl->cache, impl->merge);
  rocksdb::ColumnFamilyOptions meta_options;
  meta_options.write_buffer_size = 4u << 20;  // a few keys, rewritten in place
  meta_options.table_factory = TablesInCache(impl->cache);
  rocksdb::ColumnFamilyOptions foreign_options;
  foreign_options.table_factory = meta_options.table_factory;
  impl->day_file_options = rocksdb::Options(db_options, UncompressedFileOptions(day_options));
  impl->meta_file_options = rocksdb::Options(db_options, UncompressedFileOptions(meta_options));
  impl->staging = dir + "/checkpoint-staging";

  std::vector<std::string> names;
  rocksdb::Status listed = rocksdb::DB::ListColumnFamilies(db_options, dir, &names);
  if (!listed.ok() || names.empty()) names = {rocksdb::kDefaultColumnFamilyName};  // a new database
  std::vector<rocksdb::ColumnFamilyDescriptor> descriptors;
  for (const std::string& name : names) {
    bool is_day = DayFromFamilyName(name).has_value();
    descriptors.emplace_back(name, name == rocksdb::kDefaultColumnFamilyName ? meta_options
                                   : is_day                                  ? day_options
                                                                             : foreign_options);
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
  // Files of a checkpoint that a crash interrupted were never ingested.
  // Removed only now that RocksDB's lock is ours: a second open of a store
  // in use fails above instead of taking a running checkpoint's files. (On
  // a failure the handles and the database close with `impl`.)
  std::error_code ec;
  std::filesystem::remove_all(impl->staging, ec);
  CLICKATRON_RETURN_IF_ERROR(MakeDirs(impl->staging));
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
  impl_->version.fetch_add(1);
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
  impl_->version.fetch_add(1);
  return Status::Ok();
}

namespace {

// Ingestion does not wait for compactions as a write into a memtable would
// (RocksDB stalls writes, not ingestion, when level 0 fills up): a
// checkpoint waits here instead, before it writes its files, while a family
// it writes has `limit` files in level 0, so reads never face an unbounded
// level 0. After `wait` it fails and is retried; the memory budget then
// pushes back on the API. The metadata family takes a file every checkpoint
// too, and is waited for the same way.
Status WaitForRoomInLevel0(rocksdb::DB& db, const std::vector<rocksdb::ColumnFamilyHandle*>& families, int limit,
                           std::chrono::milliseconds wait) {
  constexpr auto kPoll = std::chrono::milliseconds(20);
  const auto deadline = std::chrono::steady_clock::now() + wait;
  for (rocksdb::ColumnFamilyHandle* family : families) {
    for (;;) {
      // A string property (GetIntProperty does not answer it).
      std::string files_text;
      uint64_t files = 0;
      if (db.GetProperty(family, "rocksdb.num-files-at-level0", &files_text)) {
        std::from_chars(files_text.data(), files_text.data() + files_text.size(), files);
      }
      if (files < static_cast<uint64_t>(std::max(1, limit))) break;
      if (std::chrono::steady_clock::now() >= deadline) {
        return Status::Unavailable(fmt::format("{} holds {} files in level 0 (compaction is behind); the checkpoint "
                                               "waits for it and is retried",
                                               family->GetName(), files),
                                   "COMPACTION_BEHIND");
      }
      std::this_thread::sleep_for(kPoll);
    }
  }
  return Status::Ok();
}

}  // namespace

Status ShardStore::Write(StoreWrite write) {
  // One file per family the checkpoint touches, ingested together: the
  // MANIFEST records all of them or none, so after a crash the store holds
  // whole checkpoints, records and watermarks alike.
  std::map<int64_t, FamilyRecords> by_day;
  for (auto& [day, counters] : write.day_counters) {
    if (!counters.empty()) by_day[day].counters = std::move(counters);
  }
  // Each day's lists sized once (a checkpoint's memory is charged by the
  // record: MemTable::bytes()).
  std::map<int64_t, std::array<size_t, 3>> sizes;  // day -> increments, puts, sketches
  for (const StoreWrite::Increment& r : write.increments) ++sizes[r.day][0];
  for (const StoreWrite::Put& r : write.puts) ++sizes[r.day][1];
  for (const StoreWrite::Unite& r : write.sketches) ++sizes[r.day][2];
  for (const auto& [day, n] : sizes) {
    FamilyRecords& records = by_day[day];
    records.counters.reserve(records.counters.size() + n[0]);
    records.puts.reserve(n[1]);
    records.sketches.reserve(n[2]);
  }
  for (const StoreWrite::Increment& r : write.increments) {
    by_day[r.day].counters.push_back(SortableCounter{SortKey(r.key), r.delta});
  }
  for (const StoreWrite::Put& r : write.puts) by_day[r.day].puts.push_back(&r);
  for (const StoreWrite::Unite& r : write.sketches) by_day[r.day].sketches.push_back(&r);
  // The watermarks as puts into the metadata family: their text is built
  // first and never moves (reserved), as the puts view it.
  std::vector<std::pair<std::string, std::string>> watermark_text;
  watermark_text.reserve(write.watermarks.size());
  for (const auto& [source, seq] : write.watermarks) {
    watermark_text.emplace_back(std::string(kWatermarkPrefix) + source, std::to_string(seq));
  }
  std::vector<StoreWrite::Put> watermark_puts;
  for (const auto& [key, value] : watermark_text) watermark_puts.push_back({0, key, value});
  FamilyRecords meta_records;
  for (const StoreWrite::Put& put : watermark_puts) meta_records.puts.push_back(&put);

  // The families first (kept alive while ingesting), and room in their
  // level 0 before any file is written: a checkpoint that times out there
  // has written nothing its retry must write again.
  std::vector<FamilyPtr> keep;
  std::vector<rocksdb::ColumnFamilyHandle*> families;
  for (const auto& [day, records] : by_day) {
    FamilyPtr family = impl_->DayFamily(day);
    if (!family) return Status::Internal(fmt::format("no store for {}", FormatDate(day)));
    families.push_back(family.get());
    keep.push_back(std::move(family));
  }
  if (!meta_records.empty()) families.push_back(impl_->meta.get());
  const int limit = impl_->options.level0_wait_files > 0 ? impl_->options.level0_wait_files
                                                         : impl_->day_file_options.level0_slowdown_writes_trigger;
  CLICKATRON_RETURN_IF_ERROR(WaitForRoomInLevel0(*impl_->core->db, families, limit,
                                                 std::chrono::milliseconds(impl_->options.level0_wait_ms)));

  std::vector<std::string> files;
  std::vector<rocksdb::IngestExternalFileArg> args;
  rocksdb::IngestExternalFileOptions ingest;
  ingest.move_files = true;            // hard links: the bytes are written once
  ingest.write_global_seqno = false;   // the MANIFEST holds it: no rewrite of the file
  auto stage = [&](rocksdb::ColumnFamilyHandle* family, const rocksdb::Options& options, FamilyRecords& records,
                   std::string_view name) -> Status {
    std::string path = fmt::format("{}/{}-{}.sst", impl_->staging, ++impl_->staged_files, name);
    files.push_back(path);
    CLICKATRON_RETURN_IF_ERROR(WriteCheckpointFile(options, family, path, records));
    rocksdb::IngestExternalFileArg arg;
    arg.column_family = family;
    arg.external_files = {std::move(path)};
    arg.options = ingest;
    args.push_back(std::move(arg));
    return Status::Ok();
  };
  Status st;
  size_t next = 0;
  for (auto& [day, records] : by_day) {
    st = stage(families[next++], impl_->day_file_options, records, DayFamilyName(day));
    if (!st.ok()) break;
  }
  if (st.ok() && !meta_records.empty()) st = stage(impl_->meta.get(), impl_->meta_file_options, meta_records, "meta");
  if (st.ok() && write.before_ingest) st = write.before_ingest(files);
  if (st.ok() && !args.empty()) {
    st = FromRocks(impl_->core->db->IngestExternalFiles(args), "ingesting a checkpoint's files");
    impl_->version.fetch_add(1);  // a failed ingest changes nothing, but counting it costs nothing
  }
  // Ingested files were linked into the store; whatever is left here
  // (all of them after a failure) goes.
  for (const std::string& path : files) std::remove(path.c_str());
  return st;
}

Status ShardStore::Resume() { return FromRocks(impl_->core->db->Resume(), "resuming the store after an error"); }

SnapshotPtr ShardStore::Snapshot() const {
  return std::make_shared<SnapshotImpl>(impl_->core, impl_->version.load());
}

uint64_t ShardStore::version() const { return impl_->version.load(); }

Result<std::optional<std::string>> ShardStore::Get(int64_t day, std::string_view key, const StoreSnapshot* at) const {
  // Held while reading: a day dropped meanwhile keeps its handle until then.
  const FamilyPtr cf = impl_->DayFamily(day);
  if (!cf) return std::optional<std::string>();
  std::string value;
  rocksdb::ReadOptions ro;
  ro.snapshot = RocksSnapshot(at);
  rocksdb::Status s = impl_->core->db->Get(ro, cf.get(), ToSlice(key), &value);
  if (s.IsNotFound()) return std::optional<std::string>();
  if (!s.ok()) return FromRocks(s, fmt::format("reading {}", QuoteForMessage(key)));
  return std::optional<std::string>(std::move(value));
}

Result<std::unique_ptr<StoreCursor>> ShardStore::NewCursor(int64_t day, const CursorOptions& options) const {
  FamilyPtr family = impl_->DayFamily(day);
  if (!family) return Status::NotFound(fmt::format("no store for {}", FormatDate(day)));
  return std::unique_ptr<StoreCursor>(new CursorImpl(impl_->core, std::move(family), options));
}

Result<std::optional<std::string>> ShardStore::GetMeta(std::string_view key) const {
  std::string value;
  rocksdb::Status s = impl_->core->db->Get(rocksdb::ReadOptions(), impl_->meta.get(), ToSlice(key), &value);
  if (s.IsNotFound()) return std::optional<std::string>();
  if (!s.ok()) return FromRocks(s, fmt::format("reading metadata {}", key));
  return std::optional<std::string>(std::move(value));
}

Result<uint64_t> ShardStore::DeleteMatching(int64_t day,
                                            const std::function<bool(std::string_view key)>& matches) {
  FamilyPtr family;
  {
    std::lock_guard lock(impl_->days_mu);
    auto it = impl_->days.find(day);
    if (it == impl_->days.end()) return uint64_t{0};
    family = it->second;
  }
  rocksdb::WriteBatch batch;
  uint64_t deleted = 0;
  rocksdb::ReadOptions every_record;
  every_record.total_order_seek = true;
  std::unique_ptr<rocksdb::Iterator> it(impl_->core->db->NewIterator(every_record, family.get()));
  for (it->SeekToFirst(); it->Valid(); it->Next()) {
    if (!matches(it->key().ToStringView())) continue;
    CLICKATRON_RETURN_IF_ERROR(FromRocks(batch.Delete(family.get(), it->key()), "deleting a record"));
    ++deleted;
  }
  CLICKATRON_RETURN_IF_ERROR(FromRocks(it->status(), fmt::format("reading the store for {}", FormatDate(day))));
  if (deleted == 0) return deleted;
  rocksdb::WriteOptions wo;
  wo.sync = true;
  CLICKATRON_RETURN_IF_ERROR(FromRocks(impl_->core->db->Write(wo, &batch),
                                       fmt::format("deleting records of {}", FormatDate(day))));
  impl_->version.fetch_add(1);
  return deleted;
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
  const FamilyPtr cf = impl_->DayFamily(day);
  uint64_t value = 0;
  if (!cf || !impl_->core->db->GetIntProperty(cf.get(), property, &value)) return std::nullopt;
  return value;
}

StoreMemory ShardStore::Memory() const {
  StoreMemory m;
  m.block_cache_bytes = impl_->cache->GetUsage();
  m.block_cache_pinned_bytes = impl_->cache->GetPinnedUsage();
  m.block_cache_capacity_bytes = impl_->cache->GetCapacity();
  m.write_buffer_bytes = impl_->write_buffers->memory_usage();
  m.write_buffer_bound_bytes = impl_->write_buffers->buffer_size();
  return m;
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
