// Data generator and timing driver for scripts/bench-rebuild (and bench-restate, bench-spans, bench-retention).
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
//   clickatron-rebuild-bench gen-history --keys K --days D --last-day YYYY-MM-DD --out-dir DIR
//       [--shards S] [--nights N] [--uniques]
//       generation 1 of an archive holding D days of history up to last-day for
//       K keys (k00000000…) of namespace u, as the rebuild folds it: each
//       shard's hours (totals, country subtotals c.u and, with --uniques,
//       unique records ~u) through its day and span step (DayRecordSource),
//       one sorted file per shard in DIR/archive with its manifest (format 2,
//       no retention). Also DIR/night-1.csv … night-N.csv: the realtime lines
//       of the N days after last-day, from the same model (the nights' days
//       to fold). A key is busy (5%: active on 70% of days, 3-12 hours, ~7
//       clicks an hour), steady (25%: 15% of days, 1-4 hours, ~2.5 clicks)
//       or sparse (70%: 2% of days, 1-2 hours, 1-2 clicks); each click has a
//       country (12, skewed) and, with --uniques, a visitor from the key's
//       pool (3000, 100 or 10 visitors), sketched by UniqueSketch as
//       `clickatron sketch --records` does. Prints its counts, one "name
//       value" a line: a data point is one counter value (a total's hour, a
//       subtotal's country in an hour); unique hour records are counted apart.
//   clickatron-rebuild-bench pipeline --day FILE --archive-dir DIR --work-dir W
//       --shards K --memory-mb MB --threads T [--night YYYY-MM-DD]
//       [--retention NS:HOURLY_DAYS:DAILY_DAYS:ZONE …]
//       the rebuild's own steps on them: convert + external sort of the day
//       (SortInputs), then merge with the archive + split + manifests
//       (BuildGeneration, backup off). Prints the figures, one "name value" a line.
//       --night: the day folded (2012-03-25, gen-day's). --retention: a
//       [[retention]] policy of the cluster file (retention.h), applied to
//       the generation as the nightly run applies it; the generation is
//       built in W/gen/G, whose directory the next run can take as its
//       --archive-dir (output_dir): generations chain as the rebuild's do.
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

#include <algorithm>
#include <array>
#include <chrono>
#include <cmath>
#include <optional>
#include <cstdio>
#include <deque>
#include <map>
#include <memory>
#include <thread>

#include <fmt/format.h>

#include "archive_state.h"
#include "day_records.h"
#include "clickatron/command_line.h"
#include "clickatron/file_util.h"
#include "clickatron/record.h"
#include "clickatron/manifest.h"
#include "clickatron/retention.h"
#include "clickatron/timezone.h"
#include "clickatron/unique_sketch.h"
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

// ---- gen-history: a generated history of years, folded as generation 1 ----

uint64_t SplitMix(uint64_t x) {
  x += 0x9e3779b97f4a7c15ull;
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ull;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebull;
  return x ^ (x >> 31);
}

// A small deterministic stream (splitmix64): the same seed, the same draws.
class Rng {
 public:
  explicit Rng(uint64_t seed) : state_(SplitMix(seed)) {}
  uint64_t Next() { return SplitMix(state_ += 0x9e3779b97f4a7c15ull); }
  double Uniform() { return static_cast<double>(Next() >> 11) * 0x1.0p-53; }  // [0, 1)
  uint64_t Below(uint64_t n) { return Next() % n; }

 private:
  uint64_t state_;
};

// What a kind of key does on a day (see the header comment).
struct KeyModel {
  double day_share;      // the share of days it has clicks on
  int min_hours, max_hours;
  double extra_clicks;   // clicks in an hour: 1 + exponential of this mean
  uint64_t visitors;     // its pool of visitors
};
constexpr KeyModel kKeyModels[] = {{0.70, 3, 12, 6.0, 3000}, {0.15, 1, 4, 1.5, 100}, {0.02, 1, 2, 0.5, 10}};
// Countries in code order (a subtotal's columns are sorted by skey), weights in percent.
constexpr const char* kHistoryCountries[] = {"BR", "CA", "DE", "ES", "FR", "GB", "IN", "IT", "JP", "KR", "MX", "US"};
constexpr int kCountryWeights[] = {7, 5, 10, 3, 8, 9, 7, 3, 12, 2, 4, 30};
constexpr size_t kHistoryCountryCount = std::size(kHistoryCountries);

