// See fetch_to_file.h.
#include "clickatron/fetch_to_file.h"

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include <fmt/format.h>

#include "clickatron/file_util.h"
#include "clickatron/unique_fd.h"

namespace clickatron {
namespace {

// An error answer's start is all its message needs.
constexpr size_t kErrorHeadBytes = 4096;
// Chunks arrive a socket read at a time (16 KiB or less): written in blocks
// of this size, not with a write(2) each.
constexpr size_t kWriteBytes = 1 << 20;

}  // namespace

Result<uint64_t> FetchToFile(BlockingHttpClient& client, const HostPort& peer, HttpRequestSpec request,
                             const std::string& path, std::string_view who, const FetchToFileOptions& options) {
  const std::string temp = path + options.temp_suffix;
  UniqueFd out(::open(temp.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644));
  if (!out.valid()) return Status::IoError(fmt::format("create {}: {}", temp, std::strerror(errno)));
  const auto fail = [&](Status st) -> Result<uint64_t> {
    ::unlink(temp.c_str());
    return st;
  };
  uint64_t bytes = 0;
  std::string head;  // an error answer's start, for its message
  std::string pending;  // not written yet
  pending.reserve(kWriteBytes);
  HttpResponse r = client.FetchStreaming(peer, std::move(request), [&](std::string_view chunk) -> Status {
    if (head.size() < kErrorHeadBytes) head.append(chunk.substr(0, kErrorHeadBytes - head.size()));
    if (options.on_chunk) CLICKATRON_RETURN_IF_ERROR(options.on_chunk(chunk, bytes));
    bytes += chunk.size();
    pending.append(chunk);
    if (pending.size() < kWriteBytes) return Status::Ok();
    Status written = WriteAllToFd(out.get(), pending, temp);
    pending.clear();
    return written;
  });
  // An answer other than 200 says why in its body, even when a hook refused
  // its bytes (the hooks cannot know the status before the end: an empty
  // file's check refuses any byte, an error answer's too).
  if (r.status_code != 0 && r.status_code != 200) {
    HttpResponse answer;
    answer.status_code = r.status_code;
    answer.body = std::move(head);
    const std::string reason = AnswerReason(answer);
    return fail(Status::Unavailable(fmt::format("{}: {}", who, DescribeHttpAnswer(answer)),
                                    reason.empty() ? "UNAVAILABLE" : reason));
  }
  if (!r.ok()) {
    // A hook's or the disk's own error keeps its code; the wire's is UNAVAILABLE.
    const Status& st = r.transport;
    if (st.code() == StatusCode::kUnavailable) {
      return fail(Status::Unavailable(fmt::format("{}: {}", who, st.message())));
    }
    return fail(st.WithContext(who));
  }
  if (Status written = WriteAllToFd(out.get(), pending, temp); !written.ok()) return fail(std::move(written));
  if (::fsync(out.get()) != 0) return fail(Status::IoError(fmt::format("fsync {}: {}", temp, std::strerror(errno))));
  if (Status closed = out.Close(); !closed.ok()) return fail(closed.WithContext(temp));
  if (options.check) {
    if (Status st = options.check(r, temp, bytes); !st.ok()) return fail(std::move(st));
  }
  if (Status renamed = RenameDurably(temp, path); !renamed.ok()) return fail(std::move(renamed));
  return bytes;
}

}  // namespace clickatron
