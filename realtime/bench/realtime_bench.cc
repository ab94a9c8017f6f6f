// clickatron-bench-realtime: increments/s through the real daemon's
// POST /incr (batches of 1, 100 and 1000 lines, several keep-alive
// connections) beside the in-process rate of the same shard code (ParseBatch
// and Checkpointer::Apply of the same bodies into the in-memory table, with
// checkpoints to a real store as the daemon makes them; no HTTP), as a ratio.
//
// Then the cost of one checkpoint of `keys` distinct counters, two ways it
// could be made durable: a sorted file ingested (what ShardStore does), or
// a RocksDB write with the WAL on and one fsync of it.
//
// With --visitors N every increment also adds a visitor to its key's unique
// record (a second line per increment, as the API sends it).
//
// Keys are skewed the way click data is: a Zipf(1.0) draw over `keys`
// counters, so a few hot keys take most increments. Each figure is the median
// of `runs` short runs, each on a fresh data directory. Prints, never asserts.
// Run through scripts/bench-realtime.
#include <fmt/format.h>
#include <netinet/in.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include "clickatron/http_client.h"
#include "clickatron/status.h"
#include "clickatron/unique_fd.h"
#include "clickatron/unique_sketch.h"
#include "clickatron/ymdh.h"
#include <rocksdb/db.h>
#include <rocksdb/write_batch.h>

#include "apply_batch.h"
#include "checkpointer.h"
#include "counter_merge.h"
#include "shard_store.h"

namespace {

using namespace clickatron;
using Clock = std::chrono::steady_clock;

struct Flags {
  std::string daemon;          // path of clickatron-realtime
  uint64_t increments = 2'000'000;
  int keys = 100'000;
  int connections = 4;
  int runs = 3;
  int write_buffer_mb = 64;
  int block_cache_mb = 128;
  std::vector<int> batch_sizes = {1, 100, 1000};
  // > 0: every increment also names a visitor (uniform over this many), so
  // each counter line is followed by its unique record's line, as the API
  // sends them ("key,1" then "~key,SKETCH").
  uint64_t visitors = 0;
};

bool ParseFlags(int argc, char** argv, Flags* f) {
  for (int i = 1; i < argc; ++i) {
    std::string_view a = argv[i];
    auto next = [&]() -> const char* { return i + 1 < argc ? argv[++i] : nullptr; };
    const char* v = nullptr;
    if (a == "--daemon" && (v = next())) f->daemon = v;
    else if (a == "--increments" && (v = next())) f->increments = std::strtoull(v, nullptr, 10);
    else if (a == "--keys" && (v = next())) f->keys = std::atoi(v);
    else if (a == "--connections" && (v = next())) f->connections = std::atoi(v);
    else if (a == "--runs" && (v = next())) f->runs = std::atoi(v);
    else if (a == "--visitors" && (v = next())) f->visitors = std::strtoull(v, nullptr, 10);
    else if (a == "--batches" && (v = next())) {
      f->batch_sizes.clear();
      for (std::string_view rest = v; !rest.empty();) {
        const size_t comma = rest.find(',');
        f->batch_sizes.push_back(std::atoi(std::string(rest.substr(0, comma)).c_str()));
        rest = comma == std::string_view::npos ? std::string_view() : rest.substr(comma + 1);
      }
    }
    else {
      std::fprintf(stderr,
                   "usage: %s --daemon PATH [--increments N] [--keys N] [--connections N] [--runs N] [--batches 1,100,1000]\n", argv[0]);
      return false;
    }
  }
  const bool batches_ok = !f->batch_sizes.empty() &&
                          std::all_of(f->batch_sizes.begin(), f->batch_sizes.end(), [](int b) { return b > 0; });
  return !f->daemon.empty() && f->increments > 0 && f->keys > 0 && f->connections > 0 && f->runs > 0 && batches_ok;
}

// Indexes of `n` keys drawn Zipf(1.0) over `keys`.
std::vector<uint32_t> ZipfDraws(uint64_t n, int keys, uint32_t seed) {
  std::vector<double> cdf(keys);
  double sum = 0;
  for (int k = 0; k < keys; ++k) cdf[k] = (sum += 1.0 / (k + 1));
  for (double& c : cdf) c /= sum;
  std::mt19937_64 rng(seed);
  std::uniform_real_distribution<double> u(0, 1);
  std::vector<uint32_t> out(n);
  for (uint64_t i = 0; i < n; ++i) {
    out[i] = static_cast<uint32_t>(std::lower_bound(cdf.begin(), cdf.end(), u(rng)) - cdf.begin());
    if (out[i] >= static_cast<uint32_t>(keys)) out[i] = keys - 1;
  }
  return out;
}

double Median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}

