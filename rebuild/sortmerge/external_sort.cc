#include "sortmerge/external_sort.h"

#include <sys/mman.h>
#include <unistd.h>

#include <algorithm>
#include <cstdlib>
#include <condition_variable>
#include <cstring>
#include <deque>
#include <mutex>
#include <new>
#include <thread>
#include <vector>

#include <fmt/format.h>

#include "clickatron/file_util.h"
#include "clickatron/parallel_for.h"
#include "clickatron/record.h"
#include "sortmerge/line_combine.h"
#include "sortmerge/line_sort.h"
#include "sortmerge/merge.h"
#include "sortmerge/progress.h"
#include "sortmerge/range_merge.h"
#include "sortmerge/sorted_run.h"

namespace clickatron::rebuild {
namespace {

constexpr size_t kMinReadBuffer = 64u << 10;
constexpr size_t kMaxReadBuffer = 4u << 20;
constexpr uint64_t kMaxChunkBytes = 3ull << 30;  // offsets are 32-bit
constexpr uint64_t kMarksPerRun = 128;            // sparse run index (sorted_run.h)

// Lines grow from the front of one allocation, entries from the back, so
// lines + index never exceed the chunk's bytes.
// Chunk memory: 2 MiB aligned and marked for transparent huge pages, since a
// chunk is filled once from end to end and 4 KiB page faults on hundreds of
// megabytes cost more than the sort (a hint: without THP it is plain memory).
struct ChunkMemoryFree {
  void operator()(char* p) const { std::free(p); }
};
constexpr size_t kHugePage = 2u << 20;

std::unique_ptr<char[], ChunkMemoryFree> AllocateChunkMemory(size_t bytes) {
  char* p = nullptr;
  if (bytes >= 4 * kHugePage) {
    // Big chunks are whole huge pages (chunk_bytes is rounded down to them).
    const size_t rounded = (bytes + kHugePage - 1) & ~(kHugePage - 1);
    p = static_cast<char*>(std::aligned_alloc(kHugePage, rounded));
    if (p != nullptr) ::madvise(p, rounded, MADV_HUGEPAGE);
  } else {
    // Small ones (tiny bounds in tests) stay on 4 KiB pages: a huge page
    // would make the resident set larger than the bound.
    p = static_cast<char*>(std::malloc(bytes));
  }
  if (p == nullptr) throw std::bad_alloc();  // like operator new
  return std::unique_ptr<char[], ChunkMemoryFree>(p);
}

struct Chunk {
  explicit Chunk(size_t bytes) : capacity(bytes & ~size_t{15}), memory(AllocateChunkMemory(capacity)) {}
  size_t capacity;
  std::unique_ptr<char[], ChunkMemoryFree> memory;
  size_t text_used = 0;
  size_t count = 0;

