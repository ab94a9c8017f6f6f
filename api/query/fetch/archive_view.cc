// What an archive answer says of the file it came from (its headers); see archive_reader.h.
#include "query/fetch/archive_reader.h"

#include <fmt/format.h>
#include <strings.h>

#include <charconv>
#include <optional>

#include <nlohmann/json.hpp>

#include "clickatron/key_codec.h"

namespace clickatron::api {

namespace {

const std::string* FindHeader(const HttpResponse& response, std::string_view name) {
  for (const auto& [k, v] : response.headers) {
    if (k.size() == name.size() && strncasecmp(k.data(), name.data(), k.size()) == 0) return &v;
  }
  return nullptr;
}

}  // namespace

Result<ArchiveView> ParseArchiveView(const HttpResponse& response) {
  const std::string* generation = FindHeader(response, "X-Archive-Generation");
  const std::string* last_day = FindHeader(response, "X-Archive-Last-Day");
  if (generation == nullptr || last_day == nullptr) {
    return Status::Corruption("answer without X-Archive-Generation / X-Archive-Last-Day");
  }
  ArchiveView view;
  const auto [end, ec] = std::from_chars(generation->data(), generation->data() + generation->size(), view.generation);
  if (ec != std::errc() || end != generation->data() + generation->size()) {
    return Status::Corruption(fmt::format("bad X-Archive-Generation {}", QuoteForMessage(*generation)));
  }
  if (!last_day->empty()) {
    auto day = ParseDate(*last_day);
    if (!day.ok()) return Status::Corruption(fmt::format("bad X-Archive-Last-Day {}", QuoteForMessage(*last_day)));
    view.last_day = *day;
  }
  if (const std::string* crc = FindHeader(response, "X-Archive-Crc32")) {
    uint32_t value = 0;
    const auto [end, ec] = std::from_chars(crc->data(), crc->data() + crc->size(), value);
    if (ec != std::errc() || end != crc->data() + crc->size()) {
      return Status::Corruption(fmt::format("bad X-Archive-Crc32 {}", QuoteForMessage(*crc)));
    }
    view.file_crc32 = value;
  }
  if (const std::string* count = FindHeader(response, "X-Archive-Shard-Count")) {
    const auto [end, ec] = std::from_chars(count->data(), count->data() + count->size(), view.shard_count);
    if (ec != std::errc() || end != count->data() + count->size() || view.shard_count < 1) {
      return Status::Corruption(fmt::format("bad X-Archive-Shard-Count {}", QuoteForMessage(*count)));
    }
  }
  return view;
}

std::optional<ArchiveView> DamagedFileOf(const HttpResponse& response) {
  if (!response.ok() || response.status_code != 503) return std::nullopt;
  const nlohmann::json j = nlohmann::json::parse(response.body, nullptr, /*allow_exceptions=*/false);
  if (!j.is_object() || !j.contains("status_txt") || j["status_txt"] != "ARCHIVE_DAMAGED") return std::nullopt;
  Result<ArchiveView> view = ParseArchiveView(response);
  if (!view.ok() || !view->file_crc32) return std::nullopt;
  return *view;
}

}  // namespace clickatron::api
