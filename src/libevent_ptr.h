// RAII owners for libevent's C handles (Envoy's CSmartPtr idea). Internal to
// the core: only the HTTP server and client include <event2/…>.
#pragma once

#include <event2/buffer.h>
#include <event2/event.h>
#include <event2/http.h>

#include <memory>

namespace clickatron {

template <typename T, void (*Free)(T*)>
struct CDeleter {
  void operator()(T* p) const {
    if (p) Free(p);
  }
};
template <typename T, void (*Free)(T*)>
using CPtr = std::unique_ptr<T, CDeleter<T, Free>>;

using EventBasePtr = CPtr<event_base, event_base_free>;
using EventPtr = CPtr<event, event_free>;
using EvhttpPtr = CPtr<evhttp, evhttp_free>;
using EvbufferPtr = CPtr<evbuffer, evbuffer_free>;

// libevent must know about pthreads before any base exists, so that
// RunInLoop can wake a loop from another thread.
void EnableLibeventThreads();

}  // namespace clickatron