  bool Fits(size_t length) const { return text_used + length + (count + 1) * sizeof(LineEntry) <= capacity; }
  LineEntry* entries() { return reinterpret_cast<LineEntry*>(memory.get() + capacity) - count; }
  const LineEntry* entries() const { return reinterpret_cast<const LineEntry*>(memory.get() + capacity) - count; }
  void Append(std::string_view line) {
    std::memcpy(memory.get() + text_used, line.data(), line.size());
    ++count;
    new (entries()) LineEntry{0, static_cast<uint32_t>(text_used), static_cast<uint32_t>(line.size())};
    text_used += line.size();
  }
  std::string_view Line(const LineEntry& e) const { return {memory.get() + e.offset, e.length}; }
  void Reset() {
    text_used = 0;
    count = 0;
  }
};

// Sorts a chunk's entries, with `threads` threads when it is worth it: each
// sorts a part, then the parts are merged in place.
Status SortChunk(Chunk* chunk, int threads) {
  LineEntry* begin = chunk->entries();
  const char* base = chunk->memory.get();
  const size_t n = chunk->count;
  if (threads < 2 || n < 100000) {
    SortLineEntries(begin, begin + n, base);
    return Status::Ok();
  }
  const size_t parts = static_cast<size_t>(threads);
  std::vector<LineEntry*> bounds;
  for (size_t i = 0; i <= parts; ++i) bounds.push_back(begin + n * i / parts);
  CLICKATRON_RETURN_IF_ERROR(ParallelFor(parts, parts, [&](size_t i) {
    SortLineEntries(bounds[i], bounds[i + 1], base);
    return Status::Ok();
  }));
  const auto less = [base](const LineEntry& a, const LineEntry& b) { return LineEntryLess(base, a, b); };
  for (size_t width = 1; width < parts; width *= 2) {
    for (size_t i = 0; i + width < parts; i += 2 * width) {
      std::inplace_merge(bounds[i], bounds[i + width], bounds[std::min(i + 2 * width, parts)], less);
    }
  }
  return Status::Ok();
}

// A sorted chunk (or the entries [begin, end) of it, which must start and
// end on key boundaries) as a source of combined lines: a key that occurs
// once is a view into the chunk (no copy); repeated keys are combined into a
// buffer.
class ChunkSource : public LineSource {
 public:
  explicit ChunkSource(const Chunk* chunk) : ChunkSource(chunk, 0, chunk->count) {}
  ChunkSource(const Chunk* chunk, size_t begin, size_t end)
      : chunk_(chunk),
        entries_(chunk->entries()),
        next_(begin),
        end_(end) {}
  bool Next(std::string_view* line) override {
    if (next_ >= end_ || !status_.ok()) return false;
    const std::string_view first = chunk_->Line(entries_[next_++]);
    const std::string_view key = LineKey(first);
    if (next_ == end_ || !HasKey(chunk_->Line(entries_[next_]), key)) {
      *line = first;
      return true;
    }
    combined_.assign(first);
    while (next_ < end_) {
      const std::string_view other = chunk_->Line(entries_[next_]);
      if (!HasKey(other, key)) break;
      status_ = CombineArchiveLineInto(&combined_, other);
      if (!status_.ok()) return false;
      ++next_;
    }
    *line = combined_;
    return true;
  }
  const Status& status() const override { return status_; }
  const std::string& name() const override { return name_; }

 private:
  // Whether `line`'s key is `key`: it starts with key + "," (a key holds no
  // ','), found without searching the line for its comma.
  static bool HasKey(std::string_view line, std::string_view key) {
    return line.size() > key.size() && line[key.size()] == ',' &&
           std::memcmp(line.data(), key.data(), key.size()) == 0;
  }

  const Chunk* chunk_;
  const LineEntry* entries_;
  size_t next_;
  size_t end_;
  std::string combined_;
  Status status_;
  std::string name_ = "in-memory chunk";
};

// A sorted chunk as an input of the range merge (positions are entry
// indexes). Equal keys are neighbours, so a cut at the first line of a key
// keeps them in one range.
class ChunkInput : public RangeInput {
 public:
  ChunkInput(const Chunk* chunk, uint64_t sample_every)
      : chunk_(chunk), entries_(chunk->entries()), sample_every_(sample_every) {}
  uint64_t end() const override { return chunk_->count; }
  uint64_t BytesBefore(uint64_t position) const override {
    uint64_t bytes = 0;
    for (uint64_t i = 0; i < position; ++i) bytes += entries_[i].length + 1;
    return bytes;
  }
  void Sample(std::vector<KeySample>* samples) const override {
    uint64_t since = 0;
    size_t current = samples->size();
    for (size_t i = 0; i < chunk_->count; ++i) {
      if (i == 0 || since >= sample_every_) {
        current = samples->size();
        samples->push_back({std::string(LineKey(chunk_->Line(entries_[i]))), 0});
        since = 0;
      }
      (*samples)[current].bytes += entries_[i].length + 1;
      since += entries_[i].length + 1;
    }
  }
  Result<uint64_t> Find(std::string_view key) const override {
    const LineEntry* found = std::partition_point(entries_, entries_ + chunk_->count, [&](const LineEntry& e) {
      return CompareArchiveKeys(LineKey(chunk_->Line(e)), key) < 0;
    });
    return static_cast<uint64_t>(found - entries_);
  }
  Result<std::unique_ptr<LineSource>> Open(uint64_t begin, uint64_t end, size_t /*buffer_bytes*/) const override {
    return std::unique_ptr<LineSource>(std::make_unique<ChunkSource>(chunk_, begin, end));
  }

