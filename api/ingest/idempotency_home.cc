#include "ingest/idempotency_home.h"

#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include "clickatron/query_string.h"
#include "clickatron/shard.h"
#include "ingest/keyed_request.h"
#include "ingest/write_door.h"

namespace clickatron::api {
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

IdempotencyHome::IdempotencyHome(const ClusterConfig& cluster, const std::string& self) {
  for (const MemberConfig* m : cluster.MembersWithRole(MemberRole::kApi)) {
    if (m->name == self) self_ = nodes_.size();
    nodes_.push_back(m->listen);
  }
}

std::optional<HostPort> IdempotencyHome::HomeOf(std::string_view key) const {
  if (nodes_.size() <= 1) return std::nullopt;
  const size_t home = Crc32(key) % nodes_.size();
  if (home == self_) return std::nullopt;
  return nodes_[home];
}

void IdempotencyHome::Relay(const HttpExchangePtr& ex, WriteDoor door, const HostPort& home, HttpClient& client,
                            int timeout_ms, std::function<void(bool answered)> done) const {
  HttpRequestSpec spec;
  spec.method = ex->method();
  spec.target = TargetOf(*ex);
  spec.body = ex->body();
  spec.timeout_ms = timeout_ms;
  spec.headers.emplace_back(std::string(kIdempotencyKeyHeader), ex->header(kIdempotencyKeyHeader));
  spec.headers.emplace_back(std::string(kRelayedFromHeader), "1");
  // The client's own credentials: the home checks its client token as for
  // any request.
  if (std::string auth = ex->header("Authorization"); !auth.empty()) spec.headers.emplace_back("Authorization", auth);
  for (const char* name : {"Content-Type", "Content-Encoding"}) {
    if (std::string value = ex->header(name); !value.empty()) spec.headers.emplace_back(name, value);
  }
  const std::string where = home.ToString();
  client.Send(home, std::move(spec), [ex, door, where, done = std::move(done)](HttpResponse r) {
    if (!r.ok()) {
      spdlog::warn("idempotency home {} did not answer a relayed request: {}", where, r.transport.message());
      if (ex->alive()) {
        ex->AddHeader("Retry-After", "1");
        ex->ReplyError(503, "IDEMPOTENCY_HOME_DOWN",
                     fmt::format("this Idempotency-Key's home API node {} did not answer ({}); nothing was "
                                 "counted here: retry later with the same key",
                                 where, r.transport.message()));
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

}  // namespace clickatron::api
