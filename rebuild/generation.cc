#include "generation.h"

#include <sys/stat.h>

#include <algorithm>
#include <chrono>
#include <map>
#include <filesystem>
#include <optional>
#include <set>

#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include "backup.h"
#include "bulk_load.h"
#include "clickatron/file_util.h"
#include "clickatron/ymdh.h"
#include "clickatron/timezone.h"
#include "engine/engine.h"
#include "late_inputs.h"
#include "deletions.h"
#include "restate.h"
#include "merge_shard_task.h"
#include "sort_inputs.h"
#include "sort_shard_task.h"
#include "sortmerge/progress.h"
#include "split.h"

namespace clickatron::rebuild {

std::string NowIso() {
  return FormatIsoTime(
      std::chrono::duration_cast<std::chrono::seconds>(std::chrono::system_clock::now().time_since_epoch()).count());
}

namespace {

// The fixed input set of a generation being built (gen/G/inputs.json):
// written before its merge tasks start, so a rerun after a failed task
// merges the same inputs and runs only the tasks not done.
struct GenerationInputs {
  uint64_t previous_generation = 0;
  int archive_shards = 0;  // the count its merge tasks cut by
  int sort_tasks = 0;      // the day's sort tasks (realtime shards) its merges read
  std::string day;
  std::string created;
  std::vector<std::string> late_files, late_still_sealed, late_inputs, queue_ids;
  std::vector<std::string> whole_inputs;  // late-sorted + queued loads: every shard's lines
  // Restatements folded (drop_rules.h), and per whole input the ones it
  // obeys: those queued after it (a load), or whose seal it came before
  // (late data).
  std::vector<DropRule> drop_rules;
  std::vector<std::vector<int>> input_drops;
  // Deletions folded (deletions.h): their rules follow the restatements' in
  // drop_rules (from deletion_rules_from on). Loads and restatements queued
  // before one obey it (input_drops), late data by frame (SortInputs).
  std::vector<FoldedDeletion> deletions;
  size_t deletion_rules_from = 0;
  // Retention boundaries applied (PlanRetention).
  std::vector<AppliedRetention> retention;

