// Shared fixtures for the archive tests: sortdb's published sample and
// archive files written with their manifest.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

#include <gtest/gtest.h>

#include "clickatron/file_util.h"
#include "clickatron/manifest.h"

namespace clickatron::archive::testing {

// The "small slice of static metrics data" from seeds/sortdb.txt, verbatim.
inline constexpr std::string_view kSortdbSample =
    "c.u|jehiah.c3h5,US:2\n"
    "c.u|jehiah.c3h7,US:1\n"
    "c.u|jehiah.c3h9,None:2 US:3\n"
    "c.u|jehiah.c3ha,None:2\n"
    "c.u|jehiah.c3hb,None:2 US:3\n"
    "c.u|jehiah.c3hc,None:3 US:4\n"
    "c.u|jehiah.c3hd,None:5 US:4\n"
    "c.u|jehiah.c3he,None:2 US:6\n"
    "c.u|jehiah.c3hf,None:3 US:5\n"
    "c.u|jehiah.c3hg,None:4 US:5\n"
    "c.u|jehiah.c3hh,DE:1 None:5 US:7\n"
    "c.u|jehiah.c3hi,CA:1 None:6 US:5\n"
    "u|jehiah.c3hh,13\n"
    "u|jehiah.c3i0,7\n";

// Writes `contents` at `path` and a matching manifest beside it (the way the
// rebuild does: manifest first, then the file, each renamed into place).
inline void WriteArchive(const std::string& path, std::string_view contents, uint64_t generation,
                         const std::string& last_day) {
  Manifest m;
  m.generation = generation;
  m.last_day = last_day;
  m.created = "2012-03-26T02:10:00Z";
  DescribeArchiveData(contents, &m);
  ASSERT_TRUE(WriteManifestAtomically(ManifestPathFor(path), m).ok());
  ASSERT_TRUE(WriteFileAtomically(path, contents).ok());
}

}  // namespace clickatron::archive::testing
