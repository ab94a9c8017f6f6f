// Answers written straight to a connection's socket, for requests the
// server refuses before (or instead of) evhttp reaching a handler: a request
// past its deadline (request_deadline.cc) or past a bound
// (connection_limits.cc). Both know a connection only by its bufferevent,
// which evhttp may free at any time: these helpers say when it is still
// safe to touch.
//
// Thread-safety: the loop thread that owns the connection.
#pragma once

#include <sys/types.h>

#include <optional>
#include <string>
#include <string_view>

#include <event2/bufferevent.h>

#include "clickatron/http_server.h"

namespace clickatron {

// Whether `fd` is still an open socket with `inode`: then the bufferevent
// that owns it (closing it when freed) still exists.
bool SameOpenSocket(evutil_socket_t fd, ino_t inode);
// Whether evhttp still uses `bev` (it clears the callbacks when it lets go
// of a connection whose destructor has yet to run). Only after
// SameOpenSocket said its memory is there.
bool EvhttpStillOwns(bufferevent* bev);

// A whole HTTP/1.1 answer with the JSON envelope (status_txt = reason, a
// message), "Connection: close", and `extra_headers` ("Name: value\r\n"…).
std::string RawJsonAnswer(int status, std::string_view phrase, std::string_view reason, std::string_view message,
                          std::string_view extra_headers = {});

// The same answer for a request to `target` (a request target: origin or
// absolute form, with or without a query): with the body its route
// registered (SetRefusalBody), else the envelope.
std::string RawRefusal(std::string_view target, int status, std::string_view phrase, std::string_view reason,
                       std::string_view message, std::string_view extra_headers = {});
// The registered refusal body of `target`'s path; nullptr when none.
RefusalBody RefusalBodyFor(std::string_view target);
// The request target of a raw request head ("" when the line is malformed).
std::string_view RawHeadTarget(std::string_view head);

// Writes `answer` to a plain socket, ends writing, and discards the input
// waiting (bounded): unread input would make the close a reset, which can
// destroy the answer before the client reads it.
void SendAnswerAndShutdown(evutil_socket_t fd, std::string_view answer);

// The value of header `name` (case-insensitive) in a raw request head (the
// request line and header lines, "\r\n"-ended), leading blanks skipped; or
// nullopt when absent. For checks made before evhttp has parsed the head.
std::optional<std::string_view> RawHeadHeader(std::string_view head, std::string_view name);

}  // namespace clickatron
