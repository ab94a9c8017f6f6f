// Data generator and timing driver for scripts/bench-rebuild.
//
//   clickatron-rebuild-bench gen-day --records N --out FILE [--stride S]
//       N unique realtime records of 2012-03-25 (totals and subtotals, hot keys
//       with several hours), in a scrambled order, as an export would hold them
//       after a bulk load (the worst case for the sort).
//   clickatron-rebuild-bench gen-archive --records M --shards K --out-dir DIR
//       generation 1 of an archive with M records up to 2012-03-24, one sorted
//       file per shard with its manifest (written in order: no sort needed),
//       as the rebuild leaves it: each day's subtotal hours with their day
//       record and span records, and manifests that say so (format 2; it has
//       no unique records), so the pipeline takes the nightly path, not the
//       one-time conversion of a file without them.
//   clickatron-rebuild-bench pipeline --day FILE --archive-dir DIR --work-dir W
//       --shards K --memory-mb MB --threads T
//       the rebuild's own steps on them: convert + external sort of the day
//       (SortInputs), then merge with the archive + split + manifests
//       (BuildGeneration, backup off). Prints the figures, one "name value" a line.
//       --engine-config FILE: the merge tasks run on FILE's [rebuild] engine.
//       --restate FILE: the generation also folds a restatement of namespace u
//       over 2012-03-24 (the archive's last day) from FILE (realtime lines),
//       queued as `clickatron-rebuild restate` queues one, taken in before the
//       timed merge: what a restatement adds to the nightly merge.
//   clickatron-rebuild-bench span-bytes --in FILE
//       FILE (an archive file) through the rebuild's day and span step, as its
//       one-time conversion reads it: the bytes of its hours, day records and
//       span records of each level, counters and unique records apart. What
//       the span levels cost, to weigh against what they save a reader.
//   clickatron-rebuild-bench sort --day FILE --out FILE --work-dir W --memory-mb MB --threads T
//       the convert + external sort step alone (SortInputs), for profiling it and
//       checking its output against an earlier build's byte for byte.
#include <sys/resource.h>

#include <CLI/CLI.hpp>

#include <algorithm>
#include <chrono>
#include <optional>
#include <cstdio>
#include <memory>

#include <fmt/format.h>

#include "archive_state.h"
#include "day_records.h"
#include "clickatron/file_util.h"
#include "clickatron/record.h"
#include "clickatron/manifest.h"
#include "clickatron/shard.h"
#include "clickatron/ymdh.h"
#include "engine/engine.h"
#include "bulk_load.h"
#include "generation.h"
#include "restate.h"
#include "sort_shard_task.h"
#include "split.h"
#include "sortmerge/line_io.h"
#include "sortmerge/progress.h"
#include "sort_inputs.h"
#include "split.h"

namespace cr = clickatron::rebuild;
using clickatron::Status;

