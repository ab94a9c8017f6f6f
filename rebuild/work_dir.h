// The rebuild's working directory: where each step leaves its finished
// result, so a rerun skips what is done (docs/rebuild.md has the tree).
//
//   days/D/tasks/sort-S/       realtime shard S's sort-shard task (task_dir.h): D exported,
//                              converted, sorted and cut by archive shard (out/archive-A.csv),
//                              its bad lines in out/rejects.txt; out/done.json = done
//   days/D/older-days.json     unexported older days folded with D
//   days/D/complete.done       D is in a deployed generation and realtime was told
//   queue/ID/sorted.csv        a bulk load waiting for the next generation
//   queue/ID/queued.done       marker: the load is complete and accepted; its files' sizes and SHA-256
//   queue/ID/rejects.txt       its bad lines
//   queue/ID/folded.done       marker: folded into a deployed generation
//   queue/ID/restate.json      a restatement: what it replaces, the late files before it
//   queue/ID/keys.txt          a restatement --keys-in-file: the keys it replaces
//   gen/G/shard-S.csv(.manifest)  generation G as built (kept until G+1 is deployed)
//   gen/G/late/M/late-U.sealed a late-data file fetched from API member M
//   gen/G/late-sorted.csv      late data folded into G (-K.csv: late files restatements supersede)
//   gen/G/inputs.json          what G folds in besides the day, fixed before its tasks run
//   gen/G/tasks/merge-A/       archive shard A's merge-shard task (its file is moved up when done)
//   gen/G/parts/input-K/       a late or load input cut by shard (for an engine on other hosts)
//   gen/G/plan.json            marker: G is built; what went into it
//   gen/G/deployed.done        every replica serves G
//   gen/G/finished.done        the steps after the deploy are done too
//   fetched/G/shard-S.csv(.manifest)  generation G fetched from a replica (when this
//                              work dir did not build it: a new rebuild host, a restore)
//   tmp/                       external-sort runs (removed when a sort ends)
//
// Every file is written under a temporary name and renamed when complete, so
// a file's presence under its final name means the step that makes it finished.
#pragma once

#include <cstdint>
#include <memory>
#include <string>

#include "clickatron/file_lock.h"
#include "clickatron/status.h"

namespace clickatron::rebuild {

class WorkDir {
 public:
  explicit WorkDir(std::string root) : root_(std::move(root)) {}
  const std::string& root() const { return root_; }

  std::string DaysDir() const { return root_ + "/days"; }
  std::string DayDir(const std::string& day) const { return DaysDir() + "/" + day; }
  std::string DayComplete(const std::string& day) const { return DayDir(day) + "/complete.done"; }

  std::string QueueRoot() const { return root_ + "/queue"; }
  std::string QueueDir(const std::string& id) const { return QueueRoot() + "/" + id; }
  std::string QueueSorted(const std::string& id) const { return QueueDir(id) + "/sorted.csv"; }
  std::string QueueDone(const std::string& id) const { return QueueDir(id) + "/queued.done"; }
  std::string QueueRejects(const std::string& id) const { return QueueDir(id) + "/rejects.txt"; }
  std::string QueueFolded(const std::string& id) const { return QueueDir(id) + "/folded.done"; }
  std::string QueueRestate(const std::string& id) const { return QueueDir(id) + "/restate.json"; }
  std::string QueueKeys(const std::string& id) const { return QueueDir(id) + "/keys.txt"; }

  std::string GenRoot() const { return root_ + "/gen"; }
  std::string GenDir(uint64_t generation) const { return GenRoot() + "/" + std::to_string(generation); }
  std::string GenShard(uint64_t generation, int shard) const {
    return GenDir(generation) + "/shard-" + std::to_string(shard) + ".csv";
  }
  std::string GenLateDir(uint64_t generation) const { return GenDir(generation) + "/late"; }
  std::string GenLateSorted(uint64_t generation) const { return GenDir(generation) + "/late-sorted.csv"; }
  // Late files that restatements supersede, sorted apart (group k >= 1).
  std::string GenLateSorted(uint64_t generation, size_t group) const {
    return group == 0 ? GenLateSorted(generation) : GenDir(generation) + "/late-sorted-" + std::to_string(group) + ".csv";
  }
  std::string GenLateRejects(uint64_t generation) const { return GenDir(generation) + "/late-rejects.txt"; }
  std::string GenPlan(uint64_t generation) const { return GenDir(generation) + "/plan.json"; }
  std::string GenDeployed(uint64_t generation) const { return GenDir(generation) + "/deployed.done"; }
  std::string GenFinished(uint64_t generation) const { return GenDir(generation) + "/finished.done"; }

  std::string FetchedRoot() const { return root_ + "/fetched"; }
  std::string FetchedShard(uint64_t generation, int shard) const {
    return FetchedRoot() + "/" + std::to_string(generation) + "/shard-" + std::to_string(shard) + ".csv";
  }

  std::string TempDir(const std::string& name) const { return root_ + "/tmp/" + name; }

 private:
  std::string root_;
};

// Files a rebuild killed while writing left under their temporary names
// (NAME.tmp.PID, file_util.h's WriteFileAtomically) in the work dir, in
// days/D/ and in gen/G/ (not deeper: a killed run's GNU parallel jobs may
// still write in their task dirs): removed. Called once the work dir's lock
// is taken, before this process writes anything there.
void RemoveStaleTempFiles(const WorkDir& work);

// One rebuild (a run, a load --now, a restatement's seal) at a time per work
// dir; what a killed one left half-written is swept once the lock is taken.
inline Result<std::unique_ptr<FileLock>> LockWorkDir(const WorkDir& work) {
  auto lock = FileLock::Acquire(work.root(), "lock", "another clickatron-rebuild is running on " + work.root());
  if (lock.ok()) RemoveStaleTempFiles(work);
  return lock;
}

}  // namespace clickatron::rebuild