std::string TempDir() {
  std::string tmpl = (std::filesystem::temp_directory_path() / "clickatron-bench-XXXXXX").string();
  std::vector<char> buf(tmpl.begin(), tmpl.end());
  buf.push_back('\0');
  return ::mkdtemp(buf.data()) ? std::string(buf.data()) : std::string();
}

// In-process: the same bodies, parsed and applied with the shard's code
// (a checkpoint whenever the table passes half the default budget, and one
// at the end, as the daemon does), no HTTP.
double InProcessRate(const Flags& f, const std::vector<std::string>& bodies, uint64_t total, int64_t day) {
  const std::string dir = TempDir();
  double rate = 0;
  {
    realtime::StoreOptions options{f.write_buffer_mb, f.block_cache_mb};
    Result<std::unique_ptr<realtime::ShardStore>> store = realtime::ShardStore::Open(dir + "/db", options);
    if (!store.ok() || !(*store)->CreateDay(day).ok()) {
      std::fprintf(stderr, "cannot open a store in %s\n", dir.c_str());
      return 0;
    }
    realtime::Checkpointer checkpointer(store->get(), {}, realtime::CheckpointOptions{});
    const auto start = Clock::now();
    uint64_t seq = 0;
    for (const std::string& body : bodies) {
      Result<realtime::ParsedBatch> batch = realtime::ParseBatch(body);
      if (!batch.ok() || !checkpointer.Apply("bench", ++seq, *batch, day).ok()) {
        std::fprintf(stderr, "apply failed\n");
        return 0;
      }
    }
    if (Status st = checkpointer.Drain(); !st.ok()) {
      std::fprintf(stderr, "checkpoint failed: %s\n", st.ToString().c_str());
      return 0;
    }
    rate = total / std::chrono::duration<double>(Clock::now() - start).count();
  }
  std::filesystem::remove_all(dir);
  return rate;
}

// Seconds to make one checkpoint of `keys` distinct counters durable, on a
// fresh database. The shard's way: ShardStore::Write of the keys into the
// day's store (a sorted file, ingested). The alternative:
// the same merges with the WAL on and one fsync of it, in a plain RocksDB
// database with the same write buffer (ShardStore has no WAL mode to time).
double CheckpointSeconds(const Flags& f, const std::vector<std::string>& keys, int64_t day, bool wal) {
  const std::string dir = TempDir();
  double seconds = 0;
  if (!wal) {
    Result<std::unique_ptr<realtime::ShardStore>> store =
        realtime::ShardStore::Open(dir + "/db", realtime::StoreOptions{.write_buffer_mb = f.write_buffer_mb});
    if (!store.ok() || !(*store)->CreateDay(day).ok()) return 0;
    realtime::StoreWrite write;
    write.increments.reserve(keys.size());
    for (const std::string& k : keys) write.increments.push_back({day, k, 1});
    const auto start = Clock::now();
    const Status st = (*store)->Write(std::move(write));
    seconds = st.ok() ? std::chrono::duration<double>(Clock::now() - start).count() : 0;
  } else {
    rocksdb::Options options;
    options.create_if_missing = true;
    options.merge_operator = realtime::NewCounterMergeOperator();
    options.write_buffer_size = static_cast<size_t>(f.write_buffer_mb) << 20;
    rocksdb::DB* raw = nullptr;
    if (!rocksdb::DB::Open(options, dir + "/db", &raw).ok()) return 0;
    std::unique_ptr<rocksdb::DB> db(raw);
    rocksdb::WriteBatch batch;
    const std::string one = realtime::EncodeCounter(1);
    for (const std::string& k : keys) batch.Merge(k, one);
    rocksdb::WriteOptions wo;
    wo.sync = true;
    const auto start = Clock::now();
    const rocksdb::Status st = db->Write(wo, &batch);
    seconds = st.ok() ? std::chrono::duration<double>(Clock::now() - start).count() : 0;
  }
  std::filesystem::remove_all(dir);
  return seconds;
}

