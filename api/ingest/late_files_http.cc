#include "ingest/late_files_http.h"

#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include "clickatron/http_args.h"
#include "clickatron/oplog_record.h"

namespace clickatron::api {
namespace {

bool Alive(const std::weak_ptr<bool>& alive) {
  auto a = alive.lock();
  return a && *a;
}

// The name= argument, checked; false after answering 400.
bool NameArg(const HttpExchangePtr& ex, std::string* name) {
  auto single = ex->args().GetSingle("name", "INVALID_NAME");  // given twice: which file is meant?
  if (!single.ok()) {
    ex->ReplyError(single.status());
    return false;
  }
  const std::string* arg = *single;
  if (arg == nullptr || arg->empty()) {
    ex->ReplyError(400, "MISSING_ARG_NAME", "name= is required (late-<unix>.sealed)");
    return false;
  }
  if (!IsSealedLateFileName(*arg)) {
    ex->ReplyError(400, "INVALID_NAME",
                   fmt::format("\"{}\" is not a sealed late-data file name (late-<unix>.sealed, no path)", *arg));
    return false;
  }
  *name = *arg;
  return true;
}

// Sends one open file, a chunk at a time: read on LateData's thread, sent on
// the loop, the next read asked for when the chunk has left.
class LateFileStream : public std::enable_shared_from_this<LateFileStream> {
 public:
  LateFileStream(HttpExchangePtr ex, LateData& late, std::weak_ptr<bool> alive,
                 std::shared_ptr<const LateData::OpenFile> file)
      : ex_(std::move(ex)), late_(late), alive_(std::move(alive)), file_(std::move(file)) {}

  void ReadNext() {
    late_.ReadAt(file_, offset_, kLateFileChunkBytes,
                 [self = shared_from_this()](Result<std::string> chunk) { self->OnChunk(std::move(chunk)); });
  }

 private:
  void OnChunk(Result<std::string> chunk) {
    if (!ex_->alive() || !Alive(alive_)) return;  // the client (or the daemon) went away
    if (!chunk.ok()) {
      spdlog::error("GET /late/file {}: {}", file_->name, chunk.status().ToString());
      if (!started_) {
        ex_->ReplyError(chunk.status());
      } else {
        // The 200 is out: the answer ends short of the size /late/files gave,
        // which is how a reader knows it is not the whole file.
        ex_->EndStream();
      }
      return;
    }
    offset_ += chunk->size();
    const bool last = offset_ >= file_->bytes;
    if (!started_ && last) {
      ex_->Reply(200, *chunk, "application/octet-stream");  // small: one plain answer
      return;
    }
    if (!started_) {
      ex_->StartStream(200, "application/octet-stream");
      started_ = true;
    }
    if (last) {
      if (!chunk->empty()) ex_->SendChunk(*chunk);
      ex_->EndStream();
      return;
    }
    ex_->SendChunk(*chunk, [self = shared_from_this()] {
      if (self->ex_->alive() && Alive(self->alive_)) self->ReadNext();
    });
  }

  HttpExchangePtr ex_;
  LateData& late_;
  std::weak_ptr<bool> alive_;
  std::shared_ptr<const LateData::OpenFile> file_;
  uint64_t offset_ = 0;
  bool started_ = false;
};

}  // namespace

void HandleLateFiles(const HttpExchangePtr& ex, LateData& late, std::weak_ptr<bool> alive) {
  late.ListSealed([ex, alive](Result<std::vector<LateData::FileInfo>> files) {
    if (!Alive(alive) || !ex->alive()) return;
    if (!files.ok()) {
      ex->ReplyError(files.status());
      return;
    }
    nlohmann::json list = nlohmann::json::array();
    for (const LateData::FileInfo& f : *files) list.push_back({{"name", f.name}, {"bytes", f.bytes}});
    ex->ReplyJson({{"files", std::move(list)}});
  });
}

void HandleLateFile(const HttpExchangePtr& ex, LateData& late, std::weak_ptr<bool> alive) {
  std::string name;
  if (!NameArg(ex, &name)) return;
  late.OpenSealed(name, [ex, &late, alive](Result<std::shared_ptr<const LateData::OpenFile>> file) {
    if (!Alive(alive) || !ex->alive()) return;
    if (!file.ok()) {
      ex->ReplyError(file.status());
      return;
    }
    std::make_shared<LateFileStream>(ex, late, alive, std::move(file).value())->ReadNext();
  });
}

void HandleLateDone(const HttpExchangePtr& ex, LateData& late, std::weak_ptr<bool> alive) {
  if (!OnlyArgs(ex, {"name"})) return;
  std::string name;
  if (!NameArg(ex, &name)) return;
  late.MarkDone(name, [ex, alive, name](Result<bool> already) {
    if (!Alive(alive) || !ex->alive()) return;
    if (!already.ok()) {
      ex->ReplyError(already.status());
      return;
    }
    ex->ReplyJson({{"name", name}, {"already_done", *already}});
  });
}

}  // namespace clickatron::api
