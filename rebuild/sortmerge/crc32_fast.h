// zlib's crc32 (the manifests' checksum), faster on long buffers.
//
// The rebuild checksums every byte of the previous generation and of the new
// one each night; zlib's table-driven crc32 runs at a few GB/s and was a
// quarter of the merge step's CPU. On x86-64 with PCLMULQDQ the buffer is
// folded 64 bytes at a time with carry-less multiplications (the folding
// constants are x^n mod P for the gzip polynomial, computed for this file),
// and the last 16..31 bytes go through zlib; elsewhere it is zlib's crc32_z.
// The result is always exactly zlib's (tests/rebuild/sortmerge/crc32_fast_test.cc).
#pragma once

#include <cstdint>
#include <string_view>

namespace clickatron::rebuild {

// Same as Crc32Extend (zlib crc32_z): `crc` is the value for the bytes before.
uint32_t FastCrc32Extend(uint32_t crc, std::string_view data);

}  // namespace clickatron::rebuild
