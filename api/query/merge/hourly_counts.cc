// Sorted flat hourly counts; see hourly_counts.h.
#include "query/merge/hourly_counts.h"

#include <algorithm>

#include "clickatron/record.h"

namespace clickatron::api {

HourlyCounts::HourlyCounts(std::initializer_list<value_type> entries) {
  for (const auto& [hour, count] : entries) (void)Add(hour, count);
}

Status HourlyCounts::AddInOrder(int64_t hour, int64_t count) {
  if (entries_.back().first == hour) return AddCount(&entries_.back().second, count);
  // Out of order: an archive hour after realtime ones (bulk-loaded history
  // past the archive's last day). Rare, so a vector insert is fine.
  auto it = std::lower_bound(entries_.begin(), entries_.end(), hour,
                             [](const value_type& e, int64_t h) { return e.first < h; });
  if (it->first == hour) return AddCount(&it->second, count);
  entries_.insert(it, value_type{hour, count});
  return Status::Ok();
}

HourlyCounts::const_iterator HourlyCounts::LowerBound(int64_t hour) const {
  return std::lower_bound(entries_.begin(), entries_.end(), hour,
                          [](const value_type& e, int64_t h) { return e.first < h; });
}

void HourlyCounts::EraseIn(int64_t begin, int64_t end) {
  const auto first = LowerBound(begin);
  entries_.erase(first, LowerBound(end));
}

}  // namespace clickatron::api