 private:
  const Chunk* chunk_;
  const LineEntry* entries_;
  uint64_t sample_every_;
};

// Passes a sorted chunk's combined lines into `out`.
Status DrainChunk(Chunk* chunk, LineSink* out, uint64_t* lines_out) {
  ChunkSource source(chunk);
  std::string_view line;
  uint64_t lines = 0;
  while (source.Next(&line)) {
    CLICKATRON_RETURN_IF_ERROR(out->Put(line));
    ++lines;
  }
  CLICKATRON_RETURN_IF_ERROR(source.status());
  *lines_out = lines;
  return Status::Ok();
}

}  // namespace

struct ExternalSorter::Impl {
  ExternalSortOptions options;
  uint64_t chunk_bytes = 0;
  size_t max_chunks = 0;
  ExternalSortStats stats;

  std::unique_ptr<Chunk> current;
  std::mutex mutex;
  std::condition_variable changed;
  // Guarded by mutex:
  std::deque<std::unique_ptr<Chunk>> full;   // waiting for a worker
  std::vector<std::unique_ptr<Chunk>> spare; // sorted and spilled, ready for reuse
  size_t allocated = 0;
  size_t busy = 0;
  bool stop = false;
  Status error;
  std::vector<RunFile> runs;  // with their sparse key index
  uint64_t next_run = 0;
  uint64_t mark_every = 0;  // bytes between a run's index marks

  std::vector<std::thread> workers;

  // Producer mode: each producer's own chunk and counters, touched only by
  // the producer's thread until Finish().
  struct ProducerState {
    std::unique_ptr<Chunk> chunk;
    uint64_t lines = 0;
    uint64_t bytes = 0;
  };
  std::vector<ProducerState> producer_state;
  std::vector<std::unique_ptr<ExternalSorter::Producer>> producers;

  ~Impl() {
    {
      std::lock_guard<std::mutex> lock(mutex);
      stop = true;
    }
    changed.notify_all();
    for (auto& w : workers) w.join();
    for (const RunFile& run : runs) ::unlink(run.path.c_str());
    ::rmdir(options.temp_dir.c_str());  // only if empty: it may be shared
  }

  std::string NewRunPath() {
    std::lock_guard<std::mutex> lock(mutex);
    return fmt::format("{}/run-{:06d}.csv", options.temp_dir, next_run++);
  }

  Status SpillChunk(Chunk* chunk) {
    CLICKATRON_RETURN_IF_ERROR(SortChunk(chunk, 1));
    const std::string path = NewRunPath();
    auto writer = LineWriter::Create(path, {.buffer_bytes = 1u << 20, .fsync = false});
    if (!writer.ok()) return writer.status();
    RunFile run;
    RunIndexSink indexed(writer->get(), mark_every, &run);
    uint64_t lines_out = 0;
    CLICKATRON_RETURN_IF_ERROR(DrainChunk(chunk, &indexed, &lines_out));
    CLICKATRON_RETURN_IF_ERROR((*writer)->Finish());
    std::lock_guard<std::mutex> lock(mutex);
    runs.push_back(std::move(run));
    ++stats.runs;
    return Status::Ok();
  }

  void WorkerLoop() {
    std::unique_lock<std::mutex> lock(mutex);
    while (true) {
      changed.wait(lock, [&] { return stop || !full.empty(); });
      if (full.empty()) return;  // stop requested and nothing left
      std::unique_ptr<Chunk> chunk = std::move(full.front());
      full.pop_front();
      ++busy;
      const bool failed_already = !error.ok();
      lock.unlock();
      Status st = failed_already ? Status::Ok() : SpillChunk(chunk.get());
      chunk->Reset();
      lock.lock();
      if (!st.ok() && error.ok()) error = st;
      --busy;
      if (chunk->capacity == (chunk_bytes & ~uint64_t{15})) {
        spare.push_back(std::move(chunk));
      } else {
        --allocated;  // an oversized chunk for one long line: give it back
      }
      changed.notify_all();
    }
  }

  // A chunk to fill that can hold `length` bytes; waits for a worker to free one.
  Result<std::unique_ptr<Chunk>> Acquire(size_t length) {
    const size_t needed = length + sizeof(LineEntry) + 16;
    std::unique_lock<std::mutex> lock(mutex);
    changed.wait(lock, [&] { return !error.ok() || !spare.empty() || allocated < max_chunks; });
    if (!error.ok()) return error;
    if (needed <= chunk_bytes) {
      if (!spare.empty()) {
        std::unique_ptr<Chunk> chunk = std::move(spare.back());
        spare.pop_back();
        return chunk;
      }
      ++allocated;
      return std::make_unique<Chunk>(chunk_bytes);
    }
    // One line longer than a chunk: it gets a chunk of its own size.
    if (!spare.empty()) {
      spare.pop_back();  // keeps the count of live chunks within max_chunks
    } else {
      ++allocated;
    }
    return std::make_unique<Chunk>(needed);
  }

