// See answer_pieces.h.
#include "clickatron/answer_pieces.h"

#include <event2/buffer.h>

#include <algorithm>

namespace clickatron {

void AddInPieces(evbuffer* buf, std::string_view body) {
  for (size_t at = 0; at < body.size(); at += kAnswerPieceBytes) {
    evbuffer_add(buf, body.data() + at, std::min(kAnswerPieceBytes, body.size() - at));
  }
}

}  // namespace clickatron
