#include "clickatron/deletion_scope.h"

#include "clickatron/record.h"

namespace clickatron {

bool DeletionScope::CoversRealtimeKey(std::string_view key) const {
  if (!lookup.empty() && key == lookup) return true;
  return RealtimeKeyCovered(key, ns, tkey, from_unix, to_unix);
}

bool DeletionScope::CoversLateLine(const OplogHeader& frame, std::string_view line) const {
  if (CutsKnown()) {
    // Only frames the deletion's cut on their shard reaches.
    const auto shard = cuts.find(frame.shard);
    if (shard == cuts.end()) return false;
    const auto cut = shard->second.find(frame.source);
    if (cut == shard->second.end() || frame.seq > cut->second) return false;
  }
  return CoversRealtimeKey(LineKey(line));
}

}  // namespace clickatron
