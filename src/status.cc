#include "clickatron/status.h"

#include <fmt/format.h>

namespace clickatron {

std::string Status::ToString() const {
  if (ok()) return "OK";
  if (reason_.empty()) return message_;
  return fmt::format("{}: {}", reason_, message_);
}

int Status::HttpStatus() const {
  switch (code_) {
    case StatusCode::kOk: return 200;
    case StatusCode::kInvalidArgument: return 400;
    case StatusCode::kOutOfRange: return 400;
    case StatusCode::kUnauthorized: return 401;
    case StatusCode::kForbidden: return 403;
    case StatusCode::kNotFound: return 404;
    case StatusCode::kFailedPrecondition: return 409;
    case StatusCode::kUnavailable: return 503;
    case StatusCode::kCorruption:
    case StatusCode::kIoError:
    case StatusCode::kInternal: return 500;
  }
  return 500;
}

Status Status::WithContext(std::string_view context) const {
  if (ok()) return *this;
  return Status(code_, fmt::format("{}: {}", context, message_), reason_);
}

}  // namespace clickatron