  void Submit(std::unique_ptr<Chunk> chunk) {
    {
      std::lock_guard<std::mutex> lock(mutex);
      full.push_back(std::move(chunk));
    }
    changed.notify_all();
  }

  // Waits until every submitted chunk is spilled; returns the first error.
  Status Drain() {
    std::unique_lock<std::mutex> lock(mutex);
    changed.wait(lock, [&] { return full.empty() && busy == 0; });
    return error;
  }

  // Merges `inputs` run files into one new run (an intermediate pass).
  Status MergeRunsInto(const std::vector<RunFile>& inputs, LineSink* out, size_t buffer_bytes) {
    std::vector<std::unique_ptr<LineReader>> readers;
    std::vector<LineSource*> sources;
    for (const RunFile& run : inputs) {
      auto reader = LineReader::Open(run.path, {.buffer_bytes = buffer_bytes});
      if (!reader.ok()) return reader.status();
      sources.push_back(reader->get());
      readers.push_back(std::move(reader).value());
    }
    MergeStats merge_stats;
    return MergeSortedSources(sources, out, {}, &merge_stats);
  }
};

Result<std::unique_ptr<ExternalSorter>> ExternalSorter::Create(ExternalSortOptions options) {
  if (options.temp_dir.empty()) return Status::InvalidArgument("external sort needs a temp_dir");
  CLICKATRON_RETURN_IF_ERROR(MakeDirs(options.temp_dir));
  auto impl = std::make_unique<Impl>();
  if (options.threads < 1) options.threads = 1;
  if (options.max_fan_in < 2) options.max_fan_in = 2;
  impl->options = options;
  // Producers each own one chunk and spill it themselves; otherwise one
  // chunk fills while each worker sorts one.
  impl->max_chunks = options.producers > 0 ? static_cast<size_t>(options.producers)
                                           : static_cast<size_t>(options.threads) + 1;
  // Room for what is not chunks: the input reader, a run writer per worker,
  // the output writer, and the process itself (code, stacks, allocator).
  const uint64_t reserve = std::min<uint64_t>(options.memory_bytes / 4, 16u << 20);
  impl->chunk_bytes = std::max<uint64_t>(4096, (options.memory_bytes - reserve) / impl->max_chunks);
  impl->chunk_bytes = std::min(impl->chunk_bytes, kMaxChunkBytes);
  // Whole huge pages when chunks are big enough to use them (see AllocateChunkMemory).
  if (impl->chunk_bytes >= 4 * kHugePage) impl->chunk_bytes &= ~uint64_t{kHugePage - 1};
  // ~128 index marks per run: ranges balanced to ~1% of the bytes, a cut
  // found by reading 1/128 of a run, and little memory even with hundreds
  // of runs (a bulk load) before the intermediate passes.
  impl->mark_every = std::max<uint64_t>(impl->chunk_bytes / kMarksPerRun, 256);
  Impl* raw = impl.get();
  if (options.producers > 0) {
    impl->producer_state.resize(static_cast<size_t>(options.producers));
    for (int i = 0; i < options.producers; ++i) {
      impl->producers.push_back(std::unique_ptr<Producer>(new Producer(raw, static_cast<size_t>(i))));
    }
  } else {
    for (int i = 0; i < options.threads; ++i) impl->workers.emplace_back([raw] { raw->WorkerLoop(); });
  }
  return std::unique_ptr<ExternalSorter>(new ExternalSorter(std::move(impl)));
}

ExternalSorter::ExternalSorter(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
ExternalSorter::~ExternalSorter() = default;

const ExternalSortStats& ExternalSorter::stats() const { return impl_->stats; }
uint64_t ExternalSorter::chunk_bytes() const { return impl_->chunk_bytes; }

ExternalSorter::Producer* ExternalSorter::producer(int i) { return impl_->producers[static_cast<size_t>(i)].get(); }

Status ExternalSorter::Producer::Add(std::string_view line) {
  Impl& s = *impl_;
  Impl::ProducerState& state = s.producer_state[index_];
  std::unique_ptr<Chunk>& chunk = state.chunk;
  if (!chunk || !chunk->Fits(line.size())) {
    if (chunk && chunk->count > 0) {
      CLICKATRON_RETURN_IF_ERROR(s.SpillChunk(chunk.get()));
      chunk->Reset();
    }
    // One line longer than a chunk gets a chunk of its own size (in place of
    // the producer's usual one, so the number of chunks stays the same).
    const size_t capacity = std::max<size_t>(line.size() + sizeof(LineEntry) + 16, s.chunk_bytes);
    if (!chunk || chunk->capacity != (capacity & ~size_t{15})) {
      chunk.reset();
      chunk = std::make_unique<Chunk>(capacity);
    }
  }
  chunk->Append(line);
  ++state.lines;
  state.bytes += line.size() + 1;
  return Status::Ok();
}

Status ExternalSorter::Add(std::string_view line) {
  Impl& s = *impl_;
  if (!s.current || !s.current->Fits(line.size())) {
    if (s.current && s.current->count > 0) s.Submit(std::move(s.current));
    auto chunk = s.Acquire(line.size());
    if (!chunk.ok()) return chunk.status();
    s.current = std::move(chunk).value();
  }
  s.current->Append(line);
  ++s.stats.lines_in;
  s.stats.bytes_in += line.size() + 1;
  return Status::Ok();
}

// Producer mode: the producers' last chunks, merged from memory when nothing
// was spilled; otherwise all but the fullest are spilled while it is sorted.
namespace {

Status MergeWithRuns(ExternalSorter::Impl& s, std::unique_ptr<Chunk> last, LineSink* out);

Status FinishProducers(ExternalSorter::Impl& s, LineSink* out) {
  using Impl = ExternalSorter::Impl;
  std::vector<std::unique_ptr<Chunk>> chunks;
  for (Impl::ProducerState& state : s.producer_state) {
    s.stats.lines_in += state.lines;
    s.stats.bytes_in += state.bytes;
    state.lines = state.bytes = 0;
    if (state.chunk && state.chunk->count > 0) chunks.push_back(std::move(state.chunk));
    state.chunk.reset();
  }
  std::sort(chunks.begin(), chunks.end(),
            [](const auto& a, const auto& b) { return a->text_used > b->text_used; });
  bool spilled = false;
  {
    std::lock_guard<std::mutex> lock(s.mutex);
    spilled = !s.runs.empty();
  }
  // Sorts (spilled: spills) chunks[1…] on threads of their own, chunks[0] here.
  CLICKATRON_RETURN_IF_ERROR(ParallelFor(chunks.size(), chunks.size(), [&](size_t i) {
    if (i == 0) return SortChunk(chunks[0].get(), chunks.size() == 1 && !spilled ? s.options.threads : 1);
    return spilled ? s.SpillChunk(chunks[i].get()) : SortChunk(chunks[i].get(), 1);
  }));
  if (!spilled) {
    std::vector<std::unique_ptr<ChunkSource>> owned;
    std::vector<LineSource*> sources;
    for (const auto& chunk : chunks) {
      owned.push_back(std::make_unique<ChunkSource>(chunk.get()));
      sources.push_back(owned.back().get());
    }
    MergeStats merge_stats;
    CLICKATRON_RETURN_IF_ERROR(MergeSortedSources(sources, out, {}, &merge_stats));
    s.stats.lines_out = merge_stats.lines_out;
    return Status::Ok();
  }
  chunks.resize(std::min<size_t>(chunks.size(), 1));  // the spilled ones' memory goes back first
  return MergeWithRuns(s, chunks.empty() ? nullptr : std::move(chunks[0]), out);
}

}  // namespace

Status ExternalSorter::Finish(LineSink* out) {
  Impl& s = *impl_;
  if (s.options.producers > 0) return FinishProducers(s, out);
  bool spilled = false;
  {
    std::lock_guard<std::mutex> lock(s.mutex);
    spilled = !s.full.empty() || s.busy > 0 || !s.runs.empty() || !s.error.ok();
  }
  if (!spilled) {
    // Everything fit in one chunk: sort it in memory with every thread.
    if (s.current) {
      CLICKATRON_RETURN_IF_ERROR(SortChunk(s.current.get(), s.options.threads));
      uint64_t lines_out = 0;
      CLICKATRON_RETURN_IF_ERROR(DrainChunk(s.current.get(), out, &lines_out));
      s.stats.lines_out = lines_out;
      s.current.reset();
    }
    return Status::Ok();
  }
  // The last chunk is not spilled: it is sorted here and merged from memory.
  CLICKATRON_RETURN_IF_ERROR(s.Drain());
  {
    // The other chunks are done with: give their memory back before merging.
    std::lock_guard<std::mutex> lock(s.mutex);
    s.allocated -= s.spare.size();
    s.spare.clear();
  }
  std::unique_ptr<Chunk> last = std::move(s.current);
  if (last && last->count == 0) last.reset();
  if (last) CLICKATRON_RETURN_IF_ERROR(SortChunk(last.get(), s.options.threads));
  return MergeWithRuns(s, std::move(last), out);
}

namespace {

// Merges the spilled runs and `last` (sorted, in memory; may be null) into
// `out`: passes of max_fan_in runs while there are too many to open at once,
// then the final merge by key range on every thread (range_merge.h).
Status MergeWithRuns(ExternalSorter::Impl& s, std::unique_ptr<Chunk> last, LineSink* out) {
  // Each open run gets a read buffer out of what the last chunk leaves.
  const uint64_t budget =
      s.options.memory_bytes > (last ? last->capacity : 0) ? s.options.memory_bytes - (last ? last->capacity : 0) : 0;
  const size_t fan_in =
      static_cast<size_t>(std::clamp<uint64_t>(budget / kMinReadBuffer, 2, s.options.max_fan_in));
  std::vector<RunFile> runs = s.runs;
  const auto buffer_for = [&](size_t k) {
    return static_cast<size_t>(std::clamp<uint64_t>(budget / (k + 1), 4096, kMaxReadBuffer));
  };
  while (runs.size() + (last ? 1 : 0) > fan_in) {
    const std::vector<RunFile> group(runs.begin(), runs.begin() + static_cast<long>(fan_in));
    const std::string path = s.NewRunPath();
    {
      std::lock_guard<std::mutex> lock(s.mutex);
      s.runs.push_back({.path = path, .bytes = 0, .marks = {}});  // so the destructor removes it on failure
    }
    auto writer = LineWriter::Create(path, {.buffer_bytes = buffer_for(fan_in), .fsync = false});
    if (!writer.ok()) return writer.status();
    uint64_t group_bytes = 0;
    for (const RunFile& run : group) group_bytes += run.bytes;
    RunFile merged;  // as many marks as a spilled run: its marks are further apart
    RunIndexSink indexed(writer->get(), std::max(s.mark_every, group_bytes / kMarksPerRun), &merged);
    CLICKATRON_RETURN_IF_ERROR(s.MergeRunsInto(group, &indexed, buffer_for(fan_in)));
    CLICKATRON_RETURN_IF_ERROR((*writer)->Finish());
    for (const RunFile& done : group) ::unlink(done.path.c_str());
    runs.erase(runs.begin(), runs.begin() + static_cast<long>(fan_in));
    runs.push_back(std::move(merged));
    ++s.stats.merge_passes;
  }
  std::vector<std::unique_ptr<RangeInput>> owned;
  std::vector<const RangeInput*> inputs;
  uint64_t input_bytes = 0;  // output is at most this (combining only shrinks it)
  for (const RunFile& run : runs) {
    owned.push_back(std::make_unique<RunInput>(&run));
    input_bytes += run.bytes;
  }
  if (last) {
    owned.push_back(std::make_unique<ChunkInput>(last.get(), s.mark_every));
    input_bytes += last->text_used + last->count;
  }
  for (const auto& input : owned) inputs.push_back(input.get());
  Progress progress(fmt::format("{}: merging {} runs", s.options.label, inputs.size()), input_bytes);
  MergeStats merge_stats;
  int ranges = 0;
  const Status merged = MergeByKeyRange(inputs, out,
                                        {.threads = s.options.threads,
                                         .temp_dir = s.options.temp_dir,
                                         .buffer_budget = budget,
                                         .min_bytes = s.options.parallel_merge_min_bytes,
                                         .progress = &progress},
                                        &merge_stats, &ranges);
  s.stats.final_merge_ranges = static_cast<uint64_t>(ranges);  // on failure too: where it failed
  CLICKATRON_RETURN_IF_ERROR(merged);
  progress.Finish();
  s.stats.lines_out = merge_stats.lines_out;
  for (const RunFile& run : runs) ::unlink(run.path.c_str());
  return Status::Ok();
}

}  // namespace

}  // namespace clickatron::rebuild
