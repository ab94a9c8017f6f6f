#include "clickatron/manifest.h"

#include <fmt/format.h>

#include <cstring>

#include "clickatron/file_util.h"
#include "clickatron/record.h"
#include "clickatron/shard.h"

namespace clickatron {

nlohmann::json Manifest::ToJson() const {
  nlohmann::json j = {{"format", format},       {"generation", generation}, {"shard", shard},
          {"shard_count", shard_count}, {"records", records},   {"bytes", bytes},
          {"crc32", crc32},         {"first_key", first_key},   {"last_key", last_key},
          {"last_day", last_day},   {"created", created},       {"late_inputs", late_inputs},
          {"day_subtotals", day_subtotals}, {"day_subtotals_every_day", day_subtotals_every_day},
          {"day_uniques_every_day", day_uniques_every_day}};
  if (!retention.empty()) j["retention"] = RetentionListJson(retention);
  // Last, over every other field as written compactly (keys sorted): a
  // damaged manifest would be believed otherwise (a last_day one bit later
  // hides a day realtime still holds).
  j["manifest_crc32"] = Crc32(j.dump());
  return j;
}

const AppliedRetention* Manifest::RetentionOf(std::string_view ns) const { return clickatron::RetentionOf(retention, ns); }

Result<Manifest> Manifest::FromJson(const nlohmann::json& j) {
  Manifest m;
  try {
    if (j.is_object() && j.contains("manifest_crc32")) {
      // Absent in manifests written before it: those are taken unchecked.
      const uint32_t said = j.at("manifest_crc32").get<uint32_t>();
      nlohmann::json fields = j;
      fields.erase("manifest_crc32");
      if (const uint32_t computed = Crc32(fields.dump()); computed != said) {
        return Status(StatusCode::kCorruption,
                      fmt::format("manifest is damaged: its fields have crc32 {}, its manifest_crc32 says {} "
                                  "(restore it from a replica or the backup copy)",
                                  computed, said),
                      "MANIFEST_DAMAGED");
      }
    }
    m.format = j.at("format").get<int>();
    if (m.format < 1 || m.format > kArchiveFormat) {
      return Status::Corruption(fmt::format("manifest format {} is not supported (1 to {})", m.format, kArchiveFormat));
    }
    m.generation = j.at("generation").get<uint64_t>();
    m.shard = j.at("shard").get<int>();
    m.shard_count = j.at("shard_count").get<int>();
    m.records = j.at("records").get<uint64_t>();
    m.bytes = j.at("bytes").get<uint64_t>();
    m.crc32 = j.at("crc32").get<uint32_t>();
    m.first_key = j.value("first_key", "");
    m.last_key = j.value("last_key", "");
    m.last_day = j.value("last_day", "");
    m.created = j.value("created", "");
    if (j.contains("late_inputs")) m.late_inputs = j.at("late_inputs").get<std::vector<std::string>>();
    m.day_subtotals = j.value("day_subtotals", false);
    m.day_subtotals_every_day = j.value("day_subtotals_every_day", false);
    m.day_uniques_every_day = j.value("day_uniques_every_day", false);
    if (j.contains("retention")) {
      auto list = RetentionListFromJson(j.at("retention"));
      if (!list.ok()) return list.status().WithContext("manifest");
      m.retention = std::move(list).value();
    }
  } catch (const nlohmann::json::exception& e) {
    return Status::Corruption(fmt::format("manifest: {}", e.what()));
  }
  return m;
}

std::string ManifestPathFor(const std::string& archive_file) { return archive_file + ".manifest"; }

Result<Manifest> ReadManifest(const std::string& path) {
  auto text = ReadFileToString(path);
  if (!text.ok()) return text.status();
  nlohmann::json j = nlohmann::json::parse(*text, nullptr, /*allow_exceptions=*/false);
  if (j.is_discarded()) return Status::Corruption(fmt::format("{}: not valid JSON", path));
  auto m = Manifest::FromJson(j);
  if (!m.ok()) return m.status().WithContext(path);
  return m;
}

Status WriteManifestAtomically(const std::string& path, const Manifest& manifest) {
  return WriteFileAtomically(path, manifest.ToJson().dump(2) + "\n");
}

void DescribeArchiveData(std::string_view data, Manifest* m) {
  m->bytes = data.size();
  m->crc32 = Crc32(data);
  uint64_t lines = 0;
  const char* p = data.data();
  const char* end = p + data.size();
  while (p < end) {
    const void* nl = std::memchr(p, '\n', static_cast<size_t>(end - p));
    ++lines;
    if (!nl) break;
    p = static_cast<const char*>(nl) + 1;
  }
  m->records = lines;
  m->first_key.clear();
  m->last_key.clear();
  if (data.empty()) return;
  m->first_key = std::string(LineKey(data.substr(0, data.find('\n'))));
  std::string_view body = data;
  if (body.back() == '\n') body.remove_suffix(1);
  size_t last_nl = body.rfind('\n');
  m->last_key = std::string(LineKey(last_nl == std::string_view::npos ? body : body.substr(last_nl + 1)));
}

}  // namespace clickatron
