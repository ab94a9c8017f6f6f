#include "raw_answer.h"

#include <sys/socket.h>
#include <strings.h>
#include <sys/stat.h>

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

std::string RawJsonAnswer(int status, std::string_view phrase, std::string_view reason, std::string_view message,
                          std::string_view extra_headers) {
  nlohmann::json env = Envelope(status, reason, nullptr);
  env["message"] = message;
  const std::string body = env.dump() + "\n";
  return "HTTP/1.1 " + std::to_string(status) + " " + std::string(phrase) +
         "\r\nContent-Type: application/json\r\n" + std::string(extra_headers) +
         "Connection: close\r\nContent-Length: " + std::to_string(body.size()) + "\r\n\r\n" + body;
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
