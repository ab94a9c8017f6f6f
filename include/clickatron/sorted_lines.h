// The order rules of a sorted file (an archive file, or any sortdb file the
// archive serves), checked in one place: by the archive replica when
// `[archive] verify_sorted_on_load` is on (archive/file_loader.cc) and by
// `clickatron manifest` before it writes a manifest for an existing file.
//
// A sorted file is lines sorted bytewise as whole lines (LC_ALL=C sort; bytes
// compare unsigned), docs/protocols.md "Sort order". The rules:
//  - no line is empty;
//  - every line holds the field separator (the text before its first
//    separator is the line's key; a line without one can never be found);
//  - every line sorts strictly after the line before it, as whole lines;
//  - no two adjacent lines (hence, given the order, no two lines) share a key.
// The last line may lack its newline. Nothing limits a line's length.
//
// Thread-safety: pure functions.
#pragma once

#include <cstdint>
#include <functional>
#include <string_view>

#include "clickatron/status.h"

namespace clickatron {

// Checks line `line_no` (1-based, without its newline) against `previous`,
// the line before it (ignored for line 1). CORRUPTION names the line numbers
// and, for an order fault, both keys.
Status CheckSortedLine(std::string_view previous, std::string_view line, uint64_t line_no, char separator);

// A check of each line after its order check (line_no is 1-based); its
// error stops the walk.
using SortedLineVisitor = std::function<Status(std::string_view line, uint64_t line_no)>;

// The whole-file check (O(file)): every line by CheckSortedLine, then by
// `each_line` if given; the error names the first line at fault. *lines
// (optional) is the number of lines read.
Status CheckSorted(std::string_view data, char separator, const SortedLineVisitor& each_line = nullptr,
                   uint64_t* lines = nullptr);

}  // namespace clickatron
