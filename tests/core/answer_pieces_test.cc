// AddInPieces (clickatron/answer_pieces.h): a large answer goes into a
// libevent buffer as chains of at most a piece each, so each is freed once
// it is written; the bytes are the answer's, in order.
#include "clickatron/answer_pieces.h"

#include <event2/buffer.h>
#include <gtest/gtest.h>

#include <string>
#include <vector>
#include <algorithm>


namespace clickatron {
namespace {

// The buffer's chains: the length of each, in order.
std::vector<size_t> ChainLengths(evbuffer* buf) {
  const int n = evbuffer_peek(buf, -1, nullptr, nullptr, 0);
  std::vector<evbuffer_iovec> chains(static_cast<size_t>(std::max(n, 0)));
  evbuffer_peek(buf, -1, nullptr, chains.data(), n);
  std::vector<size_t> lengths;
  for (const evbuffer_iovec& v : chains) lengths.push_back(v.iov_len);
  return lengths;
}

TEST(AddInPiecesTest, ALargeAnswerIsChainsOfAPieceEachWithItsBytesInOrder) {
  std::string body;
  for (int i = 0; body.size() < 1'300'000; ++i) body += "{\"clicks\":" + std::to_string(i) + ",\"dt\":1796}";
  evbuffer* buf = evbuffer_new();
  AddInPieces(buf, body);
  // Each chain within one 64 KiB allocation (libevent fills a chain's room
  // before it makes the next), so they are many.
  const std::vector<size_t> lengths = ChainLengths(buf);
  EXPECT_GE(lengths.size(), body.size() / (64 << 10));
  for (size_t i = 0; i < lengths.size(); ++i) EXPECT_LE(lengths[i], size_t{64} << 10) << "chain " << i;
  std::string out(evbuffer_get_length(buf), '\0');
  evbuffer_remove(buf, out.data(), out.size());
  EXPECT_EQ(out, body);
  // A small answer is one chain; none for nothing.
  AddInPieces(buf, "ok");
  EXPECT_EQ(ChainLengths(buf), std::vector<size_t>{2});
  evbuffer_drain(buf, 2);
  AddInPieces(buf, "");
  EXPECT_EQ(evbuffer_get_length(buf), 0u);
  evbuffer_free(buf);
}

}  // namespace
}  // namespace clickatron
