// See recovery_gate.h.
#include "recovery_gate.h"

#include <fmt/format.h>
#include <spdlog/spdlog.h>
#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>

#include "clickatron/file_util.h"
#include "clickatron/unique_fd.h"

namespace clickatron::realtime {

Result<RecoveryGate> RecoveryGate::Open(const std::string& data_dir, const std::map<std::string, uint64_t>& durable,
                                        const std::set<std::string, std::less<>>& api_sources,
                                        std::chrono::milliseconds max_wait, Clock::time_point now) {
  RecoveryGate gate;
  gate.marker_path_ = data_dir + "/running";
  gate.senders_path_ = data_dir + "/sources";
  gate.max_wait_ = max_wait;
  if (FileExists(gate.senders_path_)) {
    Result<std::string> noted = ReadFileToString(gate.senders_path_);
    if (!noted.ok()) return noted.status();
    // A last line without its newline was torn by a crash: cut off, so that
    // the next name appended is not glued to it.
    const size_t whole = noted->rfind('\n') == std::string::npos ? 0 : noted->rfind('\n') + 1;
    if (whole < noted->size()) {
      noted->resize(whole);
      CLICKATRON_RETURN_IF_ERROR(WriteFileAtomically(gate.senders_path_, *noted));
    }
    for (std::string_view rest = *noted; !rest.empty();) {
      const size_t nl = rest.find('\n');
      if (nl > 0) gate.senders_.emplace(rest.substr(0, nl));
      rest = rest.substr(nl + 1);
    }
  }
  if (FileExists(gate.marker_path_)) {
    for (const auto& [source, seq] : durable) {
      if (seq > 0 && api_sources.contains(source)) gate.waiting_.emplace(source, seq);
    }
    for (const std::string& source : gate.senders_) {
      if (api_sources.contains(source)) gate.waiting_.emplace(source, 0);
    }
    gate.deadline_ = now + max_wait;
    if (!gate.waiting_.empty()) {
      spdlog::warn("the last run did not stop cleanly: reads answer 503 SHARD_RECOVERING until {} re-send what this "
                   "shard had applied and lost (at most {} ms)",
                   gate.WaitingNames(), max_wait.count());
    }
  }
  CLICKATRON_RETURN_IF_ERROR(WriteFileAtomically(gate.marker_path_, fmt::format("{}\n", ::getpid())));
  return gate;
}

std::string RecoveryGate::WaitingNames() const {
  std::string names;
  for (const auto& [source, seq] : waiting_) names += (names.empty() ? "" : ", ") + source;
  return names;
}

Status RecoveryGate::NoteSender(const std::string& source) {
  if (senders_.contains(source)) return Status::Ok();
  // Tried once per run: a disk that fails here is not written (nor logged)
  // again at every batch.
  senders_.insert(source);
  const UniqueFd fd(::open(senders_path_.c_str(), O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644));
  if (!fd.valid()) return ErrnoStatus("open", senders_path_);
  CLICKATRON_RETURN_IF_ERROR(WriteAllToFd(fd.get(), source + "\n", senders_path_));
  if (::fsync(fd.get()) != 0) return ErrnoStatus("fsync", senders_path_);
  return FsyncDir(DirName(senders_path_));
}

Status RecoveryGate::MarkStoppedCleanly() {
  if (::unlink(marker_path_.c_str()) != 0 && errno != ENOENT) return ErrnoStatus("unlink", marker_path_);
  return FsyncDir(DirName(marker_path_));
}

void RecoveryGate::Heard(const std::string& source, std::optional<uint64_t> heard, uint64_t applied,
                         Clock::time_point now) {
  auto it = waiting_.find(source);
  if (it == waiting_.end()) return;
  if (heard && applied < *heard) {  // still re-sending what was lost
    // A batch applied since: the re-send is under way, give it time. A poll
    // (or a batch that moved to late data) is no progress: it must not hold
    // reads back for good (a probe's did, for minutes, when every re-sent
    // line went to late data after the day's export).
    if (applied > it->second) deadline_ = std::max(deadline_, now + max_wait_);
    it->second = std::max(it->second, applied);
    return;
  }
  waiting_.erase(it);
  if (waiting_.empty()) spdlog::info("every API node has re-sent what this shard lost: reads are served again");
}

std::optional<std::string> RecoveryGate::HeldBack(Clock::time_point now) {
  if (waiting_.empty()) return std::nullopt;
  const std::string names = WaitingNames();
  if (now >= deadline_) {
    spdlog::warn("serving reads without having heard from {} since the restart: what they had sent after this "
                 "shard's last checkpoint is missing from answers until they send it again",
                 names);
    waiting_.clear();
    return std::nullopt;
  }
  return fmt::format("this shard restarted after a crash and waits for {} to re-send what it had applied and lost",
                     names);
}

}  // namespace clickatron::realtime
