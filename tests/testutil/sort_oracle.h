// The reference for external sort tests: archive lines sorted and combined
// by the test's own code (std::map per key, std::sort), not the sorter's.
#pragma once

#include <algorithm>
#include <cstdint>
#include <map>
#include <string>
#include <vector>

namespace clickatron::rebuild {

// key -> column -> count as archive lines "key,col:n col:n", in map order.
using ColumnTable = std::map<std::string, std::map<std::string, int64_t>>;
inline std::vector<std::string> ArchiveLines(const ColumnTable& table) {
  std::vector<std::string> out;
  for (const auto& [key, columns] : table) {
    std::string line = key + ",";
    for (const auto& [name, count] : columns) {
      if (line.back() != ',') line += ' ';
      line += name + ":" + std::to_string(count);
    }
    out.push_back(line);
  }
  return out;
}

// The oracle: per key, column -> sum; lookups keep their (single) value.
inline std::vector<std::string> Oracle(const std::vector<std::string>& lines) {
  ColumnTable counters;
  std::map<std::string, std::string> lookups;
  for (const std::string& line : lines) {
    const size_t comma = line.find(',');
    const std::string key = line.substr(0, comma);
    const std::string value = line.substr(comma + 1);
    if (key.rfind("l|", 0) == 0) {
      lookups[key] = value;
      continue;
    }
    size_t start = 0;
    while (start <= value.size()) {
      size_t space = value.find(' ', start);
      if (space == std::string::npos) space = value.size();
      const std::string column = value.substr(start, space - start);
      const size_t colon = column.find(':');
      counters[key][column.substr(0, colon)] += std::stoll(column.substr(colon + 1));
      start = space + 1;
    }
  }
  std::vector<std::string> out = ArchiveLines(counters);
  for (const auto& [key, value] : lookups) out.push_back(key + "," + value);
  std::sort(out.begin(), out.end());
  return out;
}

}  // namespace clickatron::rebuild