struct HourClicks {
  int hour = 0;
  int64_t clicks = 0;
  std::array<int64_t, kHistoryCountryCount> by_country{};
};

const KeyModel& ModelOf(uint64_t key) {
  const uint64_t r = SplitMix(key * 2 + 1) % 100;
  return kKeyModels[r < 5 ? 0 : r < 30 ? 1 : 2];
}

// Key k's clicks on a day (days since 1970), by hour ascending; none when idle.
void KeyDay(uint64_t key, int64_t day, std::vector<HourClicks>* out) {
  out->clear();
  const KeyModel& model = ModelOf(key);
  Rng rng((key << 21) ^ static_cast<uint64_t>(day));
  if (rng.Uniform() >= model.day_share) return;
  const int hours = model.min_hours + static_cast<int>(rng.Below(static_cast<uint64_t>(model.max_hours - model.min_hours + 1)));
  std::array<int, 24> pick{};
  for (int h = 0; h < 24; ++h) pick[static_cast<size_t>(h)] = h;
  for (int i = 0; i < hours; ++i) {  // a partial shuffle: `hours` distinct hours
    std::swap(pick[static_cast<size_t>(i)], pick[static_cast<size_t>(i) + rng.Below(static_cast<uint64_t>(24 - i))]);
  }
  std::sort(pick.begin(), pick.begin() + hours);
  for (int i = 0; i < hours; ++i) {
    HourClicks h;
    h.hour = pick[static_cast<size_t>(i)];
    h.clicks = 1 + static_cast<int64_t>(std::min(1000.0, -std::log(1.0 - rng.Uniform()) * model.extra_clicks));
    for (int64_t c = 0; c < h.clicks; ++c) {
      int w = static_cast<int>(rng.Below(100));
      size_t country = 0;
      while (w >= kCountryWeights[country]) w -= kCountryWeights[country++];
      ++h.by_country[country];
    }
    out->push_back(h);
  }
}

// The sketch of an hour's visitors: one per click, from the key's pool
// (tokens "k<key>v<id>", hashed as `clickatron sketch` hashes them).
std::string HourSketch(uint64_t key, int64_t day, const HourClicks& h) {
  Rng rng(SplitMix(key) ^ (static_cast<uint64_t>(day) * 24 + static_cast<uint64_t>(h.hour)));
  const uint64_t pool = ModelOf(key).visitors;
  clickatron::UniqueSketch sketch;
  for (int64_t c = 0; c < h.clicks; ++c) {
    sketch.Add(clickatron::HashVisitor(fmt::format("k{}v{}", key, rng.Below(pool))));
  }
  return sketch.ToText();
}

struct History {
  uint64_t keys = 0;
  int64_t first_day = 0;   // of the history
  int64_t days = 0;        // of the history; the nights follow
  bool uniques = false;
  uint32_t shards = 1;
  std::vector<uint32_t> shard_of;   // by key
  std::vector<std::string> codes;   // hour codes: (day - first_day) * 24 + hour, history and nights
  const std::string& Code(int64_t day, int hour) const {
    return codes[static_cast<size_t>((day - first_day) * 24 + hour)];
  }
};

std::string KeyName(uint64_t key) { return fmt::format("k{:08d}", key); }

// What a history (or a night's lines) holds.
struct HistoryCounts {
  uint64_t key_hours = 0;        // = a total's hour columns
  uint64_t subtotal_points = 0;  // a country in a key-hour
  uint64_t unique_points = 0;    // unique hour records
  uint64_t clicks = 0;
  void Add(const HistoryCounts& o) {
    key_hours += o.key_hours;
    subtotal_points += o.subtotal_points;
    unique_points += o.unique_points;
    clicks += o.clicks;
  }
};

// One shard's hour lines of the history, sorted: every key's subtotal
// hours ("c.u|…" sorts first), then every key's total, then its unique hours.
class HistorySource : public cr::LineSource {
 public:
  HistorySource(const History* history, uint32_t shard)
      : history_(history), shard_(shard), name_(fmt::format("history shard {}", shard)) {}

  bool Next(std::string_view* line) override {
    while (pending_.empty()) {
      if (!Fill()) return false;
    }
    current_ = std::move(pending_.front());
    pending_.pop_front();
    *line = current_;
    return true;
  }
  const Status& status() const override { return status_; }
  const std::string& name() const override { return name_; }
  const HistoryCounts& counts() const { return counts_; }