// A loopback port nothing listens on right now (the kernel picks it).
uint16_t PickPort() {
  const UniqueFd fd(::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0));
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  ::bind(fd.get(), reinterpret_cast<sockaddr*>(&addr), sizeof(addr));
  socklen_t len = sizeof(addr);
  ::getsockname(fd.get(), reinterpret_cast<sockaddr*>(&addr), &len);
  return ntohs(addr.sin_port);
}

class Daemon {
 public:
  bool Start(const Flags& f, const std::string& dir, uint16_t port) {
    port_ = port;
    const std::string config = dir + "/cluster.toml";
    std::ofstream(config) << fmt::format(R"([cluster]
realtime_shards = 1
archive_shards = 1
clock = "manual"
log_level = "warn"
[realtime]
write_buffer_mb = {}
block_cache_mb = {}

[[member]]
name = "realtime-0"
role = "realtime"
listen = "127.0.0.1:{}"
data_dir = "{}/realtime-0"
shard = 0
[[member]]
name = "archive-0"
role = "archive"
listen = "127.0.0.1:{}"
data_dir = "{}/archive-0"
shard = 0
file = "{}/archive.csv"
)",
                                         f.write_buffer_mb, f.block_cache_mb, port, dir, PickPort(), dir, dir);
    // The shard takes batches only from API members: one (never started)
    // per sending connection, named as its batches' source.
    for (int c = 0; c < f.connections; ++c) {
      std::ofstream(config, std::ios::app) << fmt::format(
          "[[member]]\nname = \"bench-{}\"\nrole = \"api\"\nlisten = \"127.255.0.1:{}\"\ndata_dir = \"{}/bench-{}\"\n",
          c, c + 1, dir, c);  // never bound: an address no started member has
    }
    std::fflush(nullptr);  // or the child would print our buffered output again
    pid_ = ::fork();
    if (pid_ == 0) {
      const std::string log = dir + "/realtime.log";
      std::freopen(log.c_str(), "a", stdout);
      std::freopen(log.c_str(), "a", stderr);
      ::execl(f.daemon.c_str(), f.daemon.c_str(), "--config", config.c_str(), "--member", "realtime-0", nullptr);
      ::_exit(127);
    }
    BlockingHttpClient client;
    for (int i = 0; i < 500; ++i) {
      HttpRequestSpec ping;
      ping.target = "/ping";
      ping.timeout_ms = 1000;
      if (client.Fetch(HostPort{"127.0.0.1", port_}, ping).status_code == 200) return true;
      std::this_thread::sleep_for(std::chrono::milliseconds(20));  // readiness poll
    }
    return false;
  }
  void Stop() {
    if (pid_ <= 0) return;
    ::kill(pid_, SIGTERM);
    int status = 0;
    ::waitpid(pid_, &status, 0);
    pid_ = -1;
  }
  ~Daemon() { Stop(); }

 private:
  pid_t pid_ = -1;
  uint16_t port_ = 0;
};


// Through HTTP: the daemon on a fresh data dir, `connections` threads each
// posting its share of the batches (own source, seqs from 1) over keep-alive.
double HttpRate(const Flags& f, const std::vector<std::string>& bodies, const std::vector<uint64_t>& lines_per_body) {
  const std::string dir = TempDir();
  Daemon daemon;
  const uint16_t port = PickPort();
  if (!daemon.Start(f, dir, port)) {
    std::fprintf(stderr, "the daemon did not start (see %s/realtime.log)\n", dir.c_str());
    return 0;
  }
  std::atomic<uint64_t> failures{0};
  uint64_t total = 0;
  for (uint64_t n : lines_per_body) total += n;
  const auto start = Clock::now();
  std::vector<std::thread> threads;
  for (int c = 0; c < f.connections; ++c) {
    threads.emplace_back([&, c] {
      BlockingHttpClient client;
      uint64_t seq = 0;
      for (size_t i = c; i < bodies.size(); i += f.connections) {
        HttpRequestSpec spec;
        spec.method = "POST";
        spec.target = fmt::format("/incr?source=bench-{}&seq={}", c, ++seq);
        spec.body = bodies[i];
        spec.timeout_ms = 30000;
        HttpResponse r = client.Fetch(HostPort{"127.0.0.1", port}, std::move(spec));
        if (!r.ok() || r.status_code != 200) failures.fetch_add(1);
      }
    });
  }
  for (auto& t : threads) t.join();
  const double seconds = std::chrono::duration<double>(Clock::now() - start).count();
  daemon.Stop();
  std::filesystem::remove_all(dir);
  if (failures.load() > 0) std::fprintf(stderr, "%llu batches failed\n", static_cast<unsigned long long>(failures.load()));
  return total / seconds;
}

}  // namespace

