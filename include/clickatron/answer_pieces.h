// How an answer's bytes go into a libevent buffer: in pieces that each fill
// one 64 KiB allocation (a "chain"), not in one chain for the whole.
//
// Why: libevent frees a chain only once every byte of it is written, and
// sizes a chain for a whole body to the next power of two. A slow reader
// that took part of a 1.27 MB answer held its 2 MiB chain whole, while
// [http] max_answer_bytes_queued counts the bytes not yet written: 1,600
// such readers held about 600 MB within a 256 MiB bound. In pieces, what a
// connection holds is what the bound counts, within one piece.
//
// Thread-safety: as the buffer (the loop that owns it).
#pragma once

#include <cstddef>
#include <string_view>

struct evbuffer;

namespace clickatron {

// The most one piece holds: a chain's header shares its allocation, which
// libevent rounds up to a power of two, so 64 KiB less room for it.
inline constexpr size_t kAnswerPieceBytes = (64 << 10) - 256;

// Appends `body` to `buf` in pieces of at most kAnswerPieceBytes: its chains
// are each within one 64 KiB allocation (libevent fills a chain's room
// before it makes the next).
void AddInPieces(evbuffer* buf, std::string_view body);

}  // namespace clickatron
