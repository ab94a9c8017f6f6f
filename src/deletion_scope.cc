#include "clickatron/deletion_scope.h"

#include "clickatron/record.h"

namespace clickatron {

bool DeletionScope::CoversRealtimeKey(std::string_view key) const {
  if (!lookup.empty() && key == lookup) return true;
  return RealtimeKeyCovered(key, ns, tkey, from_unix, to_unix);
}

bool DeletionScope::CoversLateLine(const OplogHeader& frame, std::string_view line) const {
  if (!CutsKnown()) return CoversRealtimeKey(line.substr(0, line.find(',')));
  const auto shard = cuts.find(frame.shard);
  if (shard == cuts.end()) return false;
  const auto cut = shard->second.find(frame.source);
  if (cut == shard->second.end() || frame.seq > cut->second) return false;
  return CoversRealtimeKey(line.substr(0, line.find(',')));
}

}  // namespace clickatron
