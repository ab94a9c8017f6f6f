// Step: a gzip copy of each shard file of a generation, with its manifest,
// in backup_dir/gen-G/ (shard-S.csv.gz, shard-S.csv.manifest). Written
// under temporary names and renamed when complete, like everything else.
// Restoring is `gunzip` + copying the manifest beside the file.
#pragma once

#include <string>

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

}  // namespace clickatron::rebuild