namespace {

constexpr char kB32[] = "0123456789abcdefghijklmnopqrstuv";

int Fail(const Status& st) {
  std::fprintf(stderr, "bench: %s\n", st.ToString().c_str());
  return 1;
}

uint64_t Gcd(uint64_t a, uint64_t b) {
  while (b != 0) {
    const uint64_t t = a % b;
    a = b;
    b = t;
  }
  return a;
}

int GenDay(uint64_t records, uint64_t stride, const std::string& out) {
  auto writer = cr::LineWriter::Create(out, {.buffer_bytes = 4u << 20, .fsync = false});
  if (!writer.ok()) return Fail(writer.status());
  // j -> p = j * A mod N visits every p once, in a scrambled order.
  uint64_t a = 1000003;
  while (Gcd(a, records) != 1) a += 2;
  static const char* kCountries[] = {"US", "JP", "DE"};
  for (uint64_t j = 0; j < records; ++j) {
    const uint64_t p = static_cast<uint64_t>((static_cast<unsigned __int128>(j) * a) % records);
    const uint64_t t = p / 16;
    const uint64_t r = p % 16;
    const uint64_t tkey = t * stride;
    const uint64_t first_hour = (t * 7) % 20;
    const uint64_t count = 1 + ((p * 2654435761u) >> 7) % 100;
    std::string line;
    if (r < 4) {
      line = fmt::format("u|k{:08d}.c3p{},{}", tkey, kB32[first_hour + r], count);
    } else {
      const uint64_t q = r - 4;
      line = fmt::format("c.u|k{:08d}.{}.c3p{},{}", tkey, kCountries[q % 3], kB32[first_hour + q / 3], count);
    }
    if (Status st = (*writer)->Put(line); !st.ok()) return Fail(st);
  }
  if (Status st = (*writer)->Finish(); !st.ok()) return Fail(st);
  return 0;
}

int GenArchive(uint64_t records, int shards, const std::string& dir) {
  if (Status st = clickatron::MakeDirs(dir); !st.ok()) return Fail(st);
  std::vector<std::unique_ptr<cr::ShardFileWriter>> writers;
  for (int s = 0; s < shards; ++s) {
    auto w = cr::ShardFileWriter::Create(fmt::format("{}/shard-{}.csv", dir, s));
    if (!w.ok()) return Fail(w.status());
    writers.push_back(std::move(w).value());
  }
  // 6 + kMaxSpanLevel records per tkey: a day of 4 subtotal hours, its day
  // record, the record of each span holding the day, and 1 total with 8 hour
  // columns.
  const uint64_t tkeys = std::max<uint64_t>(1, records / (6 + clickatron::kMaxSpanLevel));
  const auto shard_of = [&](uint64_t t) {
    return clickatron::ShardOf(fmt::format("u|k{:08d}", t), static_cast<uint32_t>(shards));
  };
  // "c.u|…" lines sort before "u|…" lines: two passes keep the files sorted.
  for (uint64_t t = 0; t < tkeys; ++t) {
    const char day = kB32[1 + t % 24];
    // The day record sorts before its hours ("c3X," < "c3X0,"): their sum.
    const std::string day_line = fmt::format("c.u|k{:08d}.c3{},DE:{} JP:{} US:{}", t, day, 4 * (1 + t % 3),
                                             4 * (1 + t % 5), 4 * (2 + t % 7));
    if (Status st = writers[shard_of(t)]->Put(day_line); !st.ok()) return Fail(st);
    for (int h = 0; h < 4; ++h) {
      const std::string line = fmt::format("c.u|k{:08d}.c3{}{},DE:{} JP:{} US:{}", t, day, kB32[h], 1 + t % 3,
                                           1 + t % 5, 2 + t % 7);
      if (Status st = writers[shard_of(t)]->Put(line); !st.ok()) return Fail(st);
    }
    // The day's spans, each the day's sum (the key's only day), after its
    // hours in key order: by last day, then level.
    const int64_t day_number = clickatron::DaysFromCivil({2012, 3, static_cast<int>(1 + t % 24)});
    std::vector<clickatron::DaySpan> spans;
    for (int level = 1; level <= clickatron::kMaxSpanLevel; ++level) {
      spans.push_back(clickatron::SpanHolding(day_number, level));
    }
    std::sort(spans.begin(), spans.end(), clickatron::SpanKeyLess);
    for (const clickatron::DaySpan& span : spans) {
      auto code = clickatron::SpanCode(span);
      if (!code.ok()) return Fail(code.status());
      const std::string line = fmt::format("c.u|k{:08d}.{}{}", t, *code, day_line.substr(day_line.find(',')));
      if (Status st = writers[shard_of(t)]->Put(line); !st.ok()) return Fail(st);
    }
  }
  for (uint64_t t = 0; t < tkeys; ++t) {
    std::string line = fmt::format("u|k{:08d},", t);
    for (int i = 0; i < 8; ++i) {
      if (i > 0) line += ' ';
      line += fmt::format("c3{}{}:{}", kB32[1 + i * 3], kB32[t % 24], 1 + (t + i) % 9);
    }
    if (Status st = writers[shard_of(t)]->Put(line); !st.ok()) return Fail(st);
  }
  for (int s = 0; s < shards; ++s) {
    if (Status st = writers[s]->Finish(); !st.ok()) return Fail(st);
    clickatron::Manifest m;
    m.generation = 1;
    m.shard = s;
    m.shard_count = shards;
    m.last_day = "2012-03-24";
    m.format = clickatron::kArchiveFormat;
    m.day_subtotals = true;
    m.day_subtotals_every_day = true;
    m.day_uniques_every_day = true;  // it has no unique records: every day with some has its day record
    writers[s]->Describe(&m);
    if (Status st = clickatron::WriteManifestAtomically(
            clickatron::ManifestPathFor(fmt::format("{}/shard-{}.csv", dir, s)), m);
        !st.ok()) {
      return Fail(st);
    }
  }
  return 0;
}

// User + system CPU seconds of the whole process (every thread) so far.
double CpuSeconds() {
  rusage usage{};
  ::getrusage(RUSAGE_SELF, &usage);
  return static_cast<double>(usage.ru_utime.tv_sec + usage.ru_stime.tv_sec) +
         static_cast<double>(usage.ru_utime.tv_usec + usage.ru_stime.tv_usec) / 1e6;
}

// The sort step as the nightly run sets it up for one day file.
cr::SortInputsOptions DaySort(const std::string& day, const std::string& output, const std::string& work_dir,
                              uint64_t memory_mb, int threads) {
  cr::SortInputsOptions sort;
  sort.inputs = {day};
  sort.output = output;
  sort.rejects_path = work_dir + "/rejects.txt";
  sort.temp_dir = work_dir + "/tmp";
  sort.memory_bytes = memory_mb << 20;
  sort.threads = threads;
  return sort;
}

double Since(std::chrono::steady_clock::time_point start) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
}