 private:
  // The next key's lines of the current pass; false when all are done.
  bool Fill() {
    const int passes = history_->uniques ? 3 : 2;
    while (pass_ < passes) {
      if (key_ >= history_->keys) {
        ++pass_;
        key_ = 0;
        continue;
      }
      const uint64_t key = key_++;
      if (history_->shard_of[key] != shard_) continue;
      const std::string name = KeyName(key);
      std::string total = "u|" + name + ",";
      const size_t empty_total = total.size();
      for (int64_t day = history_->first_day; day < history_->first_day + history_->days; ++day) {
        KeyDay(key, day, &hours_);
        for (const HourClicks& h : hours_) {
          const std::string& code = history_->Code(day, h.hour);
          if (pass_ == 0) {
            std::string line = fmt::format("c.u|{}.{},", name, code);
            bool first = true;
            for (size_t c = 0; c < kHistoryCountryCount; ++c) {
              if (h.by_country[c] == 0) continue;
              fmt::format_to(std::back_inserter(line), "{}{}:{}", first ? "" : " ", kHistoryCountries[c],
                             h.by_country[c]);
              first = false;
              ++counts_.subtotal_points;
            }
            pending_.push_back(std::move(line));
          } else if (pass_ == 1) {
            fmt::format_to(std::back_inserter(total), "{}{}:{}", total.size() > empty_total ? " " : "", code,
                           h.clicks);
            ++counts_.key_hours;
            counts_.clicks += static_cast<uint64_t>(h.clicks);
          } else {
            pending_.push_back(fmt::format("~u|{}.{},{}", name, code, HourSketch(key, day, h)));
            ++counts_.unique_points;
          }
        }
      }
      if (pass_ == 1 && total.size() > empty_total) pending_.push_back(std::move(total));
      if (!pending_.empty()) return true;
    }
    return false;
  }

  const History* history_;
  uint32_t shard_;
  std::string name_;
  Status status_;
  int pass_ = 0;
  uint64_t key_ = 0;
  std::vector<HourClicks> hours_;
  std::deque<std::string> pending_;
  std::string current_;
  HistoryCounts counts_;
};

// Folds shard s of the history as the rebuild folds new hours: through the
// day and span step into a sorted file with its manifest (generation 1).
Status WriteHistoryShard(const History& history, uint32_t shard, const std::string& dir, HistoryCounts* counts,
                         clickatron::Manifest* manifest) {
  const std::string path = fmt::format("{}/shard-{}.csv", dir, shard);
  auto writer = cr::ShardFileWriter::Create(path);
  if (!writer.ok()) return writer.status();
  HistorySource source(&history, shard);
  cr::DayRecordSource days(&source);
  std::string_view line;
  while (days.Next(&line)) CLICKATRON_RETURN_IF_ERROR((*writer)->Put(line));
  CLICKATRON_RETURN_IF_ERROR(days.status());
  CLICKATRON_RETURN_IF_ERROR((*writer)->Finish());
  clickatron::Manifest& m = *manifest;
  m.generation = 1;
  m.shard = static_cast<int>(shard);
  m.shard_count = static_cast<int>(history.shards);
  m.last_day = clickatron::FormatDate(history.first_day + history.days - 1);
  m.format = clickatron::kArchiveFormat;
  m.day_subtotals = true;
  m.day_subtotals_every_day = true;
  m.day_uniques_every_day = true;
  (*writer)->Describe(&m);
  *counts = source.counts();
  return clickatron::WriteManifestAtomically(clickatron::ManifestPathFor(path), m);
}

// The realtime lines of one day after the history (a night's day file).
Status WriteNight(const History& history, int64_t day, const std::string& path, HistoryCounts* counts) {
  auto writer = cr::LineWriter::Create(path, {.buffer_bytes = 4u << 20, .fsync = false});
  if (!writer.ok()) return writer.status();
  std::vector<HourClicks> hours;
  for (uint64_t key = 0; key < history.keys; ++key) {
    KeyDay(key, day, &hours);
    const std::string name = KeyName(key);
    for (const HourClicks& h : hours) {
      const std::string& code = history.Code(day, h.hour);
      CLICKATRON_RETURN_IF_ERROR((*writer)->Put(fmt::format("u|{}.{},{}", name, code, h.clicks)));
      ++counts->key_hours;
      counts->clicks += static_cast<uint64_t>(h.clicks);
      for (size_t c = 0; c < kHistoryCountryCount; ++c) {
        if (h.by_country[c] == 0) continue;
        CLICKATRON_RETURN_IF_ERROR(
            (*writer)->Put(fmt::format("c.u|{}.{}.{},{}", name, kHistoryCountries[c], code, h.by_country[c])));
        ++counts->subtotal_points;
      }
      if (history.uniques) {
        CLICKATRON_RETURN_IF_ERROR((*writer)->Put(fmt::format("~u|{}.{},{}", name, code, HourSketch(key, day, h))));
        ++counts->unique_points;
      }
    }
  }
  return (*writer)->Finish();
}

