// Step: fetch the sealed late-data files to fold into the next generation.
//
// Each API node keeps increments for days no longer open in the realtime ring
// in its own data_dir (late/late-<unix>.sealed, framed logs; docs/protocols.md).
// The rebuild reads no other host's disk: for every API member of the cluster
// file it asks GET /late/files, then streams each listed file not already
// folded (not in the deployed manifests' late_inputs) with GET /late/file into
// the work dir (gen/G/late/<member>/late-<unix>.sealed: temp name, fsync,
// rename), checks its byte count against the listing and that it is a
// complete framed log. After the generation that folded a file is deployed,
// POST /late/done on its API node renames it to late-<unix>.done there.
//
// A file is named by its late-input id "<member>/late-<unix>.sealed" (in the
// plan's late_files and the manifests' late_inputs), so two API nodes' files
// of the same name never collide.
//
// An API member that does not answer (or whose transfer breaks off) is
// skipped with a warning: its files wait on its disk for the next run. A file
// that arrives whole but is not a complete framed log is an error: nothing is
// built from it.
#pragma once

#include <cstdint>
#include <map>
#include <set>
#include <string>
#include <vector>

#include "clickatron/config.h"
#include "clickatron/status.h"

namespace clickatron::rebuild {

// "<member>/<name>".
std::string LateInputId(const std::string& member, const std::string& name);
// Splits an id; false unless it is "<member without '/'>/late-<digits>.sealed".
bool SplitLateInputId(const std::string& id, std::string* member, std::string* name);
// Manifests written before late data was fetched over HTTP name a file by
// its path on the API node ("<data_dir>/late/late-<unix>.sealed"): that is
// turned into the id of the API member with that data_dir. Ids, and paths
// no API member's data_dir explains, come back unchanged.
std::string NormalizeLateInputId(const ClusterConfig& cluster, const std::string& entry);

struct FetchLateOptions {
  const ClusterConfig* cluster = nullptr;
  std::set<std::string> already_folded;  // ids in the deployed manifests' late_inputs (normalized)
  std::string dest_dir;                  // the fetched files go to dest_dir/<member>/<name>
  int http_timeout_ms = 10000;           // GET /late/files
  int transfer_timeout_ms = 3600 * 1000; // one GET /late/file, whole
};

struct FetchedLateInputs {
  std::vector<std::string> ids;    // fetched and checked: fold these (oldest first)
  std::vector<std::string> paths;  // their local copies, in the same order
  // Ids of already_folded that their member still lists as sealed (folded,
  // not yet marked done): they stay in the next manifests' late_inputs.
  std::vector<std::string> still_sealed;
  // Members that did not answer, with the reason; their already-folded ids
  // stay in late_inputs too (nothing is known about them this run).
  std::vector<std::pair<std::string, std::string>> skipped_members;
};

Result<FetchedLateInputs> FetchLateInputs(const FetchLateOptions& options);

// POST /late/done?name=… on the id's API member (already done is success).
Status MarkLateInputDone(const ClusterConfig& cluster, const std::string& id, int timeout_ms);

struct LateListing {
  std::string member;
  Status status;  // not ok: the member did not answer
  std::vector<std::pair<std::string, uint64_t>> files;  // name, bytes
};
// For a restatement: POST /late/seal on every API member, then GET
// /late/files: per member, the names of the sealed files, which hold every
// late line that member took before the seal (later ones go to files opened
// after it). UNAVAILABLE naming the first member that does not answer.
Result<std::map<std::string, std::set<std::string>>> SealAndListLateFiles(const ClusterConfig& cluster, int timeout_ms);

// GET /late/files of every API member (for `clickatron-rebuild status`).
std::vector<LateListing> ListLateFiles(const ClusterConfig& cluster, int timeout_ms);

}  // namespace clickatron::rebuild
