// Several prefix scans answered as one (GET /mfwmatch): the API coalesces the
// fwmatches of concurrent queries into one request per shard.
//
// The answer is the union of the records matching any prefix, each record
// once, in key order — so a prefix that extends another adds nothing, and a
// reader can split the lines back per prefix by "key starts with prefix".
#pragma once

#include <functional>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "clickatron/status.h"
#include "record_scan.h"

namespace clickatron::realtime {

// The prefixes to scan, in order: sorted, without duplicates and without
// prefixes that extend another (their records are in the shorter one's scan).
std::vector<std::string> DisjointPrefixes(std::vector<std::string> prefixes);

// Opens the scan of one prefix.
using OpenPrefixScan = std::function<Result<std::unique_ptr<LineSource>>(std::string_view prefix)>;

// The lines of the scans of `prefixes` (already disjoint and sorted), one
// after another; each scan is opened when the one before has ended, so at
// most one holds iterators at a time. An error opening or reading a scan
// ends the lines with that status.
std::unique_ptr<LineSource> ChainPrefixScans(std::vector<std::string> prefixes, OpenPrefixScan open);

}  // namespace clickatron::realtime
