// Several prefix scans answered as one (GET /mfwmatch): the API coalesces the
// fwmatches of concurrent queries into one request per shard.
//
// The answer is the union of the records matching any prefix, each record
// once, in key order — so a prefix that extends another adds nothing, and a
// reader can split the lines back per prefix by "key starts with prefix".
// The scan itself is record_scan.h's ScanPrefixes.
#pragma once

#include <string>
#include <string_view>
#include <vector>

namespace clickatron::realtime {

// The prefixes to scan, in order: sorted, without duplicates and without
// prefixes that extend another (their records are in the shorter one's scan).
std::vector<std::string> DisjointPrefixes(std::vector<std::string> prefixes);

}  // namespace clickatron::realtime
