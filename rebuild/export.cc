#include "export.h"

#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <cstring>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "clickatron/file_util.h"
#include "clickatron/http_client.h"
#include "clickatron/key_codec.h"
#include "clickatron/unique_fd.h"
#include "sortmerge/line_io.h"

namespace clickatron::rebuild {
namespace {

// Watches the stream for a line starting with '!': the realtime daemon's way
// to say "this export broke after the 200 went out" (no record key starts
// with '!').
class StreamCheck {
 public:
  void See(std::string_view chunk, uint64_t offset) {
    for (size_t i = 0; i < chunk.size(); ++i) {
      if (at_line_start_ && chunk[i] == '!' && error_offset_ < 0) {
        error_offset_ = static_cast<int64_t>(offset + i);
      }
      at_line_start_ = chunk[i] == '\n';
    }
    lines_ += static_cast<uint64_t>(std::count(chunk.begin(), chunk.end(), '\n'));
  }
  bool complete_last_line() const { return at_line_start_; }
  int64_t error_offset() const { return error_offset_; }
  uint64_t lines() const { return lines_; }

 private:
  bool at_line_start_ = true;
  int64_t error_offset_ = -1;
  uint64_t lines_ = 0;
};

// The line at `offset` (at most max_bytes of it).
std::string ReadLineAt(const std::string& path, int64_t offset, size_t max_bytes) {
  const UniqueFd fd(::open(path.c_str(), O_RDONLY | O_CLOEXEC));
  if (!fd.valid()) return {};
  std::string out(max_bytes, '\0');
  const ssize_t n = ::pread(fd.get(), out.data(), max_bytes, offset);
  out.resize(n > 0 ? static_cast<size_t>(n) : 0);
  return out.substr(0, out.find('\n'));
}

// The "message" of an error envelope, or the body's start.
std::string ErrorText(const std::string& body) {
  nlohmann::json j = nlohmann::json::parse(body, nullptr, /*allow_exceptions=*/false);
  if (j.is_object()) {
    std::string reason = j.value("status_txt", "");
    std::string message = j.value("message", "");
    if (!reason.empty() || !message.empty()) return fmt::format("{} {}", reason, message);
  }
  return QuoteForMessage(body);
}

}  // namespace

Result<ExportResult> ExportDay(const ExportOptions& options) {
  const std::string tmp = options.path + ".tmp";
  auto writer = LineWriter::Create(tmp, {.buffer_bytes = 1u << 20, .fsync = true});
  if (!writer.ok()) return writer.status();
  StreamCheck check;
  uint64_t received = 0;
  BlockingHttpClient client(options.cluster_secret, options.tls);
  HttpRequestSpec request;
  request.method = "GET";
  request.target = "/export?date=" + options.date;
  request.bearer_token = options.admin_token;
  request.timeout_ms = options.timeout_ms;
  const std::string who = fmt::format("export of {} from {} ({})", options.date, options.member_name,
                                      options.peer.ToString());
  HttpResponse response = client.FetchStreaming(options.peer, request, [&](std::string_view chunk) {
    check.See(chunk, received);
    received += chunk.size();
    if (options.progress != nullptr) options.progress->Add(0, chunk.size());
    return (*writer)->PutRaw(chunk);
  });
  const Status finished = (*writer)->Finish();
  const auto fail = [&](Status st) -> Result<ExportResult> {
    ::unlink(tmp.c_str());
    return st;
  };
  if (!response.ok()) return fail(response.transport.WithContext(who));
  if (!finished.ok()) return fail(finished.WithContext(who));
  if (response.status_code != 200) {
    return fail(Status::Unavailable(fmt::format("{}: HTTP {}: {}", who, response.status_code,
                                                ErrorText(ReadLineAt(tmp, 0, 4096)))));
  }
  if (check.error_offset() >= 0) {
    return fail(Status::Unavailable(
        fmt::format("{}: the stream broke off: {}", who, QuoteForMessage(ReadLineAt(tmp, check.error_offset(), 4096)))));
  }
  if (!check.complete_last_line()) {
    return fail(Status::Unavailable(fmt::format("{}: the stream ended inside a line (truncated)", who)));
  }
  CLICKATRON_RETURN_IF_ERROR(RenameDurably(tmp, options.path));
  if (options.progress != nullptr) options.progress->Add(check.lines(), 0);
  return ExportResult{received, check.lines()};
}

}  // namespace clickatron::rebuild
