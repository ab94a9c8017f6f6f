#include "export.h"

#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <charconv>

#include <fmt/format.h>

#include "clickatron/fetch_to_file.h"
#include "clickatron/file_util.h"
#include "clickatron/http_client.h"
#include "clickatron/key_codec.h"
#include "clickatron/unique_fd.h"

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

}  // namespace

Result<ExportResult> ExportDay(const ExportOptions& options) {
  StreamCheck check;
  BlockingHttpClient client(options.cluster_secret, options.tls);
  HttpRequestSpec request;
  request.method = "GET";
  request.target = "/export?date=" + options.date;
  request.bearer_token = options.admin_token;
  request.timeout_ms = options.timeout_ms;
  const std::string who = fmt::format("export of {} from {} ({})", options.date, options.member_name,
                                      options.peer.ToString());
  FetchToFileOptions fetch;
  fetch.temp_suffix = ".tmp";
  fetch.on_chunk = [&](std::string_view chunk, uint64_t offset) {
    check.See(chunk, offset);
    if (options.progress != nullptr) options.progress->Add(0, chunk.size());
    return Status::Ok();
  };
  uint64_t tombstone_epoch = 0;
  fetch.check = [&](const HttpResponse& response, const std::string& tmp, uint64_t) -> Status {
    const std::string epoch = response.Header("X-Tombstone-Epoch");
    if (!epoch.empty()) {
      const auto [end, ec] = std::from_chars(epoch.data(), epoch.data() + epoch.size(), tombstone_epoch);
      if (ec != std::errc() || end != epoch.data() + epoch.size()) {
        return Status::Corruption(
            fmt::format("{}: X-Tombstone-Epoch {} is not a number", who, QuoteForMessage(epoch)));
      }
    }
    if (check.error_offset() >= 0) {
      return Status::Unavailable(fmt::format("{}: the stream broke off: {}", who,
                                             QuoteForMessage(ReadLineAt(tmp, check.error_offset(), 4096))));
    }
    if (!check.complete_last_line()) {
      return Status::Unavailable(fmt::format("{}: the stream ended inside a line (truncated)", who));
    }
    return Status::Ok();
  };
  Result<uint64_t> received = FetchToFile(client, options.peer, std::move(request), options.path, who, fetch);
  if (!received.ok()) return received.status();
  if (options.progress != nullptr) options.progress->Add(check.lines(), 0);
  return ExportResult{*received, check.lines(), tombstone_epoch};
}

}  // namespace clickatron::rebuild
