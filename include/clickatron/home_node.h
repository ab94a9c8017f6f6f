// Which API node is home to a name that must be taken in one place: an
// Idempotency-Key (docs/protocols.md, "Retries and idempotency keys") or a
// client's deletion id ("Deletions"). Every such name has one home,
// crc32(name) % N over the cluster file's API members in file order, so a
// retry that a load balancer sends to another node, or the same name sent
// to two nodes at once, still meets the first request. A node that is not
// the name's home relays the request there and relays the answer back; when
// the home cannot be reached it answers 503 with the caller's reason, which
// the client retries later (nothing was taken anywhere: the home never saw
// it, or saw it and remembers it).
//
// Why a home rather than sharing names between nodes: a name must be
// checked and taken in one place before the answer, or two nodes could both
// take it (the first request's retry counted twice; one deletion id for two
// deletions, one of them then lost). One owner per name needs no agreement
// protocol, and the relay costs one loopback-class round trip only for
// requests that carry a name and land on the wrong node.
#pragma once

#include <cstddef>
#include <functional>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "clickatron/config.h"
#include "clickatron/http_client.h"
#include "clickatron/http_server.h"

namespace clickatron {

// Set by the node that relays a request to its home. A node that gets a
// relayed request whose home, by its own cluster file, is another node
// refuses it (421) rather than relaying it on: no relay loops when two
// nodes read different files during a change. Every node's cluster file
// must list the same API members in the same order.
inline constexpr std::string_view kRelayedFromHeader = "Clickatron-Relayed-From";

class HomeNode {
 public:
  HomeNode(const ClusterConfig& cluster, const std::string& self);

  // The member `name`'s home is, or nullopt when it is this node.
  std::optional<HostPort> HomeOf(std::string_view name) const;
  size_t nodes() const { return nodes_.size(); }

  // What the client is told when the home does not answer: 503 `reason`,
  // `Retry-After: 1`, and `what` before the transport's error.
  struct Unanswered {
    std::string_view reason;
    std::string what;
  };
  // Relays `ex` to `home` and its answer back (status, body, content type,
  // Retry-After, Idempotent-Replayed), with its Authorization,
  // Idempotency-Key, Content-Type and Content-Encoding. `timeout_ms` bounds
  // the wait. `done(true)` when the home answered.
  void Relay(const HttpExchangePtr& ex, const HostPort& home, HttpClient& client, int timeout_ms,
             Unanswered unanswered, std::function<void(bool answered)> done) const;

 private:
  std::vector<HostPort> nodes_;  // the API members, in file order
  size_t self_ = 0;              // this node's index in nodes_
};

}  // namespace clickatron