int main(int argc, char** argv) {
  Flags f;
  if (!ParseFlags(argc, argv, &f)) return 2;
  const int64_t day = FloorDiv(static_cast<int64_t>(std::time(nullptr)), kSecondsPerDay);
  // Half totals, half subtotals, spread over the day's 24 hours.
  std::vector<std::string> keys;
  keys.reserve(f.keys);
  for (int k = 0; k < f.keys; ++k) {
    const std::string ymdh = *YmdhFromUnix(day * kSecondsPerDay + (k % 24) * kSecondsPerHour);
    keys.push_back(k % 2 ? fmt::format("u|user{}.{}", k, ymdh) : fmt::format("c.u|user{}.US.{}", k, ymdh));
  }
  const std::vector<uint32_t> draws = ZipfDraws(f.increments, f.keys, 42);
  uint64_t hot = 0;
  for (uint32_t d : draws) hot += d < 100;
  fmt::print("realtime ingest: {} increments, {} keys (Zipf 1.0: top 100 keys take {:.0f}%), {} connections, "
             "median of {} runs, applied in memory, persisted by checkpoint\n",
             f.increments, f.keys, 100.0 * hot / draws.size(), f.connections, f.runs);
  // One visitor per increment, as a one-visitor sketch's text.
  std::vector<std::string> visitor_sketches;
  if (f.visitors > 0) {
    std::mt19937_64 rng(7);
    visitor_sketches.reserve(draws.size());
    for (size_t i = 0; i < draws.size(); ++i) {
      UniqueSketch one;
      one.Add(HashVisitor(fmt::format("visitor{}", rng() % f.visitors)));
      visitor_sketches.push_back(one.ToText());
    }
    fmt::print("each increment with a visitor (uniform over {}): a counter line and its unique record's line\n",
               f.visitors);
  }
  fmt::print("{:>6}  {:>16}  {:>18}  {:>6}\n", "batch", "http incr/s", "in-process incr/s", "ratio");
  for (int batch : f.batch_sizes) {
    // Batch 1 through HTTP is bounded by round trips: a tenth of the increments keeps it short.
    const uint64_t n = batch == 1 ? std::max<uint64_t>(1000, draws.size() / 10) : draws.size();
    const std::vector<uint32_t> slice(draws.begin(), draws.begin() + std::min<uint64_t>(n, draws.size()));
    std::vector<std::string> bodies;
    std::vector<uint64_t> lines;
    for (size_t i = 0; i < slice.size(); i += batch) {
      std::string body;
      const size_t end = std::min(slice.size(), i + batch);
      for (size_t j = i; j < end; ++j) {
        body += keys[slice[j]];
        body += ",1\n";
        if (!visitor_sketches.empty()) {
          body += '~';
          body += keys[slice[j]];
          body += ',';
          body += visitor_sketches[j];
          body += '\n';
        }
      }
      bodies.push_back(std::move(body));
      lines.push_back(end - i);
    }
    std::vector<double> http, local;
    for (int r = 0; r < f.runs; ++r) {
      local.push_back(InProcessRate(f, bodies, slice.size(), day));
      http.push_back(HttpRate(f, bodies, lines));
    }
    const double h = Median(http), l = Median(local);
    fmt::print("{:>6}  {:>16.0f}  {:>18.0f}  {:>6.2f}\n", batch, h, l, l > 0 ? h / l : 0.0);
    std::fflush(stdout);
  }
  std::vector<std::string> sorted = keys;
  std::sort(sorted.begin(), sorted.end());
  std::vector<double> ingest, wal;
  for (int r = 0; r < f.runs; ++r) {
    ingest.push_back(CheckpointSeconds(f, sorted, day, false));
    wal.push_back(CheckpointSeconds(f, sorted, day, true));
  }
  fmt::print("checkpoint of {} keys: file ingested {:.3f} s, WAL on + fsync {:.3f} s (medians of {})\n",
             sorted.size(), Median(ingest), Median(wal), f.runs);
  fmt::print("BENCH_CHECKPOINT keys={} ingest_s={:.4f} wal_s={:.4f}\n", sorted.size(), Median(ingest), Median(wal));
  return 0;
}
