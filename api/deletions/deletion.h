// One deletion (POST /delete; docs/protocols.md, "Deletions"): what it
// covers, who runs it, and how far it has come.
//
// A deletion covers namespace `ns` (one key, or every key) over the hours
// [from, to), as acknowledged before it: its realtime part is a tombstone
// on every realtime shard (realtime/tombstones.h), installed and then cut
// at each API node's oplog head per shard, which the owner (the API node
// that took the request) asks for after the install.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <string_view>

#include <nlohmann/json_fwd.hpp>

#include "clickatron/deletion_scope.h"
#include "clickatron/query_string.h"
#include "clickatron/record.h"
#include "clickatron/status.h"

namespace clickatron::api {

struct Deletion {
  std::string id;
  std::string ns;
  std::string key;          // as given ("" = every key of ns)
  std::string tkey;         // its stored form ("" = every key)
  bool hashed = false;      // tkey is the hash of key (a lookup record holds key)
  bool all_time = false;    // neither from nor to given: the key's lookup goes too
  int64_t from_unix = 0;    // the first hour deleted
  int64_t to_unix = 0;      // the hour after the last one deleted
  int64_t created_unix = 0;
  std::string owner;        // the API member that runs it
  // Realtime shard -> API member -> the last oplog seq it had acknowledged
  // for that shard when the deletion was made (set once, by the owner).
  std::map<int, std::map<std::string, uint64_t>> cuts;
  // When the cuts were taken (the owner's clock): the deletion's moment. A
  // load queued before it is deleted too (the rebuild).
  int64_t cut_unix = 0;
  // Realtime shard -> the epoch its tombstone got there (its GET /export
  // says which epochs an export is clean of: the rebuild takes the others'
  // records out of it).
  std::map<int, uint64_t> epochs;
  bool realtime_done = false;  // every realtime shard deleted its records and has its cut
  bool peers_told = false;     // every other API node has the record with realtime_done
  // The first archive generation built with this deletion folded in: its
  // records are gone from that generation and from every one built after it
  // (a rebuild after a rollback folds it again). 0: none yet. Reads hide the
  // deleted hours of any older generation's answers.
  uint64_t folded_into = 0;
  bool deployed = false;  // a generation that folded it in has been deployed
  // No file the cluster serves or keeps holds its records: realtime done, a
  // generation without them deployed, and no API node's late-data file
  // holds them (files marked done are rewritten without them).
  bool physical = false;

  // Whether `other` asks to delete the same: namespace, key and hours
  // (`to` compared only with `compare_to`: a client's retry that left it to
  // its default, the hour after now, moves it).
  bool SameScopeAs(const Deletion& other, bool compare_to = true) const {
    return ns == other.ns && key == other.key && all_time == other.all_time && from_unix == other.from_unix &&
           (!compare_to || to_unix == other.to_unix);
  }
  // Whether it covers key `tkey` (stored form) of namespace `ns`.
  bool Covers(std::string_view ns_of_key, std::string_view tkey_of_key) const {
    return ns_of_key == ns && (tkey.empty() || tkey_of_key == tkey);
  }
  // Whether archive generation `generation` may still hold its records
  // (0: any generation).
  bool MasksGeneration(uint64_t generation) const { return folded_into == 0 || generation < folded_into; }

  nlohmann::json ToJson() const;
  static Result<Deletion> FromJson(const nlohmann::json& json);
  // A record only moves forward: what `known` (an earlier copy of the same
  // deletion) had reached, this one keeps.
  void KeepProgressOf(const Deletion& known);
  // Whether the key's own lookup record goes too (a hashed key deleted for
  // all time), and that record's key ("l|HASH"; "" when it does not).
  bool ErasesLookup() const { return hashed && all_time && !tkey.empty(); }
  std::string LookupKey() const { return ErasesLookup() ? clickatron::LookupKey(tkey) : ""; }
  // What it takes out, for filters of records (late-data files).
  DeletionScope Scope() const;
  // The body of the realtime shard's POST /tombstone.
  nlohmann::json TombstoneJson() const;
};

// From POST /delete's parameters (`ns` required; `key`; `from`, `to` unix
// seconds on whole hours, defaults: the first hour there is, and the hour
// after `now` (neither given: every hour there is); `id`, a client's own id for it, so a retry is the same
// deletion): 400 naming the field that is wrong, and UNKNOWN_PARAMETER for
// any other parameter (ignored, a misspelt one would widen the deletion).
Result<Deletion> DeletionFromArgs(const QueryArgs& args, int64_t now_unix);

// "del-<created>-<8 hex digits>": sorts by time, unique enough across nodes.
std::string NewDeletionId(int64_t now_unix);

}  // namespace clickatron::api