void PrintCounts(const char* prefix, const HistoryCounts& c) {
  std::printf("%s_key_hours %llu\n", prefix, static_cast<unsigned long long>(c.key_hours));
  std::printf("%s_subtotal_points %llu\n", prefix, static_cast<unsigned long long>(c.subtotal_points));
  std::printf("%s_unique_points %llu\n", prefix, static_cast<unsigned long long>(c.unique_points));
  // What bytes per data point divides by: counter values (a unique record is none).
  std::printf("%s_data_points %llu\n", prefix, static_cast<unsigned long long>(c.key_hours + c.subtotal_points));
  std::printf("%s_clicks %llu\n", prefix, static_cast<unsigned long long>(c.clicks));
}

int GenHistory(uint64_t keys, int64_t days, const std::string& last_day, const std::string& dir, int shards,
               int nights, bool uniques, int threads) {
  const auto t0 = std::chrono::steady_clock::now();
  auto last = clickatron::ParseDate(last_day);
  if (!last.ok()) return Fail(last.status());
  if (days < 1 || shards < 1 || nights < 0 || keys < 1) {
    return Fail(Status::InvalidArgument("gen-history: --keys, --days and --shards must be positive"));
  }
  History history;
  history.keys = keys;
  history.days = days;
  history.first_day = *last - days + 1;
  history.uniques = uniques;
  history.shards = static_cast<uint32_t>(shards);
  for (int64_t day = history.first_day; day <= *last + nights; ++day) {
    for (int h = 0; h < 24; ++h) {
      auto code = clickatron::YmdhFromUnix(day * clickatron::kSecondsPerDay + h * clickatron::kSecondsPerHour);
      if (!code.ok()) return Fail(code.status());
      history.codes.push_back(std::move(code).value());
    }
  }
  for (uint64_t key = 0; key < keys; ++key) {
    history.shard_of.push_back(cr::ShardOfValidArchiveLine("u|" + KeyName(key) + ",", history.shards));
  }
  const std::string archive = dir + "/archive";
  if (Status st = clickatron::MakeDirs(archive); !st.ok()) return Fail(st);
  std::vector<HistoryCounts> counts(static_cast<size_t>(shards));
  std::vector<clickatron::Manifest> manifests(static_cast<size_t>(shards));
  std::vector<Status> statuses(static_cast<size_t>(shards));
  // Shards in turn, `threads` at a time.
  for (int from = 0; from < shards; from += std::max(1, threads)) {
    std::vector<std::thread> running;
    for (int s = from; s < std::min(shards, from + std::max(1, threads)); ++s) {
      running.emplace_back([&, s] {
        const auto i = static_cast<size_t>(s);
        statuses[i] = WriteHistoryShard(history, static_cast<uint32_t>(s), archive, &counts[i], &manifests[i]);
      });
    }
    for (std::thread& t : running) t.join();
  }
  HistoryCounts all;
  uint64_t records = 0, bytes = 0;
  for (size_t s = 0; s < counts.size(); ++s) {
    if (!statuses[s].ok()) return Fail(statuses[s]);
    all.Add(counts[s]);
    records += manifests[s].records;
    bytes += manifests[s].bytes;
  }
  std::printf("history_keys %llu\n", static_cast<unsigned long long>(keys));
  std::printf("history_days %lld\n", static_cast<long long>(days));
  std::printf("history_first_day %s\n", clickatron::FormatDate(history.first_day).c_str());
  std::printf("history_last_day %s\n", last_day.c_str());
  PrintCounts("history", all);
  std::printf("archive_records %llu\n", static_cast<unsigned long long>(records));
  std::printf("archive_bytes %llu\n", static_cast<unsigned long long>(bytes));
  for (int n = 1; n <= nights; ++n) {
    HistoryCounts night;
    const std::string path = fmt::format("{}/night-{}.csv", dir, n);
    if (Status st = WriteNight(history, *last + n, path, &night); !st.ok()) return Fail(st);
    const std::string prefix = fmt::format("night{}", n);
    std::printf("%s_day %s\n", prefix.c_str(), clickatron::FormatDate(*last + n).c_str());
    PrintCounts(prefix.c_str(), night);
  }
  std::printf("gen_seconds %.3f\n", Since(t0));
  return 0;
}

