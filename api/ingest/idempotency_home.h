// Which API node remembers an Idempotency-Key (docs/protocols.md, "Retries
// and idempotency keys"): every key has one home, crc32(K) % N over the
// cluster file's API members in file order, so a retry that a load balancer
// sends to another node still meets the first request's answer. A node that
// is not K's home relays the request there and relays the answer back; when
// the home cannot be reached it answers 503 IDEMPOTENCY_HOME_DOWN, which the
// client retries later (nothing was counted anywhere: the home never saw
// it, or saw it and remembers it).
//
// Why a home rather than sharing keys between nodes: a key must be checked
// and taken in one place before the increments are durable, or two nodes
// could both take the first request's retry; one owner per key needs no
// agreement protocol, and the relay costs one loopback-class round trip only
// for requests that carry a key and land on the wrong node.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "clickatron/config.h"
#include "clickatron/http_client.h"
#include "clickatron/http_server.h"
#include "ingest/write_door.h"

namespace clickatron::api {

// Set by the node that relays a request to its home: the home takes it as
// its own whatever its own view of the cluster file (no relay loops when
// two nodes read different files during a change).
inline constexpr std::string_view kRelayedFromHeader = "Clickatron-Relayed-From";

class IdempotencyHome {
 public:
  IdempotencyHome(const ClusterConfig& cluster, const std::string& self);

  // The member K's home is, or nullopt when it is this node.
  std::optional<HostPort> HomeOf(std::string_view key) const;
  size_t nodes() const { return nodes_.size(); }

  // Relays `ex` to `home` and its answer back (status, body, content type,
  // Retry-After, Idempotent-Replayed). `timeout_ms` bounds the wait; no
  // answer at all is 503 IDEMPOTENCY_HOME_DOWN, in the door's shape.
  // `done(true)` when the home answered.
  void Relay(const HttpExchangePtr& ex, WriteDoor door, const HostPort& home, HttpClient& client, int timeout_ms,
             std::function<void(bool answered)> done) const;

 private:
  std::vector<HostPort> nodes_;  // the API members, in file order
  size_t self_ = 0;              // this node's index in nodes_
};

}  // namespace clickatron::api
