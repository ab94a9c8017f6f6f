#include "raw_answer.h"

#include <sys/socket.h>
#include <strings.h>
#include <sys/stat.h>

#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

#include "clickatron/http_server.h"

namespace clickatron {

bool SameOpenSocket(evutil_socket_t fd, ino_t inode) {
  struct stat st {};
  return fd >= 0 && ::fstat(fd, &st) == 0 && S_ISSOCK(st.st_mode) && st.st_ino == inode;
}

bool EvhttpStillOwns(bufferevent* bev) {
  bufferevent_event_cb event_cb = nullptr;
  bufferevent_getcb(bev, nullptr, nullptr, &event_cb, nullptr);
  return event_cb != nullptr;
}

namespace {

std::vector<std::pair<std::string, RefusalBody>>& RefusalBodies() {
  static std::vector<std::pair<std::string, RefusalBody>> bodies;
  return bodies;
}

std::string RawAnswer(int status, std::string_view phrase, std::string_view body, std::string_view extra_headers) {
  return "HTTP/1.1 " + std::to_string(status) + " " + std::string(phrase) +
         "\r\nContent-Type: application/json\r\n" + std::string(extra_headers) +
         "Connection: close\r\nContent-Length: " + std::to_string(body.size()) + "\r\n\r\n" + std::string(body);
}

}  // namespace

void SetRefusalBody(std::string path, RefusalBody body) {
  for (auto& [known, shape] : RefusalBodies()) {
    if (known == path) {
      shape = body;
      return;
    }
  }
  RefusalBodies().emplace_back(std::move(path), body);
}

RefusalBody RefusalBodyFor(std::string_view target) {
  if (RefusalBodies().empty()) return nullptr;
  // Absolute form (RFC 9112 3.2.2): the path starts after the authority.
  if (const size_t scheme = target.find("://"); scheme != std::string_view::npos && target.front() != '/') {
    const size_t path = target.find('/', scheme + 3);
    target = path == std::string_view::npos ? std::string_view("/") : target.substr(path);
  }
  target = target.substr(0, target.find_first_of("?#"));
  for (const auto& [path, body] : RefusalBodies()) {
    if (path == target) return body;
  }
  return nullptr;
}

std::string_view RawHeadTarget(std::string_view head) {
  const size_t start = head.find(' ');
  if (start == std::string_view::npos) return {};
  const size_t end = head.find_first_of(" \r\n", start + 1);
  return head.substr(start + 1, end == std::string_view::npos ? std::string_view::npos : end - start - 1);
}

std::string RawJsonAnswer(int status, std::string_view phrase, std::string_view reason, std::string_view message,
                          std::string_view extra_headers) {
  nlohmann::json env = Envelope(status, reason, nullptr);
  env["message"] = message;
  return RawAnswer(status, phrase, env.dump() + "\n", extra_headers);
}

std::string RawRefusal(std::string_view target, int status, std::string_view phrase, std::string_view reason,
                       std::string_view message, std::string_view extra_headers) {
  if (RefusalBody body = RefusalBodyFor(target)) return RawAnswer(status, phrase, body(status, reason, message), extra_headers);
  return RawJsonAnswer(status, phrase, reason, message, extra_headers);
}

void SendAnswerAndShutdown(evutil_socket_t fd, std::string_view answer) {
  // Small enough for an idle socket's send buffer; if it does not fit, the
  // client is not reading and only the close matters.
  ::send(fd, answer.data(), answer.size(), MSG_NOSIGNAL | MSG_DONTWAIT);
  ::shutdown(fd, SHUT_WR);
  char discard[16384];
  for (int i = 0; i < 64 && ::recv(fd, discard, sizeof(discard), MSG_DONTWAIT) > 0; ++i) {
  }
}

std::optional<std::string_view> RawHeadHeader(std::string_view head, std::string_view name) {
  size_t pos = head.find("\r\n");  // header lines start after the request line
  while (pos != std::string_view::npos && pos + 2 < head.size()) {
    const size_t start = pos + 2;
    const size_t end = head.find("\r\n", start);
    const std::string_view line = head.substr(start, end == std::string_view::npos ? std::string_view::npos : end - start);
    if (line.size() > name.size() && line[name.size()] == ':' &&
        ::strncasecmp(line.data(), name.data(), name.size()) == 0) {
      std::string_view value = line.substr(name.size() + 1);
      while (!value.empty() && (value.front() == ' ' || value.front() == '\t')) value.remove_prefix(1);
      return value;
    }
    pos = end;
  }
  return std::nullopt;
}

}  // namespace clickatron