int Pipeline(const std::string& day, const std::string& archive_dir, const std::string& work_dir, int shards,
             uint64_t memory_mb, int threads, const std::string& engine_config, const std::string& restate) {
  clickatron::ClusterConfig cluster;
  if (!engine_config.empty()) {
    // A cluster file naming the engine ([rebuild] engine = "gnu-parallel"):
    // the merge tasks run there, and the hosts load this file.
    auto loaded = clickatron::ClusterConfig::Load(engine_config);
    if (!loaded.ok()) return Fail(loaded.status());
    cluster = std::move(loaded).value();
    cluster.members.clear();
  }
  cluster.archive_shards = shards;
  cluster.rebuild.work_dir = work_dir;
  cluster.rebuild.backup_dir = work_dir + "/backup";
  cluster.rebuild.memory_mb = memory_mb;
  cluster.rebuild.threads = threads;
  for (int s = 0; s < shards; ++s) {
    clickatron::MemberConfig m;
    m.name = fmt::format("archive-{}", s);
    m.role = clickatron::MemberRole::kArchive;
    m.shard = s;
    m.file = fmt::format("{}/shard-{}.csv", archive_dir, s);
    cluster.members.push_back(m);
  }
  if (Status st = clickatron::MakeDirs(work_dir); !st.ok()) return Fail(st);

  const auto t0 = std::chrono::steady_clock::now();
  const double cpu0 = CpuSeconds();
  const cr::SortInputsOptions sort = DaySort(day, work_dir + "/sorted.csv", work_dir, memory_mb, threads);
  auto sorted = cr::SortInputs(sort);
  if (!sorted.ok()) return Fail(sorted.status());
  // The day cut by archive shard, as a sort-shard task leaves it.
  const cr::TaskPaths day_task{work_dir + "/day-task"};
  std::vector<std::string> parts;
  for (int s = 0; s < shards; ++s) parts.push_back(cr::SortShardPart(day_task, s));
  // The generation build reads the day task's spec for the archive shard
  // count its parts were cut into, as the pipeline's sort task writes it.
  cr::SortShardSpec day_spec;
  day_spec.archive_shards = shards;
  if (Status st = cr::WriteTaskSpec(day_task, day_spec.ToJson()); !st.ok()) return Fail(st);
  if (Status st = clickatron::MakeDirs(day_task.Out()); !st.ok()) return Fail(st);
  if (Status st = cr::SplitSortedFile(sort.output, static_cast<uint32_t>(shards), parts); !st.ok()) return Fail(st);
  const double sort_seconds = Since(t0);
  const double sort_cpu = CpuSeconds() - cpu0;

  if (!restate.empty()) {
    // Queued as the restate command queues it; there are no API nodes to seal.
    cr::RestateOptions options;
    options.ns = "u";
    options.from_day = options.to_day = "2012-03-24";
    options.files = {restate};
    cr::BulkLoadOptions load;
    load.files = options.files;
    load.check_prior = false;
    load.before_marker = [&](const std::string& id) {
      return cr::WriteRestatementFiles(cr::WorkDir(work_dir), id, options, {});
    };
    auto queued = cr::QueueBulkLoad(cluster, load);
    if (!queued.ok()) return Fail(queued.status());
  }
  const double cpu_merge_start = CpuSeconds();
  const auto t1 = std::chrono::steady_clock::now();
  // The previous generation is the generator's files (no replicas here).
  std::optional<cr::ServingArchive> previous(std::in_place);
  previous->shard_count = shards;
  for (const clickatron::MemberConfig& m : cluster.members) {
    auto manifest = clickatron::ReadManifest(clickatron::ManifestPathFor(m.file));
    if (!manifest.ok()) return Fail(manifest.status());
    previous->generation = manifest->generation;
    previous->last_day = std::max(previous->last_day, manifest->last_day);
    previous->files.push_back(m.file);
    previous->manifests.push_back(*manifest);
  }
  auto engine = cr::MakeEngine(cluster);
  if (!engine.ok()) return Fail(engine.status());
  cr::BuildOptions build;
  build.cluster = &cluster;
  build.previous = &previous.value();
  build.engine = engine->get();
  build.day = "2012-03-25";
  build.sort_tasks = {day_task};
  build.include_late = false;
  build.include_queue = !restate.empty();
  build.backup = false;
  auto plan = cr::BuildGeneration(build);
  if (!plan.ok()) return Fail(plan.status());
  const double merge_seconds = Since(t1);
  const double merge_cpu = CpuSeconds() - cpu_merge_start;

  uint64_t archive_in = 0, archive_in_bytes = 0, out_records = 0, out_bytes = 0, nightly_shards = 0;
  for (const auto& m : previous->manifests) {
    archive_in += m.records;
    archive_in_bytes += m.bytes;
    // Whole day and span records: the nightly merge; else the one-time conversion.
    if (m.SpanRecordsWhole()) ++nightly_shards;
  }
  for (const auto& m : plan->manifests) {
    out_records += m.records;
    out_bytes += m.bytes;
  }
  rusage usage{};
  ::getrusage(RUSAGE_SELF, &usage);
  std::printf("day_records %llu\n", static_cast<unsigned long long>(sorted->lines));
  std::printf("day_bytes %llu\n", static_cast<unsigned long long>(sorted->bytes));
  std::printf("day_sorted_records %llu\n", static_cast<unsigned long long>(sorted->records));
  std::printf("sort_runs %llu\n", static_cast<unsigned long long>(sorted->runs));
  std::printf("sort_seconds %.3f\n", sort_seconds);
  std::printf("sort_cpu_seconds %.3f\n", sort_cpu);
  std::printf("archive_records %llu\n", static_cast<unsigned long long>(archive_in));
  std::printf("archive_bytes %llu\n", static_cast<unsigned long long>(archive_in_bytes));
  std::printf("nightly_path_shards %llu\n", static_cast<unsigned long long>(nightly_shards));
  std::printf("merge_seconds %.3f\n", merge_seconds);
  std::printf("merge_cpu_seconds %.3f\n", merge_cpu);
  std::printf("output_records %llu\n", static_cast<unsigned long long>(out_records));
  std::printf("output_bytes %llu\n", static_cast<unsigned long long>(out_bytes));
  std::printf("max_rss_kb %ld\n", usage.ru_maxrss);
  std::printf("engine %s\n", cluster.rebuild.engine.c_str());
  std::printf("restated %d\n", restate.empty() ? 0 : 1);
  return 0;
}

