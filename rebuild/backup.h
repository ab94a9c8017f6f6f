// Step: a gzip copy of each shard file of a generation, with its manifest,
// in backup_dir/gen-G/ (shard-S.csv.gz, shard-S.csv.manifest). Written
// under temporary names and renamed when complete, like everything else.
// Restoring is `gunzip` + copying the manifest beside the file.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "clickatron/manifest.h"
#include "clickatron/status.h"

namespace clickatron::rebuild {

struct BackupOptions {
  std::string source;     // a built shard file
  std::string dest_gz;    // …/gen-G/shard-S.csv.gz
  Manifest manifest;      // written to dest_gz minus ".gz" plus ".manifest"
  int level = 1;          // gzip level: the nightly job favours speed
};

Status BackupShardFile(const BackupOptions& options);

std::string BackupDir(const std::string& backup_root, uint64_t generation);

// Removes backup_root/gen-G for every G <= newest - keep (keep 0: none), so
// the newest `keep` generations up to `newest` stay. Only folders named
// gen-<number> are touched. Returns the generations removed.
Result<std::vector<uint64_t>> PruneBackups(const std::string& backup_root, uint64_t newest, uint64_t keep);

}  // namespace clickatron::rebuild
