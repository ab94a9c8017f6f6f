#include "read_stats.h"

#include <fmt/format.h>

namespace clickatron::api {
namespace {

template <typename Fn>
void ForEachFigure(const ReadStats& s, Fn&& fn) {
  fn("archive_requests", s.archive_requests.load());
  fn("archive_failovers", s.archive_failovers.load());
  fn("realtime_requests", s.realtime_requests.load());
  fn("realtime_retries", s.realtime_retries.load());
  fn("archive_coalesced_requests", s.archive_coalesced_requests.load());
  fn("archive_coalesced_keys", s.archive_coalesced_keys.load());
  fn("realtime_coalesced_requests", s.realtime_coalesced_requests.load());
  fn("realtime_coalesced_prefixes", s.realtime_coalesced_prefixes.load());
  fn("unavailable", s.unavailable.load());
  fn("generation_retries", s.generation_retries.load());
  fn("lookup_cache_hits", s.lookup_cache_hits.load());
  fn("lookups_fetched", s.lookups_fetched.load());
  fn("lookups_missing", s.lookups_missing.load());
}

}  // namespace

nlohmann::json ReadStats::ToJson() const {
  nlohmann::json read = nlohmann::json::object();
  ForEachFigure(*this, [&](const char* name, uint64_t value) { read[name] = value; });
  return nlohmann::json{{"read", read}};
}

std::string ReadStats::ToPrometheus() const {
  std::string out;
  ForEachFigure(*this, [&](const char* name, uint64_t value) {
    out += fmt::format("# TYPE clickatron_api_read_{}_total counter\nclickatron_api_read_{}_total {}\n", name, name,
                       value);
  });
  return out;
}

}  // namespace clickatron::api
