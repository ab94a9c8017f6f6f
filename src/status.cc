#include "clickatron/status.h"

#include <fmt/format.h>

namespace clickatron {

const std::string& Status::NoText() {
  static const std::string empty;
  return empty;
}

std::string Status::ToString() const {
  if (ok()) return "OK";
  if (rep_->reason.empty()) return rep_->message;
  return fmt::format("{}: {}", rep_->reason, rep_->message);
}

int Status::HttpStatus() const {
  switch (code()) {
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
  return Status(rep_->code, fmt::format("{}: {}", context, rep_->message), rep_->reason);
}

}  // namespace clickatron
