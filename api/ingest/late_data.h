// Late data (docs/protocols.md): lines a realtime shard refused with DAY_NOT_OPEN
// (their day was already exported or is not in the ring) are kept here for
// the next rebuild instead of being dropped.
//
// The rebuild fetches sealed files over HTTP (admin routes of the API node,
// late_files_http.h): it lists them (ListSealed), streams each (OpenSealed,
// ReadAt) and, once the generation holding them is deployed, marks each done
// (MarkDone: late-<unix>.sealed -> late-<unix>.done, which is kept for its
// (shard, seq) records but never listed again).
//
// Files (DATA_DIR/late): framed logs; the one being written is
// "late-<unix>.open", renamed to "late-<unix>.sealed" when it is an hour old
// or on POST /late/seal; the rebuild only reads sealed files. Each frame is
// "# source=NAME shard=S seq=N\n" + the moved lines, written and fsynced
// before the rest of that batch is re-sent. The header doubles as the record
// that (shard, seq) was late-handled: after a crash, the batch is re-sent from
// the oplog minus the keys already moved, so no line reaches late data twice.
//
// Thread-safety: Write, Seal, SealIfOlder, ListSealed, OpenSealed, ReadAt,
// MarkDone from the loop; file work runs on an internal thread, in the order
// asked, and answers through `post`.
#pragma once

#include <atomic>
#include <cstdint>
#include <functional>
#include <initializer_list>
#include <map>
#include <memory>
#include <string>
#include <string_view>
#include <unordered_set>
#include <utility>
#include <vector>

#include "clickatron/framed_log.h"
#include "clickatron/oplog_record.h"
#include "clickatron/status.h"
#include "clickatron/serial_executor.h"
#include "clickatron/unique_fd.h"

namespace clickatron::api {

class LateData {
 public:
  using Post = std::function<void(std::function<void()>)>;
  // (shard, seq) -> keys of that batch already in late data.
  using MovedKeys = std::map<std::pair<uint32_t, uint64_t>, std::unordered_set<std::string>>;

  struct FileInfo {
    std::string name;  // late-<unix>.sealed
    uint64_t bytes = 0;
  };
  // A sealed file opened for reading. Sealed files never change, so `bytes`
  // (its size when opened) is what a reader sends.
  struct OpenFile {
    std::string name;
    UniqueFd fd;
    uint64_t bytes = 0;
  };

  // Reads every late file of this source (refusing to start on a damaged
  // one), then seals the files an earlier run left open.
  static Result<std::unique_ptr<LateData>> Open(std::string dir, std::string source, Post post);
  ~LateData();

  // What earlier runs moved. Immutable after Open (safe from any thread).
  const MovedKeys& recovered() const { return recovered_; }

  // Appends one frame and fsyncs it, then runs done(status) through `post`.
  void Write(uint32_t shard, uint64_t seq, std::string lines, size_t line_count, std::function<void(Status)> done);
  // Seals the open file now; done gets the names of the files sealed.
  void Seal(std::function<void(Result<std::vector<std::string>>)> done);
  // Seals the open file if it was created more than max_age_seconds ago.
  void SealIfOlder(int64_t max_age_seconds);

  // The sealed files not yet marked done, oldest first.
  void ListSealed(std::function<void(Result<std::vector<FileInfo>>)> done);
  // Opens a sealed file: INVALID_ARGUMENT for a name that is not exactly
  // late-<digits>.sealed, NOT_FOUND when there is no such sealed file.
  void OpenSealed(std::string name, std::function<void(Result<std::shared_ptr<const OpenFile>>)> done);
  // Up to max_bytes of `file` from `offset` ("" at its end).
  void ReadAt(std::shared_ptr<const OpenFile> file, uint64_t offset, size_t max_bytes,
              std::function<void(Result<std::string>)> done);
  // late-<unix>.sealed -> late-<unix>.done, the directory fsynced. done gets
  // true when it was already done (a rerun), NOT_FOUND when neither exists,
  // INVALID_ARGUMENT for a bad name.
  void MarkDone(std::string name, std::function<void(Result<bool>)> done);

  // Lines a deletion took out (deletions: a batch's line acknowledged before
  // it). A file marked done is rewritten without them: its lines are in a
  // deployed archive generation, and it is kept only for its (shard, seq)
  // records, so what a deletion took out must not stay in it.
  using LinePredicate = std::function<bool(const OplogHeader& frame, std::string_view line)>;
  // Where MarkDone gets the lines to take out (called on the worker
  // thread); set once, before the first MarkDone.
  void SetScrubber(std::function<LinePredicate()> scrubber) { scrubber_ = std::move(scrubber); }
  // Every done file rewritten without the scrubber's lines (after a new
  // deletion: files marked done before it hold its lines).
  void ScrubDone(std::function<void(Status)> done);
  // Whether any late file here (open, sealed or done) holds a line `covered`
  // names.
  void Holds(LinePredicate covered, std::function<void(Result<bool>)> done);

  uint64_t lines_written() const { return lines_written_.load(); }
  uint64_t frames_written() const { return frames_written_.load(); }
  const std::string& dir() const { return dir_; }

 private:
  LateData(std::string dir, std::string source, Post post);
  Status ScanFile(const std::string& path, bool sealed);
  // Executor thread: `path` rewritten without the lines `covered` names
  // (temp file, fsync, rename); untouched when it has none.
  Status ScrubFile(const std::string& path, const LinePredicate& covered);
  // Executor thread: the late files here, by name, whose names end in one of `suffixes`.
  Result<std::vector<std::string>> FilesEndingIn(std::initializer_list<std::string_view> suffixes) const;
  Result<std::vector<std::string>> SealNow();  // executor thread
  // Runs work() on the executor and hands its result to done() through post_.
  template <typename T>
  void OnWorker(std::function<T()> work, std::function<void(T)> done);

  std::string dir_;
  std::string source_;
  Post post_;
  MovedKeys recovered_;
  // Executor thread only.
  std::unique_ptr<FramedLogWriter> open_;
  int64_t open_created_ = 0;
  // The newest name (unix second) any late file here has had, sealed and
  // done ones included (worker thread; set by Open): a new file is named
  // after it.
  int64_t newest_created_ = 0;
  bool open_write_failed_ = false;  // an append or sync of open_ failed: cut back to whole frames before sealing
  std::atomic<uint64_t> lines_written_{0};
  std::atomic<uint64_t> frames_written_{0};
  std::unique_ptr<SerialExecutor> worker_;
  std::function<LinePredicate()> scrubber_;
};

}  // namespace clickatron::api
