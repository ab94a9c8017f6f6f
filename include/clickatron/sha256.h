// SHA-256 through OpenSSL: of bytes in memory, and of a whole file streamed
// (bulk loads name their input files by content with it; an operator can
// check the figure with `sha256sum`). Digests are lowercase hex.
//
// Thread-safety: the functions share no state.
#pragma once

#include <cstddef>
#include <functional>
#include <string>
#include <string_view>

#include "clickatron/status.h"

namespace clickatron {

std::string Sha256Hex(std::string_view bytes);
// Bytes as lowercase hex, two digits each (digests, MACs, random tokens).
std::string ToLowerHex(const unsigned char* data, size_t n);

// The digest of the file's bytes as they are on disk (a gzip file's
// compressed bytes); NOT_FOUND when it does not exist, IO_ERROR when it
// cannot be read to its end.
Result<std::string> Sha256OfFile(const std::string& path);
// The digest of what `read` gives (a decompressed stream): it fills up to n
// bytes of `out` and returns how many, 0 at the end; its error ends the
// digest with that error.
Result<std::string> Sha256OfStream(const std::function<Result<size_t>(char* out, size_t n)>& read);

}  // namespace clickatron
