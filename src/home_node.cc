#include "clickatron/home_node.h"

#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include "clickatron/query_string.h"
#include "clickatron/shard.h"

namespace clickatron {
namespace {

// The request target again from its parsed parts: the home computes the
// same digest from the same parameters (names and values, in order), so
// the encoding need not be byte-for-byte the client's.
std::string TargetOf(const HttpExchange& ex) {
  std::string target = ex.path();
  char sep = '?';
  for (const auto& [name, value] : ex.args().items()) {
    target += sep;
    target += PercentEncode(name);
    target += '=';
    target += PercentEncode(value);
    sep = '&';
  }
  return target;
}

}  // namespace

HomeNode::HomeNode(const ClusterConfig& cluster, const std::string& self) {
  for (const MemberConfig* m : cluster.MembersWithRole(MemberRole::kApi)) {
    if (m->name == self) self_ = nodes_.size();
    nodes_.push_back(m->listen);
  }
}

std::optional<HostPort> HomeNode::HomeOf(std::string_view key) const {
  if (nodes_.size() <= 1) return std::nullopt;
  const size_t home = Crc32(key) % nodes_.size();
  if (home == self_) return std::nullopt;
  return nodes_[home];
}

void HomeNode::Relay(const HttpExchangePtr& ex, const HostPort& home, HttpClient& client, int timeout_ms,
                     Unanswered unanswered, std::function<void(bool answered)> done) const {
  HttpRequestSpec spec;
  spec.method = ex->method();
  spec.target = TargetOf(*ex);
  spec.body = ex->body();
  spec.timeout_ms = timeout_ms;
  spec.headers.emplace_back(std::string(kRelayedFromHeader), "1");
  // The client's own credentials: the home checks its token as for any
  // request.
  for (const char* name : {"Authorization", "Idempotency-Key", "Content-Type", "Content-Encoding"}) {
    if (std::string value = ex->header(name); !value.empty()) spec.headers.emplace_back(name, value);
  }
  const std::string where = home.ToString();
  client.Send(home, std::move(spec), [ex, where, unanswered = std::move(unanswered),
                                       done = std::move(done)](HttpResponse r) {
    if (!r.ok()) {
      spdlog::warn("home node {} did not answer a relayed {} {}: {}", where, ex->method(), ex->path(),
                   r.transport.message());
      if (ex->alive()) {
        ex->AddHeader("Retry-After", "1");
        ex->ReplyError(503, unanswered.reason,
                       fmt::format("{} (home API node {}: {})", unanswered.what, where, r.transport.message()));
      }
      done(false);
      return;
    }
    if (ex->alive()) {
      for (const char* h : {"Retry-After", "Idempotent-Replayed"}) {
        if (std::string v = r.Header(h); !v.empty()) ex->AddHeader(h, v);
      }
      std::string type = r.Header("Content-Type");
      ex->Reply(r.status_code, r.body, type.empty() ? "application/json" : type);
    }
    done(true);
  });
}

}  // namespace clickatron
