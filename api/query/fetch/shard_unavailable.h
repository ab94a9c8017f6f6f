// The status of a read whose shard did not answer: 503 SHARD_UNAVAILABLE, so
// that a query never goes on without a part of its data.
#pragma once

#include <string>
#include <utility>

#include "clickatron/status.h"

namespace clickatron::api {

inline Status ShardUnavailable(std::string message) {
  return Status::Unavailable(std::move(message), "SHARD_UNAVAILABLE");
}

}  // namespace clickatron::api
