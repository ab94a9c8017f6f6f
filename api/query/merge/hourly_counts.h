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
  // Inline for the common case, an hour after all the others.
  Status Add(int64_t hour, int64_t count) {
    if (entries_.empty() || entries_.back().first < hour) {
      entries_.emplace_back(hour, count);
      return Status::Ok();
    }
    return AddInOrder(hour, count);
  }
  // Add of each of [first, last), ascending hours, each once (a decoded
  // archive total): one copy when they all come after the hours held (a
  // year's 8,760 hours were a quarter of a 365-day series' CPU added one by
  // one, the vector growing as they came).
  template <typename It>
  Status AddAscending(It first, It last) {
    if (first == last) return Status::Ok();
    if (entries_.empty() || entries_.back().first < first->first) {
      entries_.insert(entries_.end(), first, last);
      return Status::Ok();
    }
    for (; first != last; ++first) CLICKATRON_RETURN_IF_ERROR(Add(first->first, first->second));
    return Status::Ok();
  }

  bool empty() const { return entries_.empty(); }
  size_t size() const { return entries_.size(); }
  const_iterator begin() const { return entries_.begin(); }
  const_iterator end() const { return entries_.end(); }
  // The first hour >= hour.
  const_iterator LowerBound(int64_t hour) const;
  // Removes the hours in [begin, end).
  void EraseIn(int64_t begin, int64_t end);

  friend bool operator==(const HourlyCounts&, const HourlyCounts&) = default;

 private:
  // Add of an hour at or before the last one held.
  Status AddInOrder(int64_t hour, int64_t count);

  std::vector<value_type> entries_;
};

}  // namespace clickatron::api