  nlohmann::json ToJson() const {
    nlohmann::json rules = nlohmann::json::array();
    for (const DropRule& rule : drop_rules) rules.push_back(rule.ToJson());
    nlohmann::json deletions_json = nlohmann::json::array();
    for (const FoldedDeletion& d : deletions) deletions_json.push_back(d.ToJson());
    return {{"previous_generation", previous_generation}, {"archive_shards", archive_shards},
            {"sort_tasks", sort_tasks}, {"day", day},
            {"created", created},
            {"late_files", late_files}, {"late_still_sealed", late_still_sealed}, {"late_inputs", late_inputs},
            {"queue_ids", queue_ids}, {"whole_inputs", whole_inputs},
            {"drop_rules", rules}, {"input_drops", input_drops},
            {"deletions", deletions_json}, {"deletion_rules_from", deletion_rules_from},
            {"retention", RetentionListJson(retention)}};
  }
  static std::optional<GenerationInputs> Read(const std::string& path) {
    auto text = ReadFileToString(path);
    if (!text.ok()) return std::nullopt;
    nlohmann::json j = nlohmann::json::parse(*text, nullptr, /*allow_exceptions=*/false);
    if (j.is_discarded()) return std::nullopt;
    GenerationInputs in;
    try {
      in.previous_generation = j.at("previous_generation").get<uint64_t>();
      in.archive_shards = j.value("archive_shards", 0);
      in.sort_tasks = j.value("sort_tasks", 0);
      in.day = j.at("day").get<std::string>();
      in.created = j.at("created").get<std::string>();
      in.late_files = j.at("late_files").get<std::vector<std::string>>();
      in.late_still_sealed = j.at("late_still_sealed").get<std::vector<std::string>>();
      in.late_inputs = j.at("late_inputs").get<std::vector<std::string>>();
      in.queue_ids = j.at("queue_ids").get<std::vector<std::string>>();
      in.whole_inputs = j.at("whole_inputs").get<std::vector<std::string>>();
      for (const nlohmann::json& r : j.value("drop_rules", nlohmann::json::array())) {
        auto rule = DropRule::FromJson(r);
        if (!rule.ok()) return std::nullopt;
        in.drop_rules.push_back(*rule);
      }
      in.input_drops = j.value("input_drops", std::vector<std::vector<int>>());
      for (const nlohmann::json& d : j.value("deletions", nlohmann::json::array())) {
        auto deletion = FoldedDeletion::FromJson(d);
        if (!deletion.ok()) return std::nullopt;
        in.deletions.push_back(*deletion);
      }
      in.deletion_rules_from = j.value("deletion_rules_from", in.drop_rules.size());
      auto retention = RetentionListFromJson(j.value("retention", nlohmann::json::array()));
      if (!retention.ok()) return std::nullopt;
      in.retention = std::move(retention).value();
    } catch (const nlohmann::json::exception&) {
      return std::nullopt;
    }
    return in;
  }
};

// The retention boundaries of a generation whose last day is `last_day`
// (retention.h): every namespace with a policy now or boundaries in the
// previous generation. What cannot be applied is said, and the run goes on.
Status PlanRetention(const ClusterConfig& cluster, const ServingArchive& previous, const std::string& last_day,
                     uint64_t generation, GenerationInputs* in) {
  const Manifest* before = previous.generation > 0 && !previous.manifests.empty() ? &previous.manifests[0] : nullptr;
  std::vector<std::string> namespaces;
  for (const RetentionPolicy& p : cluster.retention) namespaces.push_back(p.ns);
  if (before) {
    for (const AppliedRetention& r : before->retention) {
      if (cluster.RetentionFor(r.ns) == nullptr) namespaces.push_back(r.ns);
    }
  }
  if (namespaces.empty() || last_day.empty()) return Status::Ok();
  auto day = ParseDate(last_day);
  if (!day.ok()) return day.status();
  // Namespaces with a restatement queued, folded now or waiting. Their
  // hours stay where they are until it is folded: `restate` checked its
  // days against the retention of its day, and a restatement replaces
  // UTC days, which days rolled up in another zone since would straddle
  // (one that waits for an API node's late data could otherwise find its
  // days rolled up by the time it is folded, and cut them in two).
  std::set<std::string> restated;
  const WorkDir work(cluster.rebuild.work_dir);
  auto queued = PendingLoads(work);
  if (!queued.ok()) return queued.status();
  for (const std::string& id : *queued) {
    auto restatement = ReadRestatement(work, id);
    if (!restatement.ok()) return restatement.status();
    if (restatement->has_value()) restated.insert((*restatement)->rule.ns);
  }
  TimeZoneDb zones;
  for (const std::string& ns : namespaces) {
    const AppliedRetention* applied_before = before ? before->RetentionOf(ns) : nullptr;
    if (restated.count(ns) > 0) {
      spdlog::warn("generation {}: retention of namespace {} held where it is ({}) while a restatement of it is "
                   "queued",
                   generation, ns, applied_before ? DescribeRetention(*applied_before) : "every hour kept");
      if (applied_before) in->retention.push_back(*applied_before);
      continue;
    }
    auto step = NextRetention(cluster.RetentionFor(ns), applied_before, *day, zones);
    if (!step.ok()) return step.status();
    for (const std::string& note : step->notes) spdlog::warn("generation {}: {}", generation, note);
    if (cluster.RetentionFor(ns) == nullptr) {
      spdlog::warn("generation {}: namespace {} has no [[retention]] policy now; its days rolled up or dropped "
                   "stay so ({})",
                   generation, ns, DescribeRetention(step->applied));
    } else {
      spdlog::info("generation {}: retention of namespace {}: {}{}", generation, ns, DescribeRetention(step->applied),
                   step->moved ? "" : " (unchanged)");
    }
    in->retention.push_back(std::move(step->applied));
  }
  return Status::Ok();
}

// Late data (fetched from every API node) and queued loads: what goes into
// G besides the day. NOT_FOUND when there is nothing at all to fold.
Result<GenerationInputs> GatherInputs(const BuildOptions& options, uint64_t generation) {
  const ClusterConfig& cluster = *options.cluster;
  const ServingArchive& previous = *options.previous;
  const WorkDir work(cluster.rebuild.work_dir);
  GenerationInputs in;
  in.previous_generation = previous.generation;
  in.archive_shards = cluster.archive_shards;
  in.sort_tasks = static_cast<int>(options.sort_tasks.size());
  in.day = options.day;
  in.created = NowIso();
  // Queued loads and restatements, oldest first; a restatement supersedes
  // the previous generation and every input older than it.
  std::vector<std::string> queue_ids;
  std::vector<PendingRestatement> restatements;
  std::vector<size_t> restatement_at;  // its place in queue_ids
  if (options.include_queue) {
    auto ids = PendingLoads(work);
    if (!ids.ok()) return ids.status();
    const Manifest* serving = previous.generation > 0 && !previous.manifests.empty() ? &previous.manifests[0] : nullptr;
    for (const std::string& id : *ids) {
      auto restatement = ReadRestatement(work, id);
      if (!restatement.ok()) return restatement.status();
      if (restatement->has_value()) {
        const DropRule& rule = (*restatement)->rule;
        // Queued while a build rolled its days up in another zone: taken out
        // of the queue, not folded across them (the run goes on).
        if (Status st = CheckNotInOtherZonesDays(serving, rule.ns, rule.from_unix, rule.to_unix); !st.ok()) {
          spdlog::error("restatement {} is not folded, and leaves the queue: {}", id, st.ToString());
          // Out of the queue first: a crash between the two leaves it out,
          // not refused on paper and folded after all.
          CLICKATRON_RETURN_IF_ERROR(RenameDurably(work.QueueDone(id), work.QueueDir(id) + "/queued.refused"));
          CLICKATRON_RETURN_IF_ERROR(WriteFileAtomically(work.QueueDir(id) + "/failed.txt", st.ToString() + "\n"));
          continue;
        }
        restatements.push_back(std::move(**restatement));
        restatement_at.push_back(queue_ids.size());
        in.drop_rules.push_back(restatements.back().rule);
      }
      queue_ids.push_back(id);
    }
  }
  // Every deletion there is (deletions.h). A generation built without one
  // that exists could not later be told from what came after it: no API
  // node answering is no generation.
  auto fetched = FetchDeletionsToFold(cluster, previous.generation, options.http_timeout_ms);
  if (!fetched.ok()) {
    return fetched.status().WithContext("nothing is built while no API node can say which deletions to fold in");
  }
  std::vector<FoldedDeletion> deletions = std::move(fetched).value();
  // What the next manifests' late_inputs keep of the previous ones (below).
  std::set<std::string> previous_late;
  for (const std::string& entry : previous.late_inputs) previous_late.insert(NormalizeLateInputId(cluster, entry));
  std::vector<std::string> kept_late(previous_late.begin(), previous_late.end());
  // A restatement needs the late files sealed before it in the generation
  // that folds it (after that, nothing would take their hours out).
  if (options.include_late || !restatements.empty()) {
    FetchLateOptions fetch;
    fetch.cluster = &cluster;
    fetch.already_folded = previous_late;
    fetch.dest_dir = work.GenLateDir(generation);
    fetch.http_timeout_ms = options.http_timeout_ms;
    fetch.transfer_timeout_ms = options.late_transfer_timeout_ms;
    auto late = FetchLateInputs(fetch);
    if (!late.ok()) return late.status();
    // A restatement that supersedes late data on a member that did not
    // answer waits, and so does everything after it (the loads queued after
    // it, the late files not sealed before it): folded before it, they would
    // be taken out by it.
    size_t folding = restatements.size();
    for (const auto& [member, why] : late->skipped_members) {
      for (size_t r = 0; r < folding; ++r) {
        auto before = restatements[r].late_before.find(member);
        if (before == restatements[r].late_before.end()) continue;
        const bool all_folded = std::all_of(before->second.begin(), before->second.end(), [&](const std::string& name) {
          return previous_late.count(LateInputId(member, name)) > 0;
        });
        if (all_folded) continue;
        spdlog::warn("restatement {} waits for the late data API member {} sealed before it ({}); it and what came "
                     "after it are folded by a run that reaches {}",
                     restatements[r].rule.id, member, why, member);
        folding = r;
      }
    }
    if (folding < restatements.size()) {
      const PendingRestatement& waiting = restatements[folding];
      std::vector<std::string> ids, paths;
      for (size_t f = 0; f < late->ids.size(); ++f) {
        std::string member, name;
        SplitLateInputId(late->ids[f], &member, &name);
        auto before = waiting.late_before.find(member);
        if (before == waiting.late_before.end() || before->second.count(name) == 0) continue;  // stays on its node
        ids.push_back(late->ids[f]);
        paths.push_back(late->paths[f]);
      }
      late->ids = std::move(ids);
      late->paths = std::move(paths);
      queue_ids.resize(restatement_at[folding]);
      restatements.resize(folding);
      restatement_at.resize(folding);
      in.drop_rules.resize(folding);
    }
    // The late files in groups by the restatements that supersede them,
    // each group sorted into an input of its own.
    std::map<std::vector<int>, std::vector<size_t>> groups;
    for (size_t f = 0; f < late->ids.size(); ++f) {
      std::string member, name;
      SplitLateInputId(late->ids[f], &member, &name);
      std::vector<int> drops;
      for (size_t r = 0; r < restatements.size(); ++r) {
        auto before = restatements[r].late_before.find(member);
        if (before != restatements[r].late_before.end() && before->second.count(name) > 0) {
          drops.push_back(static_cast<int>(r));
        }
      }
      groups[drops].push_back(f);
    }
    size_t group_number = 0;
    for (const auto& [drops, files] : groups) {
      const size_t k = group_number++;
      SortInputsOptions sort;
      for (size_t f : files) sort.inputs.push_back(late->paths[f]);
      sort.format = InputFormat::kLateData;
      sort.output = work.GenLateSorted(generation, k);
      sort.rejects_path = k == 0 ? work.GenLateRejects(generation) : fmt::format("{}.rejects.txt", sort.output);
      sort.temp_dir = work.TempDir(fmt::format("late-{}-{}", generation, k));
      sort.memory_bytes = cluster.rebuild.memory_mb << 20;
      sort.threads = cluster.rebuild.threads;
      sort.max_bad_line_ratio = cluster.rebuild.max_bad_line_ratio;
      sort.label = "late data";
      // A frame acknowledged before a deletion loses the lines it deletes.
      if (!deletions.empty()) {
        sort.drop_late_line = [&deletions](const OplogHeader& frame, std::string_view line) {
          return std::any_of(deletions.begin(), deletions.end(),
                             [&](const FoldedDeletion& d) { return d.CoversLateLine(frame, line); });
        };
      }
      auto sorted = SortInputs(sort);
      if (!sorted.ok()) return sorted.status().WithContext("late data");
      spdlog::info("late data: {} files, {} lines -> {} records{}{}", files.size(), sorted->lines, sorted->records,
                   drops.empty() ? "" : fmt::format(" (before {} restatements)", drops.size()),
                   sorted->late_lines_deleted == 0
                       ? ""
                       : fmt::format(", {} lines left out as deleted", sorted->late_lines_deleted));
      in.whole_inputs.push_back(sort.output);
      in.input_drops.push_back(drops);
    }
    in.late_files = late->ids;
    // Files folded earlier stay listed while their API node still has them
    // sealed (its /late/done has not happened), or while it did not answer,
    // so they are still skipped; the ones marked done drop off and the list
    // stays short.
    std::set<std::string> unknown_members;
    for (const auto& [member, why] : late->skipped_members) unknown_members.insert(member);
    const std::set<std::string> still_sealed(late->still_sealed.begin(), late->still_sealed.end());
    in.late_still_sealed = late->still_sealed;
    kept_late.clear();
    for (const std::string& id : previous_late) {
      std::string member, name;
      const bool is_id = SplitLateInputId(id, &member, &name);
      const MemberConfig* m = is_id ? cluster.FindMember(member) : nullptr;
      const bool answered = m != nullptr && m->role == MemberRole::kApi && unknown_members.count(member) == 0;
      if (!answered || still_sealed.count(id) > 0) kept_late.push_back(id);
    }
  }
  in.deletion_rules_from = in.drop_rules.size();
  for (const FoldedDeletion& d : deletions) in.drop_rules.push_back(d.Rule());
  std::map<std::string, int64_t> queued_at;
  if (!deletions.empty() && !queue_ids.empty()) {
    auto loads = ReadPriorLoads(work);
    if (!loads.ok()) return loads.status();
    for (const PriorLoad& load : *loads) {
      auto at = ParseTimestamp(load.created);
      if (!at.ok()) return at.status().WithContext(fmt::format("when load {} was queued", load.id));
      queued_at[load.id] = *at;
    }
  }
  for (size_t p = 0; p < queue_ids.size(); ++p) {
    in.whole_inputs.push_back(work.QueueSorted(queue_ids[p]));
    std::vector<int> drops;
    for (size_t r = 0; r < restatements.size(); ++r) {
      if (restatement_at[r] > p) drops.push_back(static_cast<int>(r));
    }
    // A load or restatement queued before a deletion obeys it.
    for (size_t k = 0; k < deletions.size(); ++k) {
      if (deletions[k].InLoad(queued_at[queue_ids[p]])) drops.push_back(static_cast<int>(in.deletion_rules_from + k));
    }
    in.input_drops.push_back(drops);
  }
  in.deletions = std::move(deletions);
  in.queue_ids = queue_ids;
  if (options.day.empty() && in.whole_inputs.empty()) {
    return Status::NotFound("nothing to fold into a new generation (no day, no late data, no queued load)");
  }
  in.late_inputs = in.late_files;
  in.late_inputs.insert(in.late_inputs.end(), kept_late.begin(), kept_late.end());
  return in;
}

std::string MergeTaskDir(const WorkDir& work, uint64_t generation, int shard) {
  return fmt::format("{}/tasks/merge-{}", work.GenDir(generation), shard);
}

// A whole input cut by archive shard (for an engine that ships each task
// only its own part): gen/G/parts/input-K/archive-A.csv, made once.
Result<std::vector<std::string>> SplitWholeInput(const WorkDir& work, uint64_t generation, size_t k,
                                                 const std::string& input, int shards) {
  const std::string dir = fmt::format("{}/parts/input-{}", work.GenDir(generation), k);
  std::vector<std::string> parts;
  for (int a = 0; a < shards; ++a) parts.push_back(fmt::format("{}/archive-{}.csv", dir, a));
  if (FileExists(dir + "/split.done")) return parts;
  CLICKATRON_RETURN_IF_ERROR(MakeDirs(dir));
  CLICKATRON_RETURN_IF_ERROR(SplitSortedFile(input, static_cast<uint32_t>(shards), parts));
  CLICKATRON_RETURN_IF_ERROR(WriteFileAtomically(dir + "/split.done", input + "\n"));
  return parts;
}

// A reshard for an engine that ships each task only its own part: every
// file of the previous generation, checked against its manifest, cut by the
// new shard count: gen/G/parts/previous-S/archive-A.csv, made once.
Result<std::vector<std::string>> SplitPreviousFile(const WorkDir& work, uint64_t generation, const std::string& file,
                                                   const Manifest& manifest, int shards) {
  const std::string dir = fmt::format("{}/parts/previous-{}", work.GenDir(generation), manifest.shard);
  std::vector<std::string> parts;
  for (int a = 0; a < shards; ++a) parts.push_back(fmt::format("{}/archive-{}.csv", dir, a));
  if (FileExists(dir + "/split.done")) return parts;
  auto mapped = MapCheckedPreviousFile(file, manifest);
  if (!mapped.ok()) return mapped.status();
  CLICKATRON_RETURN_IF_ERROR(MakeDirs(dir));
  TextLineSource lines((*mapped)->data(), file);
  CLICKATRON_RETURN_IF_ERROR(SplitSortedLines(&lines, static_cast<uint32_t>(shards), parts));
  CLICKATRON_RETURN_IF_ERROR(WriteFileAtomically(dir + "/split.done", file + "\n"));
  return parts;
}

// The part of a finished sort-shard task that holds archive shard `shard`'s
// lines. Its parts are cut by the count its spec names; the pipeline runs a
// sort task again when that is not the cluster's (pipeline.cc, SortShards),
// so another count here is a bug, never a reason to read the wrong part.
Result<std::string> SortTaskPart(const TaskPaths& sort, int shard, int shards) {
  auto spec = ReadSortShardSpec(sort);
  if (!spec.ok()) return spec.status();
  if (spec->archive_shards != shards) {
    return Status::Internal(fmt::format("{} was cut into {} archive shards, not {}", sort.dir, spec->archive_shards,
                                        shards));
  }
  return SortShardPart(sort, shard);
}

// Inputs shared by the merge tasks, cut by archive shard for a shipping
// engine (index: input, then shard).
struct CutInputs {
  std::vector<std::vector<std::string>> whole_parts;     // of GenerationInputs::whole_inputs
  std::vector<std::vector<std::string>> previous_parts;  // of the previous files, in a reshard
};

// A task resolves relative names against its own directory; paths in the
// rebuild's own tree (work_dir and backup_dir may be relative to where it
// runs) go into a local task's spec whole.
std::string AbsolutePath(const std::string& path) {
  std::error_code ec;
  const auto absolute = std::filesystem::absolute(path, ec);
  return ec ? path : absolute.lexically_normal().string();
}

// The merge-shard task of shard `shard`: its spec, and with a shipping
// engine its inputs linked into its in/.
Status PrepareMergeTask(const BuildOptions& options, const GenerationPlan& plan, const GenerationInputs& in,
                        const CutInputs& cut, int shard, const TaskPaths& task) {
  const ClusterConfig& cluster = *options.cluster;
  const ServingArchive& previous = *options.previous;
  const bool ship = options.engine->ships_inputs();
  const bool reshard = previous.generation > 0 && previous.shard_count != cluster.archive_shards;
  MergeShardSpec spec;
  spec.shard = shard;
  spec.shard_count = cluster.archive_shards;
  spec.generation = plan.generation;
  spec.last_day = plan.last_day;
  spec.created = in.created;
  spec.late_inputs = in.late_inputs;
  std::vector<std::string> inputs;  // local paths, this shard's lines among them
  for (const TaskPaths& sort : options.sort_tasks) {
    auto part = SortTaskPart(sort, shard, cluster.archive_shards);
    if (!part.ok()) return part.status();
    inputs.push_back(*part);
  }
  // The previous generation obeys every restatement, and the deletions it
  // may still hold.
  std::vector<int> previous_drops;
  for (size_t r = 0; r < in.drop_rules.size(); ++r) {
    const bool deletion = r >= in.deletion_rules_from;
    if (!deletion || in.deletions[r - in.deletion_rules_from].InPrevious(previous.generation)) {
      previous_drops.push_back(static_cast<int>(r));
    }
  }
  // The day's export of each realtime shard obeys the deletions installed
  // there after it was read (deletions.h).
  for (const TaskPaths& sort : options.sort_tasks) {
    std::vector<int> drops;
    if (in.deletions.empty()) {
      spec.input_drops.push_back(std::move(drops));
      continue;
    }
    auto sort_spec = ReadSortShardSpec(sort);
    if (!sort_spec.ok()) return sort_spec.status();
    auto done = ReadTaskDone(sort);
    if (!done.ok()) return done.status();
    const uint64_t export_epoch = done->value("tombstone_epoch", uint64_t{0});
    for (size_t k = 0; k < in.deletions.size(); ++k) {
      if (in.deletions[k].InExport(sort_spec->realtime_shard, export_epoch)) {
        drops.push_back(static_cast<int>(in.deletion_rules_from + k));
      }
    }
    spec.input_drops.push_back(std::move(drops));
  }
  for (size_t k = 0; k < in.whole_inputs.size(); ++k) {
    inputs.push_back(ship ? cut.whole_parts[k][static_cast<size_t>(shard)] : in.whole_inputs[k]);
    spec.input_drops.push_back(k < in.input_drops.size() ? in.input_drops[k] : std::vector<int>{});
  }
  // A shipping engine's reshard: this shard's part of every previous file,
  // cut (and checked) on this host, is an input like the others.
  for (const std::vector<std::string>& parts : cut.previous_parts) {
    inputs.push_back(parts[static_cast<size_t>(shard)]);
    spec.input_drops.push_back(previous_drops);
  }
  CLICKATRON_RETURN_IF_ERROR(MakeDirs(task.In()));
  for (size_t r = 0; r < in.drop_rules.size(); ++r) {
    DropRule rule = in.drop_rules[r];
    if (!rule.keys_file.empty()) {
      if (ship) {
        const std::string shipped = fmt::format("in/keys-{}.txt", r);
        CLICKATRON_RETURN_IF_ERROR(LinkOrCopyFile(rule.keys_file, task.Resolve(shipped)));
        rule.keys_file = shipped;
      } else {
        rule.keys_file = AbsolutePath(rule.keys_file);
      }
    }
    spec.drop_rules.push_back(std::move(rule));
  }
  spec.previous_drops = std::move(previous_drops);
  if (spec.drop_rules.empty()) spec.input_drops.clear();
  spec.retention = in.retention;
  for (size_t i = 0; i < inputs.size(); ++i) {
    if (!ship) {
      spec.inputs.push_back(AbsolutePath(inputs[i]));
      continue;
    }
    spec.inputs.push_back(fmt::format("in/input-{}.csv", i));
    CLICKATRON_RETURN_IF_ERROR(LinkOrCopyFile(inputs[i], task.Resolve(spec.inputs.back())));
  }
  if (reshard && !ship) {
    // Every previous file whole: the task checks each and filters its lines.
    for (size_t s = 0; s < previous.files.size(); ++s) {
      spec.reshard_from.push_back({AbsolutePath(previous.files[s]), previous.manifests[s]});
    }
  } else if (previous.generation > 0 && !reshard) {
    spec.previous_manifest = previous.manifests[static_cast<size_t>(shard)];
    spec.previous_file = AbsolutePath(previous.files[static_cast<size_t>(shard)]);
    // On another host the task fetches it from a replica of the shard
    // itself: the archive is most of the bytes, and the replicas serve it.
    if (ship) {
      spec.fetch_previous = true;
      spec.fetch_timeout_ms = options.transfer_timeout_ms;
      spec.previous_file = "";
    }
  }
  if (options.backup) {
    spec.backup = ship ? fmt::format("backup/shard-{}.csv.gz", shard)
                       : AbsolutePath(fmt::format("{}/shard-{}.csv.gz",
                                                  BackupDir(cluster.rebuild.backup_dir, plan.generation), shard));
  }
  return WriteTaskSpec(task, spec.ToJson());
}

// A finished merge task's file (and backup) moved to where the generation
// keeps them; done again harmlessly after a crash half-way.
Status CollectMergeTask(const BuildOptions& options, const GenerationPlan& plan, int shard, const TaskPaths& task,
                        Manifest* manifest) {
  const ClusterConfig& cluster = *options.cluster;
  const WorkDir work(cluster.rebuild.work_dir);
  auto done = ReadTaskDone(task);
  if (!done.ok()) return done.status();
  auto parsed = Manifest::FromJson(done->at("manifest"));
  if (!parsed.ok()) return parsed.status().WithContext(task.Done());
  *manifest = *parsed;
  const std::string built = MergeShardOutput(task, shard);
  const std::string kept = work.GenShard(plan.generation, shard);
  for (const auto& [from, to] : {std::pair{ManifestPathFor(built), ManifestPathFor(kept)}, std::pair{built, kept}}) {
    if (FileExists(from)) CLICKATRON_RETURN_IF_ERROR(RenameDurably(from, to));
  }
  if (!FileExists(kept)) return Status::Corruption(fmt::format("{} is done but {} is missing", task.dir, kept));
  // The backup copy, when the engine shipped it back: the .gz first and its
  // manifest last, each only while it is still there (a rerun after a crash
  // between the two moves finishes the second).
  const std::string dest = BackupDir(cluster.rebuild.backup_dir, plan.generation);
  for (const char* suffix : {".csv.gz", ".csv.manifest"}) {
    const std::string from = fmt::format("{}/backup/shard-{}{}", task.Out(), shard, suffix);
    if (!FileExists(from)) continue;
    CLICKATRON_RETURN_IF_ERROR(MakeDirs(dest));
    CLICKATRON_RETURN_IF_ERROR(MoveFileDurably(from, fmt::format("{}/shard-{}{}", dest, shard, suffix)));
  }
  return Status::Ok();
}

}  // namespace

nlohmann::json GenerationPlan::ToJson() const {
  nlohmann::json manifests_json = nlohmann::json::array();
  for (const Manifest& m : manifests) manifests_json.push_back(m.ToJson());
  return {{"generation", generation}, {"previous_generation", previous_generation},
          {"day", day},               {"queue_ids", queue_ids},
          {"older_days", older_days},
          {"late_files", late_files}, {"late_still_sealed", late_still_sealed}, {"last_day", last_day},
          {"shard_files", shard_files}, {"manifests", manifests_json},
          {"created", created}, {"deletions_folded", deletions_folded}};
}

Result<GenerationPlan> GenerationPlan::FromJson(const nlohmann::json& j) {
  GenerationPlan plan;
  try {
    plan.generation = j.at("generation").get<uint64_t>();
    plan.previous_generation = j.at("previous_generation").get<uint64_t>();
    plan.day = j.at("day").get<std::string>();
    if (j.contains("older_days")) plan.older_days = j["older_days"].get<std::vector<std::string>>();
    plan.queue_ids = j.at("queue_ids").get<std::vector<std::string>>();
    plan.late_files = j.at("late_files").get<std::vector<std::string>>();
    if (j.contains("late_still_sealed")) plan.late_still_sealed = j["late_still_sealed"].get<std::vector<std::string>>();
    plan.last_day = j.at("last_day").get<std::string>();
    plan.shard_files = j.at("shard_files").get<std::vector<std::string>>();
    plan.created = j.value("created", "");
    plan.deletions_folded = j.value("deletions_folded", std::vector<std::string>());
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
  plan.older_days = options.older_days;
  plan.last_day = std::max(previous.last_day, options.day);
  const std::string dir = work.GenDir(plan.generation);
  const std::string inputs_path = dir + "/inputs.json";

  // A build an earlier run started on the same previous generation and day
  // goes on with the same inputs and keeps its finished tasks; anything else
  // there is stale.
  std::optional<GenerationInputs> in = GenerationInputs::Read(inputs_path);
  // One deployed once, on this same previous generation, was rolled back
  // since (FinishPending finishes any other): its inputs and tasks are the
  // bad generation's, and its done marks would skip the deploy.
  const bool rolled_back = FileExists(work.GenDeployed(plan.generation));
  if (rolled_back) {
    spdlog::warn("generation {} was deployed before and the archive is back on generation {} (a rollback): "
                 "building it anew",
                 plan.generation, previous.generation);
  }
  if (in && !rolled_back && in->previous_generation == previous.generation && in->day == options.day &&
      in->archive_shards == cluster.archive_shards && in->sort_tasks == static_cast<int>(options.sort_tasks.size())) {
    spdlog::info("generation {}: continuing the build an earlier run started ({} late files, {} loads)",
                 plan.generation, in->late_files.size(), in->queue_ids.size());
  } else {
    std::error_code ec;
    std::filesystem::remove_all(dir, ec);
    CLICKATRON_RETURN_IF_ERROR(MakeDirs(dir));
    auto gathered = GatherInputs(options, plan.generation);
    if (!gathered.ok()) {
      std::filesystem::remove_all(dir, ec);
      return gathered.status();
    }
    in = std::move(gathered).value();
    CLICKATRON_RETURN_IF_ERROR(PlanRetention(cluster, previous, plan.last_day, plan.generation, &*in));
    CLICKATRON_RETURN_IF_ERROR(WriteFileAtomically(inputs_path, in->ToJson().dump(2) + "\n"));
  }
  plan.created = in->created;
  for (const FoldedDeletion& d : in->deletions) {
    if (d.InPrevious(previous.generation)) plan.deletions_folded.push_back(d.id);
  }
  plan.late_files = in->late_files;
  plan.late_still_sealed = in->late_still_sealed;
  plan.queue_ids = in->queue_ids;

  const int shards = cluster.archive_shards;
  const bool reshard = previous.generation > 0 && previous.shard_count != shards;
  if (reshard) {
    spdlog::warn("generation {} re-partitions the archive from {} to {} archive shards (the cluster file's "
                 "archive_shards): every shard of it is made from all {} files of generation {} and the new inputs",
                 plan.generation, previous.shard_count, shards, previous.files.size(), previous.generation);
  }
  CutInputs cut;
  if (options.engine->ships_inputs()) {
    for (size_t k = 0; k < in->whole_inputs.size(); ++k) {
      auto parts = SplitWholeInput(work, plan.generation, k, in->whole_inputs[k], shards);
      if (!parts.ok()) return parts.status();
      cut.whole_parts.push_back(std::move(parts).value());
    }
    if (reshard) {
      for (size_t s = 0; s < previous.files.size(); ++s) {
        auto parts = SplitPreviousFile(work, plan.generation, previous.files[s], previous.manifests[s], shards);
        if (!parts.ok()) return parts.status().WithContext(fmt::format("re-partitioning generation {}", previous.generation));
        cut.previous_parts.push_back(std::move(parts).value());
      }
    }
  }
  std::vector<TaskPaths> tasks;
  for (int s = 0; s < shards; ++s) {
    tasks.push_back(TaskPaths{MergeTaskDir(work, plan.generation, s)});
    if (TaskDone(tasks.back())) continue;
    CLICKATRON_RETURN_IF_ERROR(PrepareMergeTask(options, plan, *in, cut, s, tasks.back()));
  }
  // No total: the merge counts what it writes, which outgrows its inputs by
  // the day and span records it makes (a probe read "28.9 MB of 9.8 MB").
  Progress progress(fmt::format("merge into generation {}", plan.generation), 0);
  const Status merged = options.engine->Run("merge", tasks, &progress);
  progress.Finish();
  CLICKATRON_RETURN_IF_ERROR(merged.WithContext(fmt::format("building generation {}", plan.generation)));
  plan.manifests.resize(static_cast<size_t>(shards));
  for (int s = 0; s < shards; ++s) {
    CLICKATRON_RETURN_IF_ERROR(CollectMergeTask(options, plan, s, tasks[static_cast<size_t>(s)],
                                                &plan.manifests[static_cast<size_t>(s)]));
    plan.shard_files.push_back(work.GenShard(plan.generation, s));
  }
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
