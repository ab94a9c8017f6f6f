#include "sortmerge/crc32_fast.h"

#include <cstring>

#include "clickatron/shard.h"

#if defined(__x86_64__)
#include <immintrin.h>
#endif

namespace clickatron::rebuild {
namespace {

// Below this zlib is as fast (and the folding needs at least 4 blocks).
constexpr size_t kFoldMin = 128;

#if defined(__x86_64__)
// Constants for the bit-reflected gzip polynomial 0x104C11DB7: each is
// reflect32(x^n mod P) << 1, for n = 544 and 480 (folding across 512 bits)
// and 160 and 96 (folding across 128 bits).
constexpr uint64_t kFold512Low = 0x154442bd4;
constexpr uint64_t kFold512High = 0x1c6e41596;
constexpr uint64_t kFold128Low = 0x1751997d0;
constexpr uint64_t kFold128High = 0x0ccaa009e;

__attribute__((target("pclmul,sse4.1"))) inline __m128i Fold(__m128i x, __m128i constants, __m128i next) {
  const __m128i low = _mm_clmulepi64_si128(x, constants, 0x00);
  const __m128i high = _mm_clmulepi64_si128(x, constants, 0x11);
  return _mm_xor_si128(_mm_xor_si128(low, high), next);
}

__attribute__((target("pclmul,sse4.1"))) inline __m128i Load(const char* p) {
  return _mm_loadu_si128(reinterpret_cast<const __m128i*>(p));
}

// REQUIRES: data.size() >= kFoldMin.
// Folding keeps the polynomial of the message modulo P while shortening it,
// so what is left (16 bytes + the tail) has the same crc as the whole; the
// starting crc enters as zlib's does, xored into the first 4 bytes.
__attribute__((target("pclmul,sse4.1"))) uint32_t FoldCrc32(uint32_t crc, std::string_view data) {
  const char* p = data.data();
  size_t left = data.size();
  __m128i x0 = _mm_xor_si128(Load(p), _mm_cvtsi32_si128(static_cast<int>(~crc)));
  __m128i x1 = Load(p + 16), x2 = Load(p + 32), x3 = Load(p + 48);
  p += 64;
  left -= 64;
  const __m128i k512 = _mm_set_epi64x(static_cast<long long>(kFold512High), static_cast<long long>(kFold512Low));
  while (left >= 64) {
    x0 = Fold(x0, k512, Load(p));
    x1 = Fold(x1, k512, Load(p + 16));
    x2 = Fold(x2, k512, Load(p + 32));
    x3 = Fold(x3, k512, Load(p + 48));
    p += 64;
    left -= 64;
  }
  const __m128i k128 = _mm_set_epi64x(static_cast<long long>(kFold128High), static_cast<long long>(kFold128Low));
  __m128i x = Fold(x0, k128, x1);
  x = Fold(x, k128, x2);
  x = Fold(x, k128, x3);
  while (left >= 16) {
    x = Fold(x, k128, Load(p));
    p += 16;
    left -= 16;
  }
  // The folded 16 bytes, then the tail: zlib with a zero register
  // (crc 0xffffffff in zlib's inverted convention).
  char rest[32];
  _mm_storeu_si128(reinterpret_cast<__m128i*>(rest), x);
  std::memcpy(rest + 16, p, left);
  return Crc32Extend(0xffffffffu, std::string_view(rest, 16 + left));
}

bool HavePclmul() {
  static const bool have = __builtin_cpu_supports("pclmul") && __builtin_cpu_supports("sse4.1");
  return have;
}
#endif

}  // namespace

uint32_t FastCrc32Extend(uint32_t crc, std::string_view data) {
#if defined(__x86_64__)
  if (data.size() >= kFoldMin && HavePclmul()) return FoldCrc32(crc, data);
#endif
  return Crc32Extend(crc, data);
}

}  // namespace clickatron::rebuild
