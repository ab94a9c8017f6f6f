#include "ingest/late_data.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <ctime>
#include <filesystem>

#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include "clickatron/file_util.h"
#include "clickatron/oplog_record.h"
#include "clickatron/record.h"

namespace clickatron::api {

LateData::LateData(std::string dir, std::string source, Post post)
    : dir_(std::move(dir)), source_(std::move(source)), post_(std::move(post)) {}

LateData::~LateData() {
  worker_.reset();  // runs queued writes first
  if (open_) (void)open_->Close();
}

Result<std::unique_ptr<LateData>> LateData::Open(std::string dir, std::string source, Post post) {
  std::unique_ptr<LateData> late(new LateData(std::move(dir), std::move(source), std::move(post)));
  CLICKATRON_RETURN_IF_ERROR(MakeDirs(late->dir_));
  std::vector<std::pair<std::string, bool>> files;  // name, sealed (or done)
  std::error_code ec;
  for (const auto& entry : std::filesystem::directory_iterator(late->dir_, ec)) {
    const std::string name = entry.path().filename().string();
    int64_t created = 0;
    bool sealed = false;
    if (ParseLateFileName(name, &created, &sealed)) {
      files.emplace_back(name, sealed);
      late->newest_created_ = std::max(late->newest_created_, created);
    } else if (name.ends_with(".done") &&
               ParseLateFileName(name.substr(0, name.size() - 5) + ".sealed", &created, &sealed)) {
      // Folded by the rebuild (renamed from .sealed): its (shard, seq)
      // records still say which lines must never be moved again.
      files.emplace_back(name, true);
      late->newest_created_ = std::max(late->newest_created_, created);
    }
  }
  if (ec) return Status::IoError(fmt::format("list {}: {}", late->dir_, ec.message()));
  std::sort(files.begin(), files.end());
  for (const auto& [name, sealed] : files) {
    const std::string path = late->dir_ + "/" + name;
    CLICKATRON_RETURN_IF_ERROR(late->ScanFile(path, sealed));
    if (sealed) continue;
    // Left open by an earlier run: cut a torn tail (that frame's batch was
    // never re-sent, so it will be moved again), then seal it.
    {
      auto w = FramedLogWriter::Open(path);
      if (!w.ok()) return w.status();
      CLICKATRON_RETURN_IF_ERROR((*w)->Close());
    }
    std::string sealed_path = path.substr(0, path.size() - 5) + ".sealed";
    CLICKATRON_RETURN_IF_ERROR(RenameDurably(path, sealed_path));
    spdlog::info("late data: sealed {} left open by an earlier run", sealed_path);
  }
  late->worker_ = std::make_unique<SerialExecutor>("late-data");
  return late;
}

Status LateData::ScanFile(const std::string& path, bool sealed) {
  auto reader = FramedLogReader::Open(path);
  if (!reader.ok()) return reader.status();
  while (true) {
    auto next = (*reader)->Next();
    if (!next.ok()) {
      return next.status().WithContext("a late-data file is damaged; refusing to start (its (shard, seq) records "
                                       "keep late lines from being written twice)");
    }
    if (!next->has_value()) break;
    auto payload = ParseOplogPayload(**next);
    if (!payload.ok()) return payload.status().WithContext(path);
    const OplogHeader& h = payload->header;
    if (h.kind != OplogHeader::Kind::kBatch || h.source != source_) continue;
    auto& keys = recovered_[{static_cast<uint32_t>(h.shard), h.seq}];
    ForEachPayloadLine(payload->lines, [&](std::string_view line) { keys.insert(std::string(LineKey(line))); });
  }
  if (sealed && (*reader)->truncated_tail()) {
    // Sealed files were closed whole: a torn tail is damage, not a crash's
    // half-written frame, and the lines it cut off were acknowledged.
    return Status::Corruption(fmt::format(
        "{} is sealed (it was closed whole) but ends inside a frame after byte {}: it was damaged since; refusing "
        "to start rather than lose its acknowledged lines (restore it; `clickatron oplog verify` reads it)",
        path, (*reader)->good_bytes()));
  }
  return Status::Ok();
}

void LateData::Write(uint32_t shard, uint64_t seq, std::string lines, size_t line_count,
                     std::function<void(Status)> done) {
  worker_->Post([this, shard, seq, lines = std::move(lines), line_count, done = std::move(done)]() mutable {
    Status st;
    if (!open_) {
      // Never a name a file had before, done ones included: the rebuild
      // knows a folded file by its name (the deployed manifests'
      // late_inputs), so a new file sealed under a done one's name within
      // the same second was taken for it, marked done and never folded.
      int64_t created = std::max(static_cast<int64_t>(std::time(nullptr)), newest_created_ + 1);
      while (FileExists(dir_ + "/" + LateFileName(created, false)) ||
             FileExists(dir_ + "/" + LateFileName(created, true)) ||
             FileExists(dir_ + "/" + DoneLateFileName(LateFileName(created, true)))) {
        ++created;
      }
      newest_created_ = created;
      auto w = FramedLogWriter::Open(dir_ + "/" + LateFileName(created, false));
      if (w.ok()) {
        open_ = std::move(w).value();
        open_created_ = created;
      } else {
        st = w.status();
      }
    }
    if (st.ok()) st = open_->Append(FormatBatchHeader(source_, static_cast<int>(shard), seq) + lines);
    if (st.ok()) st = open_->Sync();
    if (st.ok()) {
      lines_written_.fetch_add(line_count);
      frames_written_.fetch_add(1);
    } else {
      if (open_) open_write_failed_ = true;
      spdlog::error("late data: writing shard {} seq {} failed: {}", shard, seq, st.ToString());
    }
    post_([done = std::move(done), st] { done(st); });
  });
}

Result<std::vector<std::string>> LateData::SealNow() {
  std::vector<std::string> sealed;
  if (!open_) return sealed;
  const std::string path = open_->path();
  CLICKATRON_RETURN_IF_ERROR(open_->Close());
  open_.reset();
  if (open_write_failed_) {
    // Opened again, which cuts a torn last frame: an append that failed and
    // could not cut itself back must not end a sealed file (a start takes
    // that for damage). Its batch was refused, never acknowledged. Only
    // then: the reopen reads the whole file.
    auto whole = FramedLogWriter::Open(path);
    if (!whole.ok()) return whole.status();
    CLICKATRON_RETURN_IF_ERROR((*whole)->Close());
    open_write_failed_ = false;
  }
  const std::string to = dir_ + "/" + LateFileName(open_created_, true);
  CLICKATRON_RETURN_IF_ERROR(RenameDurably(path, to));
  spdlog::info("late data: sealed {}", to);
  sealed.push_back(to);
  return sealed;
}

void LateData::Seal(std::function<void(Result<std::vector<std::string>>)> done) {
  worker_->Post([this, done = std::move(done)]() mutable {
    auto result = SealNow();
    post_([done = std::move(done), result = std::move(result)]() mutable { done(std::move(result)); });
  });
}

void LateData::SealIfOlder(int64_t max_age_seconds) {
  worker_->Post([this, max_age_seconds] {
    if (!open_ || static_cast<int64_t>(std::time(nullptr)) - open_created_ < max_age_seconds) return;
    auto result = SealNow();
    if (!result.ok()) spdlog::error("late data: sealing failed: {}", result.status().ToString());
  });
}

template <typename T>
void LateData::OnWorker(std::function<T()> work, std::function<void(T)> done) {
  worker_->Post([this, work = std::move(work), done = std::move(done)]() mutable {
    auto result = std::make_shared<T>(work());
    post_([done = std::move(done), result]() mutable { done(std::move(*result)); });
  });
}

void LateData::ListSealed(std::function<void(Result<std::vector<FileInfo>>)> done) {
  OnWorker<Result<std::vector<FileInfo>>>(
      [this]() -> Result<std::vector<FileInfo>> {
        std::vector<std::pair<int64_t, FileInfo>> found;  // oldest first
        std::error_code ec;
        for (const auto& entry : std::filesystem::directory_iterator(dir_, ec)) {
          const std::string name = entry.path().filename().string();
          int64_t created = 0;
          bool sealed = false;
          if (!IsSealedLateFileName(name) || !ParseLateFileName(name, &created, &sealed)) continue;
          struct stat st;
          if (::stat(entry.path().c_str(), &st) != 0) {
            if (errno == ENOENT) continue;  // removed meanwhile by someone else
            return Status::IoError(fmt::format("stat {}: {}", entry.path().string(), std::strerror(errno)));
          }
          if (!S_ISREG(st.st_mode)) continue;
          found.emplace_back(created, FileInfo{name, static_cast<uint64_t>(st.st_size)});
        }
        if (ec) return Status::IoError(fmt::format("list {}: {}", dir_, ec.message()));
        std::sort(found.begin(), found.end(), [](const auto& a, const auto& b) { return a.first < b.first; });
        std::vector<FileInfo> files;
        for (auto& [created, info] : found) files.push_back(std::move(info));
        return files;
      },
      std::move(done));
}

void LateData::OpenSealed(std::string name, std::function<void(Result<std::shared_ptr<const OpenFile>>)> done) {
  OnWorker<Result<std::shared_ptr<const OpenFile>>>(
      [this, name = std::move(name)]() -> Result<std::shared_ptr<const OpenFile>> {
        if (!IsSealedLateFileName(name)) {
          return Status::InvalidArgument(fmt::format("\"{}\" is not a sealed late-data file name (late-<unix>.sealed)",
                                                     name));
        }
        const std::string path = dir_ + "/" + name;
        UniqueFd fd(::open(path.c_str(), O_RDONLY | O_CLOEXEC));
        if (!fd.valid()) {
          if (errno == ENOENT) return Status::NotFound(fmt::format("no sealed late-data file {}", name));
          return Status::IoError(fmt::format("open {}: {}", path, std::strerror(errno)));
        }
        struct stat st;
        if (::fstat(fd.get(), &st) != 0) return Status::IoError(fmt::format("fstat {}: {}", path, std::strerror(errno)));
        if (!S_ISREG(st.st_mode)) return Status::NotFound(fmt::format("no sealed late-data file {}", name));
        auto file = std::make_shared<OpenFile>();
        file->name = name;
        file->fd = std::move(fd);
        file->bytes = static_cast<uint64_t>(st.st_size);
        return std::shared_ptr<const OpenFile>(std::move(file));
      },
      std::move(done));
}

void LateData::ReadAt(std::shared_ptr<const OpenFile> file, uint64_t offset, size_t max_bytes,
                      std::function<void(Result<std::string>)> done) {
  OnWorker<Result<std::string>>(
      [file = std::move(file), offset, max_bytes]() -> Result<std::string> {
        const uint64_t left = offset < file->bytes ? file->bytes - offset : 0;
        std::string out(static_cast<size_t>(std::min<uint64_t>(left, max_bytes)), '\0');
        size_t got = 0;
        while (got < out.size()) {
          const ssize_t n = ::pread(file->fd.get(), out.data() + got, out.size() - got,
                                    static_cast<off_t>(offset + got));
          if (n < 0 && errno == EINTR) continue;
          if (n < 0) return Status::IoError(fmt::format("read {}: {}", file->name, std::strerror(errno)));
          if (n == 0) {
            return Status::IoError(fmt::format("{} ended at {} bytes, {} were there when it was opened", file->name,
                                               offset + got, file->bytes));
          }
          got += static_cast<size_t>(n);
        }
        return out;
      },
      std::move(done));
}

void LateData::MarkDone(std::string name, std::function<void(Result<bool>)> done) {
  OnWorker<Result<bool>>(
      [this, name = std::move(name)]() -> Result<bool> {
        if (!IsSealedLateFileName(name)) {
          return Status::InvalidArgument(fmt::format("\"{}\" is not a sealed late-data file name (late-<unix>.sealed)",
                                                     name));
        }
        const std::string sealed = dir_ + "/" + name;
        const std::string done_path = dir_ + "/" + DoneLateFileName(name);
        if (FileExists(sealed)) {
          CLICKATRON_RETURN_IF_ERROR(RenameDurably(sealed, done_path));
          spdlog::info("late data: {} is in a deployed archive generation: marked done", name);
          if (scrubber_) CLICKATRON_RETURN_IF_ERROR(ScrubFile(done_path, scrubber_()));
          return false;
        }
        if (FileExists(done_path)) return true;
        return Status::NotFound(fmt::format("no late-data file {} (sealed or done)", name));
      },
      std::move(done));
}

Result<std::vector<std::string>> LateData::FilesEndingIn(std::initializer_list<std::string_view> suffixes) const {
  std::vector<std::string> paths;
  std::error_code ec;
  for (const auto& entry : std::filesystem::directory_iterator(dir_, ec)) {
    const std::string name = entry.path().filename().string();
    if (!name.starts_with("late-")) continue;
    for (std::string_view suffix : suffixes) {
      if (name.ends_with(suffix)) paths.push_back(entry.path().string());
    }
  }
  if (ec) return Status::IoError(fmt::format("list {}: {}", dir_, ec.message()));
  std::sort(paths.begin(), paths.end());
  return paths;
}

namespace {

// Calls fn(header, payload, lines) for each frame of a late-data file,
// until *stop (when given) turns true.
template <typename Fn>
Status ForEachFrame(const std::string& path, Fn&& fn, const bool* stop = nullptr) {
  auto reader = FramedLogReader::Open(path);
  if (!reader.ok()) return reader.status();
  while (stop == nullptr || !*stop) {
    auto next = (*reader)->Next();
    if (!next.ok()) return next.status().WithContext(path);
    if (!next->has_value()) return Status::Ok();
    auto parsed = ParseOplogPayload(**next);
    if (!parsed.ok()) return parsed.status().WithContext(path);
    CLICKATRON_RETURN_IF_ERROR(fn(parsed->header, std::string_view(**next), parsed->lines));
  }
  return Status::Ok();
}

// How many lines of batch frames in `path` `covered` names, counting no
// further than `enough`.
Result<uint64_t> CountCovered(const std::string& path, const LateData::LinePredicate& covered,
                              uint64_t enough = UINT64_MAX) {
  uint64_t count = 0;
  bool stop = false;
  CLICKATRON_RETURN_IF_ERROR(ForEachFrame(
      path,
      [&](const OplogHeader& h, std::string_view, std::string_view lines) {
        if (h.kind != OplogHeader::Kind::kBatch) return Status::Ok();
        ForEachPayloadLine(lines, [&](std::string_view line) { count += !stop && covered(h, line) ? 1 : 0; });
        stop = count >= enough;
        return Status::Ok();
      },
      &stop));
  return count;
}

}  // namespace

Status LateData::ScrubFile(const std::string& path, const LinePredicate& covered) {
  // Read once to see, again to rewrite: most files hold no such line.
  auto count = CountCovered(path, covered);
  if (!count.ok()) return count.status();
  if (*count == 0) return Status::Ok();
  const std::string temp = path + ".scrub";
  std::error_code ec;
  std::filesystem::remove(temp, ec);
  auto writer = FramedLogWriter::Open(temp);
  if (!writer.ok()) return writer.status();
  CLICKATRON_RETURN_IF_ERROR(ForEachFrame(path, [&](const OplogHeader& h, std::string_view payload,
                                                    std::string_view lines) {
    if (h.kind != OplogHeader::Kind::kBatch) return (*writer)->Append(payload);
    std::string kept(payload.substr(0, payload.find('\n') + 1));  // the header: the (shard, seq) record
    ForEachPayloadLine(lines, [&](std::string_view line) {
      if (!covered(h, line)) kept.append(line).push_back('\n');
    });
    return (*writer)->Append(kept);
  }));
  CLICKATRON_RETURN_IF_ERROR((*writer)->Sync());
  CLICKATRON_RETURN_IF_ERROR((*writer)->Close());
  CLICKATRON_RETURN_IF_ERROR(RenameDurably(temp, path));
  spdlog::info("late data: {} rewritten without the {} lines deletions took out", path, *count);
  return Status::Ok();
}

void LateData::ScrubDone(std::function<void(Status)> done) {
  OnWorker<Status>(
      [this]() -> Status {
        if (!scrubber_) return Status::Ok();
        const LinePredicate covered = scrubber_();
        auto files = FilesEndingIn({".done"});
        if (!files.ok()) return files.status();
        for (const std::string& path : *files) CLICKATRON_RETURN_IF_ERROR(ScrubFile(path, covered));
        return Status::Ok();
      },
      std::move(done));
}

void LateData::Holds(LinePredicate covered, std::function<void(Result<bool>)> done) {
  OnWorker<Result<bool>>(
      [this, covered = std::move(covered)]() -> Result<bool> {
        auto files = FilesEndingIn({".open", ".sealed", ".done"});
        if (!files.ok()) return files.status();
        for (const std::string& path : *files) {
          auto count = CountCovered(path, covered, /*enough=*/1);
          if (!count.ok()) return count.status();
          if (*count > 0) return true;
        }
        return false;
      },
      std::move(done));
}

}  // namespace clickatron::api