// "NS:HOURLY_DAYS:DAILY_DAYS:ZONE" as a [[retention]] table, checked as the cluster file's are.
clickatron::Result<clickatron::RetentionPolicy> ParseRetention(const std::string& text) {
  clickatron::RetentionPolicy p;
  const size_t a = text.find(':');
  const size_t b = a == std::string::npos ? a : text.find(':', a + 1);
  const size_t c = b == std::string::npos ? b : text.find(':', b + 1);
  if (c == std::string::npos) {
    return Status::InvalidArgument(fmt::format("--retention {}: not NS:HOURLY_DAYS:DAILY_DAYS:ZONE", text));
  }
  p.ns = text.substr(0, a);
  try {
    size_t used = 0;
    p.hourly_days = std::stoi(text.substr(a + 1, b - a - 1), &used);
    if (used != b - a - 1) throw std::invalid_argument("hourly_days");
    p.daily_days = std::stoi(text.substr(b + 1, c - b - 1), &used);
    if (used != c - b - 1) throw std::invalid_argument("daily_days");
  } catch (const std::exception&) {
    return Status::InvalidArgument(fmt::format("--retention {}: HOURLY_DAYS and DAILY_DAYS are whole numbers", text));
  }
  p.zone = text.substr(c + 1);
  if (p.ns.empty() || p.hourly_days < 0 || p.daily_days < 0 || (p.hourly_days == 0 && p.daily_days == 0) ||
      (p.daily_days > 0 && p.daily_days < p.hourly_days)) {
    return Status::InvalidArgument(fmt::format(
        "--retention {}: a namespace, hourly_days and daily_days >= 0, not both 0, daily_days 0 or >= hourly_days",
        text));
  }
  clickatron::TimeZoneDb zones;
  auto zone = clickatron::RetentionZone::Open(p.zone, zones);
  if (!zone.ok()) return zone.status();
  CLICKATRON_RETURN_IF_ERROR(zone->CheckWholeHours());
  return p;
}

