// clickatron-bench-hello: the HTTP ceiling for benchmarks. A bare libevent
// evhttp server on one thread answering "OK\n" to any path, with nothing a
// real daemon does (no routing, query parsing, stats or headers of its own).
// scripts/bench-* load it with the same requests as the daemon under test,
// so "daemon / hello" says how much of the ceiling the daemon reaches.
//
//   clickatron-bench-hello --port N [--host 127.0.0.1]
#include <event2/buffer.h>
#include <event2/event.h>
#include <event2/http.h>

#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>

namespace {

void AnswerOk(evhttp_request* req, void*) {
  evbuffer* body = evbuffer_new();
  evbuffer_add(body, "OK\n", 3);
  evhttp_add_header(evhttp_request_get_output_headers(req), "Content-Type", "text/plain");
  evhttp_send_reply(req, 200, "OK", body);
  evbuffer_free(body);
}

void Stop(evutil_socket_t, short, void* base) { event_base_loopexit(static_cast<event_base*>(base), nullptr); }

}  // namespace

int main(int argc, char** argv) {
  std::string host = "127.0.0.1";
  int port = -1;
  for (int i = 1; i + 1 < argc; i += 2) {
    if (std::strcmp(argv[i], "--port") == 0) {
      port = std::atoi(argv[i + 1]);
    } else if (std::strcmp(argv[i], "--host") == 0) {
      host = argv[i + 1];
    }
  }
  if (port < 0 || port > 65535 || argc % 2 == 0) {
    std::fprintf(stderr, "usage: %s --port N [--host ADDR]\n", argv[0]);
    return 2;
  }
  std::signal(SIGPIPE, SIG_IGN);
  event_base* base = event_base_new();
  evhttp* http = evhttp_new(base);
  if (evhttp_bind_socket(http, host.c_str(), static_cast<uint16_t>(port)) != 0) {
    std::fprintf(stderr, "cannot listen on %s:%d\n", host.c_str(), port);
    return 1;
  }
  evhttp_set_gencb(http, &AnswerOk, nullptr);
  event* term = evsignal_new(base, SIGTERM, &Stop, base);
  event* intr = evsignal_new(base, SIGINT, &Stop, base);
  event_add(term, nullptr);
  event_add(intr, nullptr);
  event_base_dispatch(base);
  event_free(term);
  event_free(intr);
  evhttp_free(http);
  event_base_free(base);
  return 0;
}
