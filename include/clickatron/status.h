// Status and Result<T>: how every fallible call in Clickatron reports failure.
//
// Hot paths never throw (a throw inside a libevent callback would unwind
// through C frames); they return a Status, and a value through Result<T>.
// Both are [[nodiscard]] so a dropped error is a compiler warning.
//
// Thread-safety: Status and Result are values: copies may go to any thread.
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <utility>

namespace clickatron {

enum class StatusCode {
  kOk = 0,
  kInvalidArgument,     // the caller's input is wrong (HTTP 400)
  kNotFound,            // no such key / file (HTTP 404)
  kCorruption,          // data on disk or on the wire failed a check
  kIoError,             // the OS said no
  kUnavailable,         // a peer is down or overloaded; retry later (HTTP 503)
  kFailedPrecondition,  // the state forbids it now (e.g. DAY_NOT_OPEN)
  kOutOfRange,          // a value outside what the format can hold
  kUnauthorized,        // no valid credentials: token or cluster signature (HTTP 401)
  kForbidden,           // valid credentials, but not for this (HTTP 403)
  kInternal,
};

class [[nodiscard]] Status {
 public:
  Status() = default;
  Status(StatusCode code, std::string message, std::string reason = {})
      : code_(code), message_(std::move(message)), reason_(std::move(reason)) {}

  static Status Ok() { return Status(); }
  static Status InvalidArgument(std::string msg, std::string reason = "INVALID_ARGUMENT") {
    return Status(StatusCode::kInvalidArgument, std::move(msg), std::move(reason));
  }
  static Status NotFound(std::string msg) { return Status(StatusCode::kNotFound, std::move(msg), "NOT_FOUND"); }
  static Status Corruption(std::string msg) { return Status(StatusCode::kCorruption, std::move(msg), "CORRUPTION"); }
  static Status IoError(std::string msg) { return Status(StatusCode::kIoError, std::move(msg), "IO_ERROR"); }
  static Status Unavailable(std::string msg, std::string reason = "UNAVAILABLE") {
    return Status(StatusCode::kUnavailable, std::move(msg), std::move(reason));
  }
  static Status FailedPrecondition(std::string msg, std::string reason = "FAILED_PRECONDITION") {
    return Status(StatusCode::kFailedPrecondition, std::move(msg), std::move(reason));
  }
  static Status OutOfRange(std::string msg) { return Status(StatusCode::kOutOfRange, std::move(msg), "OUT_OF_RANGE"); }
  static Status Unauthorized(std::string msg, std::string reason = "UNAUTHORIZED") {
    return Status(StatusCode::kUnauthorized, std::move(msg), std::move(reason));
  }
  static Status Forbidden(std::string msg, std::string reason = "FORBIDDEN") {
    return Status(StatusCode::kForbidden, std::move(msg), std::move(reason));
  }
  static Status Internal(std::string msg) { return Status(StatusCode::kInternal, std::move(msg), "INTERNAL_ERROR"); }

  bool ok() const { return code_ == StatusCode::kOk; }
  StatusCode code() const { return code_; }
  const std::string& message() const { return message_; }
  // Upper-case reason for the HTTP envelope's status_txt (MISSING_ARG_KEY…).
  const std::string& reason() const { return reason_; }
  std::string ToString() const;
  // The HTTP status this error maps to, in one place.
  int HttpStatus() const;

  // Prefix the message with context ("oplog segment 7: " + message).
  Status WithContext(std::string_view context) const;

 private:
  StatusCode code_ = StatusCode::kOk;
  std::string message_;
  std::string reason_;
};

// A value or the Status that explains why there is none.
template <typename T>
class [[nodiscard]] Result {
 public:
  Result(T value) : value_(std::move(value)) {}  // NOLINT: implicit on purpose
  Result(Status status) : status_(std::move(status)) {}  // NOLINT
  bool ok() const { return status_.ok(); }
  const Status& status() const { return status_; }
  T& value() & { return *value_; }
  const T& value() const& { return *value_; }
  T&& value() && { return std::move(*value_); }
  T* operator->() { return &*value_; }
  const T* operator->() const { return &*value_; }
  T& operator*() & { return *value_; }
  const T& operator*() const& { return *value_; }

 private:
  Status status_;
  std::optional<T> value_;
};

}  // namespace clickatron

#define CLICKATRON_RETURN_IF_ERROR(expr)         \
  do {                                           \
    ::clickatron::Status _st = (expr);           \
    if (!_st.ok()) return _st;                   \
  } while (0)
