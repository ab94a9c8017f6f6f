// ArchiveReader's manifest facts: what a generation's manifest says of its days; see archive_reader.h.
#include "query/fetch/archive_reader.h"

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "clickatron/manifest.h"

namespace clickatron::api {

std::optional<ArchiveReader::ManifestFacts> ArchiveReader::KnownManifestFacts(const Session& session,
                                                                             uint64_t generation,
                                                                             std::optional<uint32_t> crc32) const {
  const size_t shard = static_cast<size_t>(session.shard);
  if (shard >= manifest_facts_.size()) return std::nullopt;
  const auto& known = manifest_facts_[shard];
  auto it = known.find({generation, crc32.value_or(0)});
  if (it == known.end()) return std::nullopt;
  return it->second;
}

void ArchiveReader::ReadManifestFacts(const std::shared_ptr<Session>& session, uint64_t generation,
                                      std::optional<uint32_t> crc32, std::function<void(ManifestFacts)> done) {
  const size_t shard = static_cast<size_t>(session->shard);
  if (shard >= manifest_facts_.size()) return done({});
  if (const std::optional<ManifestFacts> known = KnownManifestFacts(*session, generation, crc32)) return done(*known);
  const std::pair<uint64_t, uint32_t> file{generation, crc32.value_or(0)};
  // One /manifest request per shard and generation: the queries that ask
  // while it is out (a burst at each new generation) wait for its answer.
  auto& waiting = facts_waiting_[shard][file];
  waiting.push_back(std::move(done));
  if (waiting.size() > 1) return;
  std::weak_ptr<bool> alive = alive_;
  Send(session, fmt::format("/manifest?shard={}", shard), Attempts(session->shard),
       [this, alive, shard, file](Result<ArchiveReply> reply) {
         if (alive.expired()) return;
         ManifestFacts rules;  // not read: no answer, or not a manifest
         if (reply.ok() && reply->found) {
           // {"data": the manifest, or null for a file without one, ...}
           const nlohmann::json answer = nlohmann::json::parse(reply->body, nullptr, /*allow_exceptions=*/false);
           if (answer.is_object() && answer.contains("data") && answer["data"].is_object()) {
             // A manifest this binary cannot read says nothing.
             if (Result<Manifest> manifest = Manifest::FromJson(answer["data"]); manifest.ok()) {
               rules.manifest_read = true;
               rules.whole = manifest->SpanRecordsWhole();
               if (!manifest->retention.empty()) {
                 rules.retention =
                     std::make_shared<const std::vector<AppliedRetention>>(std::move(manifest->retention));
               }
             }
           } else if (answer.is_object() && answer.contains("data") && answer["data"].is_null()) {
             rules.manifest_read = true;  // a file without a manifest: nothing rolled up
           }
           // Kept only when the manifest was read: a garbled answer is asked again.
           auto& known = manifest_facts_[shard];
           const std::pair<uint64_t, uint32_t> answered{reply->view.generation,
                                                        reply->view.file_crc32.value_or(0)};
           // A file of another format is not remembered as such: its queries
           // fail, and each asks again, so a manifest converted in place (the
           // same bytes, the same crc32) is seen at once.
           if (rules.manifest_read && rules.whole) known[answered] = rules;
           while (known.size() > 4) known.erase(known.begin());  // generations mostly grow
           // An answer from another file (a reload in between) says nothing
           // of the one asked about: asked again next time.
           if (answered != file) rules = ManifestFacts{};
         }
         auto node = facts_waiting_[shard].extract(file);
         if (node.empty()) return;
         for (auto& waiter : node.mapped()) waiter(rules);  // moved out first: a waiter may ask again
       });
}

}  // namespace clickatron::api