int Pipeline(const std::string& day, const std::string& archive_dir, const std::string& work_dir, int shards,
             uint64_t memory_mb, int threads, const std::string& engine_config, const std::string& restate,
             const std::string& night, const std::vector<std::string>& retention) {
  clickatron::ClusterConfig cluster;
  if (!engine_config.empty()) {
    // A cluster file naming the engine ([rebuild] engine = "gnu-parallel"):
    // the merge tasks run there, and the hosts load this file.
    auto loaded = clickatron::ClusterConfig::Load(engine_config);
    if (!loaded.ok()) return Fail(loaded.status());
    cluster = std::move(loaded).value();
    cluster.members.clear();
  }
  for (const std::string& text : retention) {
    auto policy = ParseRetention(text);
    if (!policy.ok()) return Fail(policy.status());
    cluster.retention.push_back(std::move(policy).value());
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
  build.day = night;
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
  std::printf("generation %llu\n", static_cast<unsigned long long>(plan->generation));
  std::printf("output_dir %s\n", cr::WorkDir(work_dir).GenDir(plan->generation).c_str());
  // What retention did: the boundaries each namespace has now, whether they
  // moved (the previous files were then read in full), and what the merge
  // tasks rolled up (gen/G/tasks/merge-S, as BuildGeneration names them).
  const clickatron::Manifest& first = plan->manifests.front();
  const clickatron::Manifest& before = previous->manifests.front();
  std::printf("retention_moved %d\n", first.retention != before.retention ? 1 : 0);
  for (const clickatron::AppliedRetention& r : first.retention) {
    std::printf("retention_%s_hourly_from %s\n", r.ns.c_str(), clickatron::FormatDate(r.hourly_from / 86400).c_str());
    if (r.kept_from) {
      std::printf("retention_%s_kept_from %s\n", r.ns.c_str(), clickatron::FormatDate(*r.kept_from / 86400).c_str());
    }
  }
  std::map<std::string, std::array<uint64_t, 3>> rolled;  // hours_rolled, rolled_days, hours_dropped
  for (int s = 0; s < shards; ++s) {
    const cr::TaskPaths task{fmt::format("{}/tasks/merge-{}", cr::WorkDir(work_dir).GenDir(plan->generation), s)};
    auto done = cr::ReadTaskDone(task);
    if (!done.ok()) return Fail(done.status());
    const nlohmann::json retention_counts = done->value("retention", nlohmann::json::object());
    for (const auto& [ns, counts] : retention_counts.items()) {
      rolled[ns][0] += counts.value("hours_rolled", uint64_t{0});
      rolled[ns][1] += counts.value("rolled_days", uint64_t{0});
      rolled[ns][2] += counts.value("hours_dropped", uint64_t{0});
    }
  }
  for (const auto& [ns, c] : rolled) {
    std::printf("retention_%s_hours_rolled %llu\n", ns.c_str(), static_cast<unsigned long long>(c[0]));
    std::printf("retention_%s_rolled_days %llu\n", ns.c_str(), static_cast<unsigned long long>(c[1]));
    std::printf("retention_%s_hours_dropped %llu\n", ns.c_str(), static_cast<unsigned long long>(c[2]));
  }
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
  clickatron::CommandLine app{"clickatron-rebuild-bench"};
  app.RequireCommand();
  uint64_t records = 0;
  uint64_t stride = 8;
  std::string out, dir, day, work;
  int shards = 2, threads = 2;
  uint64_t memory_mb = 512;
  clickatron::Command gen_day = app.AddCommand("gen-day");
  gen_day.Option("--records", records).Required();
  gen_day.Option("--stride", stride);
  gen_day.Option("--out", out).Required();
  clickatron::Command gen_archive = app.AddCommand("gen-archive");
  gen_archive.Option("--records", records).Required();
  gen_archive.Option("--shards", shards);
  gen_archive.Option("--out-dir", dir).Required();
  clickatron::Command pipeline = app.AddCommand("pipeline");
  pipeline.Option("--day", day).Required();
  pipeline.Option("--archive-dir", dir).Required();
  pipeline.Option("--work-dir", work).Required();
  pipeline.Option("--shards", shards);
  pipeline.Option("--memory-mb", memory_mb);
  pipeline.Option("--threads", threads);
  std::string engine_config;
  pipeline.Option("--engine-config", engine_config, "a cluster file whose [rebuild] engine runs the merges");
  std::string restate;
  pipeline.Option("--restate", restate, "realtime lines of u on 2012-03-24: fold them as a restatement");
  std::string night = "2012-03-25";
  pipeline.Option("--night", night, "the day the day file holds, folded by this night's generation");
  std::vector<std::string> retention;
  pipeline.Option("--retention", retention, "NS:HOURLY_DAYS:DAILY_DAYS:ZONE, a [[retention]] policy");
  uint64_t keys = 0;
  int64_t history_days = 730;
  int nights = 2;
  std::string last_day;
  bool uniques = false;
  clickatron::Command gen_history = app.AddCommand("gen-history");
  gen_history.Option("--keys", keys).Required();
  gen_history.Option("--days", history_days);
  gen_history.Option("--last-day", last_day).Required();
  gen_history.Option("--out-dir", dir).Required();
  gen_history.Option("--shards", shards);
  gen_history.Option("--nights", nights);
  gen_history.Option("--threads", threads);
  gen_history.Flag("--uniques", uniques, "unique records (~u) beside the counters");
  clickatron::Command sort_only = app.AddCommand("sort");
  sort_only.Option("--day", day).Required();
  sort_only.Option("--out", out).Required();
  sort_only.Option("--work-dir", work).Required();
  sort_only.Option("--memory-mb", memory_mb);
  sort_only.Option("--threads", threads);
  std::string in;
  clickatron::Command span_bytes = app.AddCommand("span-bytes");
  span_bytes.Option("--in", in).Required();
  if (const std::optional<int> code = app.Parse(argc, argv)) return *code;
  if (span_bytes.Parsed()) return SpanBytes(in);
  if (gen_day.Parsed()) return GenDay(records, stride, out);
  if (gen_archive.Parsed()) return GenArchive(records, shards, dir);
  if (gen_history.Parsed()) return GenHistory(keys, history_days, last_day, dir, shards, nights, uniques, threads);
  if (sort_only.Parsed()) return SortOnly(day, out, work, memory_mb, threads);
  return Pipeline(day, dir, work, shards, memory_mb, threads, engine_config, restate, night, retention);
}
