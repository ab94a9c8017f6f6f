// See http_error_page.cc: libevent's own error answers in the JSON envelope.
#pragma once

namespace clickatron {

// Referenced by the HTTP server so that the linker takes http_error_page.o
// (and its evhttp_send_error) out of the static core library; without a
// reference it would leave the object out and libevent's HTML page would stay.
bool JsonErrorPagesLinked();

}  // namespace clickatron
