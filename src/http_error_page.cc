// libevent's own error answers, in the JSON envelope.
//
// evhttp answers some requests before any handler of ours sees them: a
// request line, URI, header block or version it cannot parse (400), a body
// or header block over the limits (413), a method outside the allowed set
// (501). libevent 2.1 has no hook for these (2.2's evhttp_set_errorcb does
// not exist in Debian 12's 2.1.12); each goes through the exported
// evhttp_send_error(), which writes an HTML page.
//
// The shared library calls evhttp_send_error through its PLT, so by ELF
// symbol interposition the definition below — in the executable, hence
// first in the lookup order — replaces libevent's for libevent's own calls
// as well as ours. It does what libevent's does (close the connection
// after the answer, since the request stream can no longer be trusted;
// answer as HTTP/1.1 when the request line gave no usable version) with
// the envelope instead of HTML. tests/core/http_errors_test.cc checks every
// one of these answers, so a libevent built without interposable calls
// would fail the tests rather than go unnoticed.
#include <cstdlib>
#include <string>
#include <string_view>

#include <event2/buffer.h>
#include <event2/http.h>
#include <event2/http_struct.h>
#include <event2/keyvalq_struct.h>
#include <nlohmann/json.hpp>

#include "clickatron/http_server.h"
#include "http_error_page.h"
#include "raw_answer.h"
#include "request_deadline.h"

namespace clickatron {
namespace {

struct ErrorText {
  std::string_view reason;
  std::string_view message;
};

ErrorText TextFor(int code) {
  switch (code) {
    case 400:
      return {"BAD_REQUEST",
              "malformed HTTP request: the request line, URI, a header or the HTTP version could not be parsed, "
              "or the request line and headers are larger than [http] max_header_bytes"};
    case 413:
      // libevent answers a chunked body it cannot parse (a chunk size that
      // is not hex, or has a chunk extension) with the same 413.
      return {"BODY_TOO_LARGE",
              "the request body is larger than [http] max_body_bytes (or, sent chunked, a chunk size line "
              "could not be read: plain hex sizes only, no chunk extensions)"};
    case 501:
      return {"METHOD_NOT_IMPLEMENTED", "this HTTP method is not served (GET, POST, HEAD, PUT, DELETE are)"};
    default:
      return {"HTTP_ERROR", "the request could not be served"};
  }
}

}  // namespace

bool JsonErrorPagesLinked() { return true; }

}  // namespace clickatron

extern "C" void evhttp_send_error(evhttp_request* req, int error, const char* reason) {
  using clickatron::Envelope;
  const clickatron::ErrorText text = clickatron::TextFor(error);
  // A route with a refusal body of its own gets it (the Influx write doors
  // answer in Influx's error shape); the request line may not have parsed.
  const char* uri = evhttp_request_get_uri(req);
  std::string body;
  if (clickatron::RefusalBody shape = uri == nullptr ? nullptr : clickatron::RefusalBodyFor(uri)) {
    body = shape(error, text.reason, text.message);
  } else {
    nlohmann::json env = Envelope(error, text.reason, nullptr);
    env["message"] = text.message;
    body = env.dump() + "\n";
  }

  evkeyvalq* headers = evhttp_request_get_output_headers(req);
  evhttp_remove_header(headers, "Connection");
  evhttp_add_header(headers, "Connection", "close");
  evhttp_remove_header(headers, "Content-Type");
  evhttp_add_header(headers, "Content-Type", "application/json");
  // A request line without a version leaves 0.x; answer in HTTP/1.1 as
  // libevent's own error page does.
  if (req->major != 1 || req->minor > 1) {
    req->major = 1;
    req->minor = 1;
  }
  // libevent writes an answer to CONNECT as the start of a tunnel (no
  // length, connection kept): refused, it is an ordinary answer.
  if (req->type == EVHTTP_REQ_CONNECT) req->type = EVHTTP_REQ_GET;
  // The request is answered: its read deadline no longer applies.
  if (evhttp_connection* conn = evhttp_request_get_connection(req)) {
    clickatron::RequestDeadlines::Answered(evhttp_connection_get_bufferevent(conn));
  }
  evbuffer* buf = evbuffer_new();
  if (buf == nullptr) std::abort();  // as libevent does on allocation failure
  // A HEAD answer has no body (libevent would write it anyway).
  if (req->type != EVHTTP_REQ_HEAD) evbuffer_add(buf, body.data(), body.size());
  evhttp_send_reply(req, error, reason, buf);
  evbuffer_free(buf);
}