int SortOnly(const std::string& day, const std::string& out, const std::string& work_dir, uint64_t memory_mb,
             int threads) {
  if (Status st = clickatron::MakeDirs(work_dir); !st.ok()) return Fail(st);
  const auto t0 = std::chrono::steady_clock::now();
  const double cpu0 = CpuSeconds();
  auto sorted = cr::SortInputs(DaySort(day, out, work_dir, memory_mb, threads));
  if (!sorted.ok()) return Fail(sorted.status());
  rusage usage{};
  ::getrusage(RUSAGE_SELF, &usage);
  std::printf("day_records %llu\n", static_cast<unsigned long long>(sorted->lines));
  std::printf("day_sorted_records %llu\n", static_cast<unsigned long long>(sorted->records));
  std::printf("sort_runs %llu\n", static_cast<unsigned long long>(sorted->runs));
  std::printf("sort_seconds %.3f\n", Since(t0));
  std::printf("sort_cpu_seconds %.3f\n", CpuSeconds() - cpu0);
  std::printf("max_rss_kb %ld\n", usage.ru_maxrss);
  return 0;
}

}  // namespace

// Bytes of an archive file's records by kind after the day and span step.
int SpanBytes(const std::string& in) {
  auto mapped = clickatron::MappedFile::Open(in);
  if (!mapped.ok()) return Fail(mapped.status());
  cr::TextLineSource lines((*mapped)->data(), in);
  cr::DayRecordSource days(&lines);
  // [unique?][0: other lines, 1: hours, 2: day records, 3 + k - 1: level k]
  std::vector<std::vector<uint64_t>> bytes(2, std::vector<uint64_t>(3 + clickatron::kMaxSpanLevel, 0));
  std::string_view line;
  while (days.Next(&line)) {
    const std::string_view key = clickatron::LineKey(line);
    const clickatron::RecordType type = clickatron::RecordTypeOfKey(key);
    const size_t unique = clickatron::IsUniqueType(type) ? 1 : 0;
    size_t kind = 0;
    if (clickatron::IsDayType(type)) {
      auto span = clickatron::SpanFromCode(key.substr(key.rfind('.') + 1));
      if (!span.ok()) return Fail(span.status());
      kind = 2 + static_cast<size_t>(span->level);
    } else if (type != clickatron::RecordType::kTotal && type != clickatron::RecordType::kLookup) {
      kind = 1;
    }
    bytes[unique][kind] += line.size() + 1;
  }
  if (!days.status().ok()) return Fail(days.status());
  for (size_t unique = 0; unique < 2; ++unique) {
    const char* what = unique ? "unique" : "counter";
    std::printf("%s_other_bytes %llu\n", what, static_cast<unsigned long long>(bytes[unique][0]));
    std::printf("%s_hour_bytes %llu\n", what, static_cast<unsigned long long>(bytes[unique][1]));
    std::printf("%s_day_bytes %llu\n", what, static_cast<unsigned long long>(bytes[unique][2]));
    for (int level = 1; level <= clickatron::kMaxSpanLevel; ++level) {
      std::printf("%s_span%d_bytes %llu\n", what, level,
                  static_cast<unsigned long long>(bytes[unique][2 + static_cast<size_t>(level)]));
    }
  }
  return 0;
}

