// Status and Result<T>: how every fallible call in Clickatron reports failure.
//
// Hot paths never throw (a throw inside a libevent callback would unwind
// through C frames); they return a Status, and a value through Result<T>.
// Both are [[nodiscard]] so a dropped error is a compiler warning.
//
// A Status is one pointer, null when OK (LevelDB's design): the hot paths
// return Ok() per column, per line, per request, and a status of two
// strings cost two strings' construction and destruction each time (a
// tenth of decoding an archive total's columns). An error's code, message
// and reason live behind the pointer; copying one copies them.
//
// Thread-safety: Status and Result are values: copies may go to any thread.
#pragma once

#include <memory>
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
  Status() noexcept = default;
  // An OK code keeps nothing: ok() is the code alone.
  Status(StatusCode code, std::string message, std::string reason = {})
      : rep_(code == StatusCode::kOk ? nullptr
                                     : std::make_unique<Rep>(Rep{code, std::move(message), std::move(reason)})) {}
  Status(const Status& other) : rep_(other.rep_ ? std::make_unique<Rep>(*other.rep_) : nullptr) {}
  Status(Status&&) noexcept = default;
  Status& operator=(const Status& other) {
    if (this != &other) rep_ = other.rep_ ? std::make_unique<Rep>(*other.rep_) : nullptr;
    return *this;
  }
  Status& operator=(Status&&) noexcept = default;

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

  bool ok() const { return rep_ == nullptr; }
  StatusCode code() const { return rep_ ? rep_->code : StatusCode::kOk; }
  const std::string& message() const { return rep_ ? rep_->message : NoText(); }
  // Upper-case reason for the HTTP envelope's status_txt (MISSING_ARG_KEY…).
  const std::string& reason() const { return rep_ ? rep_->reason : NoText(); }
  std::string ToString() const;
  // The HTTP status this error maps to, in one place.
  int HttpStatus() const;

  // Prefix the message with context ("oplog segment 7: " + message).
  Status WithContext(std::string_view context) const;

 private:
  struct Rep {
    StatusCode code;
    std::string message;
    std::string reason;
  };
  // An OK status's message and reason: empty.
  static const std::string& NoText();

  std::unique_ptr<Rep> rep_;  // null: OK
};

// A value or the Status that explains why there is none. (A Status moved
// from is OK, as a moved-from pointer is null: read an error before moving
// it on. So is the status() of a Result whose error was moved out.)
template <typename T>
class [[nodiscard]] Result {
 public:
  Result(T value) : value_(std::move(value)) {}  // NOLINT: implicit on purpose
  // An OK status without a value would be a result with nothing in it.
  Result(Status status)  // NOLINT
      : status_(status.ok() ? Status::Internal("a result was made of an OK status and no value") : std::move(status)) {}
  // Whether it holds a value (so the compiler, too, sees that value() is
  // only read when there is one).
  bool ok() const { return value_.has_value(); }
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
