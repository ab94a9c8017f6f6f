#include "generation.h"

#include <sys/stat.h>

#include <chrono>
#include <filesystem>
#include <memory>
#include <set>

#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include "backup.h"
#include "clickatron/shard.h"
#include "day_subtotals.h"
#include "bulk_load.h"
#include "clickatron/file_util.h"
#include "clickatron/parallel_for.h"
#include "clickatron/ymdh.h"
#include "late_inputs.h"
#include "sortmerge/line_io.h"
#include "archive_merge.h"
#include "sortmerge/merge.h"
#include "sortmerge/progress.h"
#include "sort_inputs.h"
#include "split.h"

namespace clickatron::rebuild {
namespace {

uint64_t SizeOf(const std::string& path) {
  struct stat st;
  return ::stat(path.c_str(), &st) == 0 ? static_cast<uint64_t>(st.st_size) : 0;
}

std::string NowIso() {
  return FormatIsoTime(
      std::chrono::duration_cast<std::chrono::seconds>(std::chrono::system_clock::now().time_since_epoch()).count());
}

struct ShardJob {
  const BuildOptions* options;
  const GenerationPlan* plan;
  const std::vector<std::string>* inputs;       // new sorted inputs (every shard's lines)
  const std::vector<std::string>* late_inputs;  // for the manifests
  Progress* progress;
};

// Merges shard `shard` of the previous generation with that shard's part of
// every new input, then writes its manifest and its backup.
Status BuildShard(const ShardJob& job, int shard, Manifest* manifest_out) {
  const ClusterConfig& cluster = *job.options->cluster;
  const ServingArchive& previous = *job.options->previous;
  const WorkDir work(cluster.rebuild.work_dir);
  const uint64_t generation = job.plan->generation;
  const std::string out_path = work.GenShard(generation, shard);

  // The previous generation's shard file, mapped (empty for the first generation).
  std::unique_ptr<MappedFile> previous_file;
  std::string_view previous_data;
  if (previous.generation > 0) {
    auto mapped = MappedFile::Open(previous.files[static_cast<size_t>(shard)]);
    if (!mapped.ok()) return mapped.status();
    previous_file = std::move(mapped).value();
    (void)previous_file->Advise("sequential");  // a hint only
    previous_data = previous_file->data();
  }
  // This shard's part of every new input, merged into one sorted stream.
  std::vector<std::unique_ptr<LineReader>> readers;
  std::vector<std::unique_ptr<ShardFilter>> filters;
  std::vector<LineSource*> sources;
  for (const std::string& input : *job.inputs) {
    auto reader = LineReader::Open(input, {.buffer_bytes = 1u << 20});
    if (!reader.ok()) return reader.status();
    filters.push_back(std::make_unique<ShardFilter>(reader->get(), static_cast<uint32_t>(shard),
                                                    static_cast<uint32_t>(cluster.archive_shards)));
    sources.push_back(filters.back().get());
    readers.push_back(std::move(reader).value());
  }
  // A previous file without a day record for every day with subtotal hours
  // (built before day records or under the older two-hour rule, or brought in
  // by hand) is read in full, as one more input, once: its day records are
  // made from its hours instead of being added to.
  std::unique_ptr<TextLineSource> previous_lines;
  std::string_view merge_base = previous_data;
  if (previous_file && !previous.manifests[static_cast<size_t>(shard)].day_subtotals_every_day) {
    previous_lines = std::make_unique<TextLineSource>(previous_data, previous_file->path());
    sources.push_back(previous_lines.get());
    merge_base = {};
    spdlog::info("generation {} shard {}: {} lacks day subtotals of one-hour days; adding them to every day it holds",
                 generation, shard, previous_file->path());
  }
  MergingSource merged(std::move(sources), "new inputs");
  // Each day's record of the new hours; the merge adds it to the previous
  // generation's record of that day, if it has one.
  DaySubtotalSource additions(&merged);
  auto writer = ShardFileWriter::Create(out_path + ".tmp");
  if (!writer.ok()) return writer.status();
  ArchiveMergeStats stats;
  CLICKATRON_RETURN_IF_ERROR(MergeIntoArchive(merge_base, &additions, writer->get(),
                                              {.progress = job.progress, .previous_is_file_mapping = true}, &stats));
  if (previous_file) {
    const Manifest& m = previous.manifests[static_cast<size_t>(shard)];
    // The merge checksums its base as it copies it; a file read as an input
    // is checksummed here.
    const uint32_t previous_crc = previous_lines ? Crc32(previous_data) : stats.previous_crc32;
    if (previous_crc != m.crc32 || previous_data.size() != m.bytes) {
      return Status::Corruption(fmt::format(
          "{} does not match its manifest (crc32 {} vs {}, {} vs {} bytes); not building on it",
          previous_file->path(), previous_crc, m.crc32, previous_data.size(), m.bytes));
    }
  }
  CLICKATRON_RETURN_IF_ERROR((*writer)->Finish());
  CLICKATRON_RETURN_IF_ERROR(RenameDurably(out_path + ".tmp", out_path));

  Manifest manifest;
  manifest.generation = generation;
  manifest.shard = shard;
  manifest.shard_count = cluster.archive_shards;
  (*writer)->Describe(&manifest);
  manifest.last_day = job.plan->last_day;
  manifest.created = job.plan->created;
  manifest.late_inputs = *job.late_inputs;
  manifest.day_subtotals = true;  // implied by the next, kept for older readers of the manifest
  manifest.day_subtotals_every_day = true;
  CLICKATRON_RETURN_IF_ERROR(WriteManifestAtomically(ManifestPathFor(out_path), manifest));

  BackupOptions backup;
  backup.source = out_path;
  backup.dest_gz = fmt::format("{}/shard-{}.csv.gz", BackupDir(cluster.rebuild.backup_dir, generation), shard);
  backup.manifest = manifest;
  if (job.options->backup) CLICKATRON_RETURN_IF_ERROR(BackupShardFile(backup));
  spdlog::info(
      "generation {} shard {}: {} previous + {} new records ({} combined, {} day subtotals) -> {} records ({} bytes), "
      "backup {}",
      generation, shard, stats.previous_lines, merged.lines_out(), stats.combined, additions.days_written(),
      manifest.records, manifest.bytes,
               job.options->backup ? backup.dest_gz : std::string("skipped"));
  *manifest_out = manifest;
  return Status::Ok();
}

}  // namespace

nlohmann::json GenerationPlan::ToJson() const {
  nlohmann::json manifests_json = nlohmann::json::array();
  for (const Manifest& m : manifests) manifests_json.push_back(m.ToJson());
  return {{"generation", generation}, {"previous_generation", previous_generation},
          {"day", day},               {"queue_ids", queue_ids},
          {"late_files", late_files}, {"late_still_sealed", late_still_sealed}, {"last_day", last_day},
          {"shard_files", shard_files}, {"manifests", manifests_json},
          {"created", created}};
}

Result<GenerationPlan> GenerationPlan::FromJson(const nlohmann::json& j) {
  GenerationPlan plan;
  try {
    plan.generation = j.at("generation").get<uint64_t>();
    plan.previous_generation = j.at("previous_generation").get<uint64_t>();
    plan.day = j.at("day").get<std::string>();
    plan.queue_ids = j.at("queue_ids").get<std::vector<std::string>>();
    plan.late_files = j.at("late_files").get<std::vector<std::string>>();
    if (j.contains("late_still_sealed")) plan.late_still_sealed = j["late_still_sealed"].get<std::vector<std::string>>();
    plan.last_day = j.at("last_day").get<std::string>();
    plan.shard_files = j.at("shard_files").get<std::vector<std::string>>();
    plan.created = j.value("created", "");
    for (const nlohmann::json& m : j.at("manifests")) {
      Result<Manifest> manifest = Manifest::FromJson(m);
      if (!manifest.ok()) return manifest.status();
      plan.manifests.push_back(*manifest);
    }
  } catch (const nlohmann::json::exception& e) {
    return Status::Corruption(fmt::format("generation plan: {}", e.what()));
  }
  if (plan.manifests.size() != plan.shard_files.size()) {
    return Status::Corruption("generation plan: shard_files and manifests differ in number");
  }
  return plan;
}

Result<GenerationPlan> BuildGeneration(const BuildOptions& options) {
  const ClusterConfig& cluster = *options.cluster;
  const ServingArchive& previous = *options.previous;
  const WorkDir work(cluster.rebuild.work_dir);
  GenerationPlan plan;
  plan.generation = previous.generation + 1;
  plan.previous_generation = previous.generation;
  plan.day = options.day;
  plan.last_day = std::max(previous.last_day, options.day);
  plan.created = NowIso();
  const std::string dir = work.GenDir(plan.generation);
  std::error_code ec;
  std::filesystem::remove_all(dir, ec);  // a build that stopped half-way: its plan was never written
  CLICKATRON_RETURN_IF_ERROR(MakeDirs(dir));

  std::vector<std::string> inputs;
  if (!options.day.empty()) inputs.push_back(options.day_sorted);
  // What the next manifests' late_inputs keep of the previous ones (below).
  std::set<std::string> previous_late;
  for (const std::string& entry : previous.late_inputs) previous_late.insert(NormalizeLateInputId(cluster, entry));
  std::vector<std::string> kept_late(previous_late.begin(), previous_late.end());
  if (options.include_late) {
    FetchLateOptions fetch;
    fetch.cluster = &cluster;
    fetch.already_folded = previous_late;
    fetch.dest_dir = work.GenLateDir(plan.generation);
    fetch.http_timeout_ms = options.http_timeout_ms;
    fetch.transfer_timeout_ms = options.late_transfer_timeout_ms;
    auto late = FetchLateInputs(fetch);
    if (!late.ok()) return late.status();
    if (!late->ids.empty()) {
      SortInputsOptions sort;
      sort.inputs = late->paths;
      sort.format = InputFormat::kLateData;
      sort.output = work.GenLateSorted(plan.generation);
      sort.rejects_path = work.GenLateRejects(plan.generation);
      sort.temp_dir = work.TempDir(fmt::format("late-{}", plan.generation));
      sort.memory_bytes = cluster.rebuild.memory_mb << 20;
      sort.threads = cluster.rebuild.threads;
      sort.max_bad_line_ratio = cluster.rebuild.max_bad_line_ratio;
      sort.label = "late data";
      auto sorted = SortInputs(sort);
      if (!sorted.ok()) return sorted.status().WithContext("late data");
      spdlog::info("late data: {} files, {} lines -> {} records", late->ids.size(), sorted->lines, sorted->records);
      inputs.push_back(sort.output);
      plan.late_files = late->ids;
    }
    // Files folded earlier stay listed while their API node still has them
    // sealed (its /late/done has not happened), or while it did not answer,
    // so they are still skipped; the ones marked done drop off and the list
    // stays short.
    std::set<std::string> unknown_members;
    for (const auto& [member, why] : late->skipped_members) unknown_members.insert(member);
    const std::set<std::string> still_sealed(late->still_sealed.begin(), late->still_sealed.end());
    plan.late_still_sealed = late->still_sealed;
    kept_late.clear();
    for (const std::string& id : previous_late) {
      std::string member, name;
      const bool is_id = SplitLateInputId(id, &member, &name);
      const MemberConfig* m = is_id ? cluster.FindMember(member) : nullptr;
      const bool answered = m != nullptr && m->role == MemberRole::kApi && unknown_members.count(member) == 0;
      if (!answered || still_sealed.count(id) > 0) kept_late.push_back(id);
    }
  }
  if (options.include_queue) {
    auto ids = PendingLoads(work);
    if (!ids.ok()) return ids.status();
    for (const std::string& id : *ids) inputs.push_back(work.QueueSorted(id));
    plan.queue_ids = *ids;
  }
  if (options.day.empty() && inputs.empty()) {
    std::filesystem::remove_all(dir, ec);
    return Status::NotFound("nothing to fold into a new generation (no day, no late data, no queued load)");
  }
  std::vector<std::string> late_inputs = plan.late_files;
  late_inputs.insert(late_inputs.end(), kept_late.begin(), kept_late.end());

  uint64_t total_bytes = 0;
  for (const std::string& f : previous.files) total_bytes += SizeOf(f);
  for (const std::string& f : inputs) total_bytes += SizeOf(f);
  Progress progress(fmt::format("merge into generation {}", plan.generation), total_bytes);
  const int shards = cluster.archive_shards;
  plan.manifests.resize(static_cast<size_t>(shards));
  for (int s = 0; s < shards; ++s) plan.shard_files.push_back(work.GenShard(plan.generation, s));
  ShardJob job{&options, &plan, &inputs, &late_inputs, &progress};
  // A failed shard stops the others from starting: the whole generation is
  // built again by the next run anyway.
  const auto threads = static_cast<size_t>(std::max(1, cluster.rebuild.threads));
  const Status built = ParallelFor(static_cast<size_t>(shards), threads, [&](size_t s) {
    return BuildShard(job, static_cast<int>(s), &plan.manifests[s])
        .WithContext(fmt::format("building generation {} shard {}", plan.generation, s));
  });
  progress.Finish();
  CLICKATRON_RETURN_IF_ERROR(built);
  // The plan is the marker: written last, G is built.
  CLICKATRON_RETURN_IF_ERROR(WriteFileAtomically(work.GenPlan(plan.generation), plan.ToJson().dump(2) + "\n"));
  return plan;
}

Result<std::optional<GenerationPlan>> FindPendingGeneration(const WorkDir& work_dir) {
  std::optional<GenerationPlan> pending;
  std::error_code ec;
  if (!std::filesystem::exists(work_dir.GenRoot(), ec)) return pending;
  for (const auto& entry : std::filesystem::directory_iterator(work_dir.GenRoot(), ec)) {
    const std::string name = entry.path().filename().string();
    if (name.empty() || name.find_first_not_of("0123456789") != std::string::npos) continue;
    const uint64_t generation = std::stoull(name);
    if (!FileExists(work_dir.GenPlan(generation))) continue;  // partial: rebuilt from scratch when needed
    if (FileExists(work_dir.GenFinished(generation))) continue;
    auto text = ReadFileToString(work_dir.GenPlan(generation));
    if (!text.ok()) return text.status();
    nlohmann::json j = nlohmann::json::parse(*text, nullptr, /*allow_exceptions=*/false);
    if (j.is_discarded()) return Status::Corruption(fmt::format("{}: not JSON", work_dir.GenPlan(generation)));
    auto plan = GenerationPlan::FromJson(j);
    if (!plan.ok()) return plan.status().WithContext(work_dir.GenPlan(generation));
    if (pending) {
      return Status::FailedPrecondition(fmt::format("two unfinished generations in {} ({} and {})",
                                                    work_dir.GenRoot(), pending->generation, plan->generation));
    }
    pending = std::move(plan).value();
  }
  if (ec) return Status::IoError(fmt::format("list {}: {}", work_dir.GenRoot(), ec.message()));
  return pending;
}

}  // namespace clickatron::rebuild
