// Hourly counts of one record, keyed by the unix time (UTC) of the hour's
// start, as a sorted flat vector.
//
// Why not a std::map: archive columns and realtime fwmatch lines both come in
// time order, so nearly every Add is an append, and a 30-day series of a hot
// key is ~700 hours: a node per hour cost more than parsing them did. The
// rollups then walk the hours in one linear pass.
#pragma once

#include <cstdint>
#include <initializer_list>
#include <utility>
#include <vector>

#include "clickatron/status.h"

namespace clickatron::api {

class HourlyCounts {
 public:
  using value_type = std::pair<int64_t, int64_t>;  // (hour start, count)
  using const_iterator = std::vector<value_type>::const_iterator;
  using iterator = const_iterator;

  HourlyCounts() = default;
  // Adds each entry in turn (tests and literals; duplicates sum).
  HourlyCounts(std::initializer_list<value_type> entries);

  // count added to the hour's total. OUT_OF_RANGE if the sum overflows.
  Status Add(int64_t hour, int64_t count);

  bool empty() const { return entries_.empty(); }
  size_t size() const { return entries_.size(); }
  const_iterator begin() const { return entries_.begin(); }
  const_iterator end() const { return entries_.end(); }
  // The first hour >= hour.
  const_iterator LowerBound(int64_t hour) const;

  friend bool operator==(const HourlyCounts&, const HourlyCounts&) = default;

 private:
  std::vector<value_type> entries_;
};

}  // namespace clickatron::api