int main(int argc, char** argv) {
  CLI::App app{"clickatron-rebuild-bench"};
  app.require_subcommand(1);
  uint64_t records = 0;
  uint64_t stride = 8;
  std::string out, dir, day, work;
  int shards = 2, threads = 2;
  uint64_t memory_mb = 512;
  auto* gen_day = app.add_subcommand("gen-day");
  gen_day->add_option("--records", records)->required();
  gen_day->add_option("--stride", stride);
  gen_day->add_option("--out", out)->required();
  auto* gen_archive = app.add_subcommand("gen-archive");
  gen_archive->add_option("--records", records)->required();
  gen_archive->add_option("--shards", shards);
  gen_archive->add_option("--out-dir", dir)->required();
  auto* pipeline = app.add_subcommand("pipeline");
  pipeline->add_option("--day", day)->required();
  pipeline->add_option("--archive-dir", dir)->required();
  pipeline->add_option("--work-dir", work)->required();
  pipeline->add_option("--shards", shards);
  pipeline->add_option("--memory-mb", memory_mb);
  pipeline->add_option("--threads", threads);
  std::string engine_config;
  pipeline->add_option("--engine-config", engine_config, "a cluster file whose [rebuild] engine runs the merges");
  std::string restate;
  pipeline->add_option("--restate", restate, "realtime lines of u on 2012-03-24: fold them as a restatement");
  auto* sort_only = app.add_subcommand("sort");
  sort_only->add_option("--day", day)->required();
  sort_only->add_option("--out", out)->required();
  sort_only->add_option("--work-dir", work)->required();
  sort_only->add_option("--memory-mb", memory_mb);
  sort_only->add_option("--threads", threads);
  std::string in;
  auto* span_bytes = app.add_subcommand("span-bytes");
  span_bytes->add_option("--in", in)->required();
  CLI11_PARSE(app, argc, argv);
  if (span_bytes->parsed()) return SpanBytes(in);
  if (gen_day->parsed()) return GenDay(records, stride, out);
  if (gen_archive->parsed()) return GenArchive(records, shards, dir);
  if (sort_only->parsed()) return SortOnly(day, out, work, memory_mb, threads);
  return Pipeline(day, dir, work, shards, memory_mb, threads, engine_config, restate);
}
