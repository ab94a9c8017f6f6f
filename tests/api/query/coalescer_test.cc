// The read coalescer (api/query/fetch/coalescer.h) and the split of coalesced answers
// (api/query/fetch/coalesced_reads.h): lookups queue while a request is out and go out
// together; every waiter gets exactly its own reply, or the batch's error.
#include "query/fetch/coalescer.h"

#include <gtest/gtest.h>

#include <map>
#include <optional>

#include "query/fetch/coalesced_reads.h"

namespace clickatron::api {
namespace {

using Replies = Result<std::vector<std::string>>;

// A sender that holds each batch until the test answers it.
struct FakeTarget {
  struct Sent {
    std::vector<std::string> keys;
    Coalescer<std::string>::BatchDone done;
  };
  std::vector<Sent> sent;
  size_t answered = 0;

  Coalescer<std::string>::SendBatch Sender() {
    return [this](std::vector<std::string> keys, Coalescer<std::string>::BatchDone done) {
      sent.push_back(Sent{std::move(keys), std::move(done)});
    };
  }
  // Answers the oldest unanswered batch with "value of K" for each key K.
  void AnswerNext() {
    Sent& s = sent.at(answered++);
    std::vector<std::string> replies;
    for (const std::string& k : s.keys) replies.push_back("value of " + k);
    s.done(std::move(replies));
  }
  void FailNext(Status st) { sent.at(answered++).done(std::move(st)); }
};

// Collects what each waiter got (status text or value), by submission label.
struct Outcomes {
  std::map<std::string, std::vector<std::string>> got;
  Coalescer<std::string>::Waiter For(const std::string& label) {
    return [this, label](Result<std::string> r) {
      got[label].push_back(r.ok() ? *r : "error: " + std::string(r.status().message()));
    };
  }
};

Coalescer<std::string>::Options Opts(int in_flight, size_t max_keys, size_t max_bytes = 1 << 20) {
  return Coalescer<std::string>::Options{.max_in_flight = in_flight, .max_keys = max_keys, .max_bytes = max_bytes};
}

TEST(ReadCoalescerTest, LoneLookupIsSentAtOnceAndQueuedOnesGoTogether) {
  FakeTarget target;
  Outcomes out;
  Coalescer<std::string> c(Opts(1, 64), target.Sender(), nullptr);
  c.Submit("k1", out.For("a"));
  ASSERT_EQ(target.sent.size(), 1u);  // nothing was in flight: no waiting
  EXPECT_EQ(target.sent[0].keys, std::vector<std::string>{"k1"});
  c.Submit("k2", out.For("b"));
  c.Submit("k3", out.For("c"));
  c.Submit("k2", out.For("d"));  // the same key again: asked once, answered to both
  EXPECT_EQ(target.sent.size(), 1u);
  EXPECT_EQ(c.queued(), 3u);
  EXPECT_TRUE(out.got.empty());

  target.AnswerNext();
  // The queue went out as one request before the replies were handed out.
  ASSERT_EQ(target.sent.size(), 2u);
  EXPECT_EQ(target.sent[1].keys, (std::vector<std::string>{"k2", "k3"}));
  EXPECT_EQ(out.got["a"], std::vector<std::string>{"value of k1"});
  EXPECT_EQ(out.got.count("b"), 0u);

  target.AnswerNext();
  EXPECT_EQ(out.got["b"], std::vector<std::string>{"value of k2"});
  EXPECT_EQ(out.got["c"], std::vector<std::string>{"value of k3"});
  EXPECT_EQ(out.got["d"], std::vector<std::string>{"value of k2"});
  EXPECT_EQ(c.in_flight(), 0);
  // Two requests, asking 3 distinct keys, answered 4 waiters.
  EXPECT_EQ(target.sent.size(), 2u);
  size_t keys = 0;
  for (const FakeTarget::Sent& s : target.sent) keys += s.keys.size();
  EXPECT_EQ(keys, 3u);
  size_t waiters = 0;
  for (const auto& [label, values] : out.got) waiters += values.size();
  EXPECT_EQ(waiters, 4u);
}

TEST(ReadCoalescerTest, LookupsSubmittedTogetherLeaveTogether) {
  FakeTarget target;
  Outcomes out;
  Coalescer<std::string> c(Opts(1, 3), target.Sender(), nullptr);
  // Nothing in flight: the first of them does not go out alone.
  std::vector<Coalescer<std::string>::Lookup> lookups;
  for (const char* k : {"k1", "k2", "k3", "k4"}) lookups.push_back({k, out.For(k)});
  c.SubmitAll(std::move(lookups));
  ASSERT_EQ(target.sent.size(), 1u);
  EXPECT_EQ(target.sent[0].keys, (std::vector<std::string>{"k1", "k2", "k3"}));  // the key cap still holds
  EXPECT_EQ(c.queued(), 1u);
  // While that is out, a second caller's lookups queue behind the rest.
  std::vector<Coalescer<std::string>::Lookup> more;
  more.push_back({"k5", out.For("k5")});
  more.push_back({"k1", out.For("k1 again")});
  c.SubmitAll(std::move(more));
  EXPECT_EQ(target.sent.size(), 1u);
  target.AnswerNext();
  ASSERT_EQ(target.sent.size(), 2u);
  EXPECT_EQ(target.sent[1].keys, (std::vector<std::string>{"k4", "k5", "k1"}));
  target.AnswerNext();
  EXPECT_EQ(out.got.size(), 6u);
  for (const char* k : {"k1", "k2", "k3", "k4", "k5"}) {
    EXPECT_EQ(out.got[k], std::vector<std::string>{std::string("value of ") + k});
  }
  EXPECT_EQ(out.got["k1 again"], std::vector<std::string>{"value of k1"});
  // An empty submission sends nothing.
  c.SubmitAll({});
  EXPECT_EQ(target.sent.size(), 2u);
}

// A batch's keys grow past several reallocations (short keys' bytes move
// with their strings, long ones' do not): a key queued again after any of
// them is still found in the batch and asked once.
TEST(ReadCoalescerTest, AKeyQueuedAgainIsAskedOnceHoweverLongTheBatchGrew) {
  FakeTarget target;
  Outcomes out;
  Coalescer<std::string> c(Opts(1, 64), target.Sender(), nullptr);
  c.Submit("first", out.For("first"));  // in flight: the rest queue
  std::vector<std::string> keys;
  for (int i = 0; i < 40; ++i) keys.push_back(i % 2 == 0 ? fmt::format("k{}", i) : fmt::format("{:040}", i));
  std::vector<Coalescer<std::string>::Lookup> lookups;
  for (size_t i = 0; i < keys.size(); ++i) {
    lookups.push_back({keys[i], out.For(keys[i])});
    // Each earlier key once more, after the batch has taken this one.
    if (i % 7 == 6) lookups.push_back({keys[i / 2], out.For("again " + keys[i / 2])});
  }
  lookups.push_back({keys.front(), out.For("again " + keys.front())});
  lookups.push_back({keys.back(), out.For("again " + keys.back())});
  c.SubmitAll(std::move(lookups));
  target.AnswerNext();
  ASSERT_EQ(target.sent.size(), 2u);
  EXPECT_EQ(target.sent[1].keys, keys);
  target.AnswerNext();
  for (const auto& [label, values] : out.got) {
    const std::string key = label.starts_with("again ") ? label.substr(6) : label;
    EXPECT_EQ(values, std::vector<std::string>{"value of " + key}) << label;
  }
  EXPECT_EQ(out.got.size(), 1 + keys.size() + 5 + 2);
}

TEST(ReadCoalescerTest, BatchesRespectKeyAndByteCaps) {
  FakeTarget target;
  Outcomes out;
  // Cost = key length; at most 3 keys and 10 bytes per request.
  Coalescer<std::string> c(Opts(1, 3, 10), target.Sender(), [](std::string_view k) { return k.size(); });
  c.Submit("first", out.For("first"));
  for (const char* k : {"a1", "a2", "a3", "a4", "bbbbbbbbb", "c"}) c.Submit(k, out.For(k));
  target.AnswerNext();
  ASSERT_EQ(target.sent.size(), 2u);
  EXPECT_EQ(target.sent[1].keys, (std::vector<std::string>{"a1", "a2", "a3"}));  // key cap
  target.AnswerNext();
  ASSERT_EQ(target.sent.size(), 3u);
  EXPECT_EQ(target.sent[2].keys, (std::vector<std::string>{"a4"}));  // 2 + 9 bytes would pass 10
  target.AnswerNext();
  EXPECT_EQ(target.sent[3].keys, (std::vector<std::string>{"bbbbbbbbb", "c"}));
  target.AnswerNext();
  EXPECT_EQ(out.got.size(), 7u);
  for (const auto& [label, values] : out.got) EXPECT_EQ(values, std::vector<std::string>{"value of " + label});
}

TEST(ReadCoalescerTest, OneKeyLargerThanTheByteCapStillGoesAlone) {
  FakeTarget target;
  Outcomes out;
  Coalescer<std::string> c(Opts(1, 8, 4), target.Sender(), [](std::string_view k) { return k.size(); });
  c.Submit("a-very-long-key", out.For("x"));
  ASSERT_EQ(target.sent.size(), 1u);
  target.AnswerNext();
  EXPECT_EQ(out.got["x"], std::vector<std::string>{"value of a-very-long-key"});
}

TEST(ReadCoalescerTest, UpToMaxInFlightAreSentWithoutWaiting) {
  FakeTarget target;
  Outcomes out;
  Coalescer<std::string> c(Opts(2, 64), target.Sender(), nullptr);
  c.Submit("k1", out.For("1"));
  c.Submit("k2", out.For("2"));
  c.Submit("k3", out.For("3"));
  c.Submit("k4", out.For("4"));
  ASSERT_EQ(target.sent.size(), 2u);
  EXPECT_EQ(c.in_flight(), 2);
  target.AnswerNext();
  ASSERT_EQ(target.sent.size(), 3u);
  EXPECT_EQ(target.sent[2].keys, (std::vector<std::string>{"k3", "k4"}));
}

TEST(ReadCoalescerTest, FailedBatchFailsEveryWaiterAndTheNextBatchStillGoes) {
  FakeTarget target;
  Outcomes out;
  Coalescer<std::string> c(Opts(1, 64), target.Sender(), nullptr);
  c.Submit("k0", out.For("first"));
  c.Submit("k1", out.For("a"));
  c.Submit("k2", out.For("b"));
  c.Submit("k1", out.For("c"));
  target.AnswerNext();
  c.Submit("k3", out.For("later"));  // queued behind the batch that will fail
  target.FailNext(Status::Internal("a reply could not be read"));
  for (const char* label : {"a", "b", "c"}) {
    EXPECT_EQ(out.got[label], std::vector<std::string>{"error: a reply could not be read"}) << label;
  }
  ASSERT_EQ(target.sent.size(), 3u);
  target.AnswerNext();
  EXPECT_EQ(out.got["later"], std::vector<std::string>{"value of k3"});
}

TEST(ReadCoalescerTest, ATargetThatDidNotAnswerFailsTheLookupsQueuedBehindItsRequest) {
  FakeTarget target;
  Outcomes out;
  Coalescer<std::string> c(Opts(1, 64), target.Sender(), nullptr);
  c.Submit("k0", out.For("first"));
  c.Submit("k1", out.For("queued"));  // waits for the request out
  target.FailNext(Status::Unavailable("realtime shard 0: timed out", "SHARD_UNAVAILABLE"));
  EXPECT_EQ(out.got["first"], std::vector<std::string>{"error: realtime shard 0: timed out"});
  EXPECT_EQ(out.got["queued"], std::vector<std::string>{"error: realtime shard 0: timed out"})
      << "queued behind a request its target never answered, it would wait a whole timeout more";
  EXPECT_EQ(target.sent.size(), 1u);
  // Later lookups go out again: the target may be back.
  c.Submit("k2", out.For("later"));
  ASSERT_EQ(target.sent.size(), 2u);
  target.AnswerNext();
  EXPECT_EQ(out.got["later"], std::vector<std::string>{"value of k2"});
}

TEST(ReadCoalescerTest, AWrongNumberOfRepliesFailsTheBatch) {
  FakeTarget target;
  Outcomes out;
  Coalescer<std::string> c(Opts(1, 64), target.Sender(), nullptr);
  c.Submit("k0", out.For("first"));
  c.Submit("k1", out.For("a"));
  c.Submit("k2", out.For("b"));
  target.AnswerNext();
  target.sent[1].done(std::vector<std::string>{"only one"});
  EXPECT_TRUE(out.got["a"].at(0).starts_with("error:"));
  EXPECT_TRUE(out.got["b"].at(0).starts_with("error:"));
}

TEST(ReadCoalescerTest, SynchronousAnswersAndResubmissionFromACallback) {
  std::vector<std::vector<std::string>> sent;
  Coalescer<std::string>* self = nullptr;
  Coalescer<std::string> c(
      Opts(1, 64),
      [&sent](std::vector<std::string> keys, Coalescer<std::string>::BatchDone done) {
        sent.push_back(keys);
        std::vector<std::string> replies;
        for (const std::string& k : keys) replies.push_back(k + "!");
        done(std::move(replies));  // before Send returns
      },
      nullptr);
  self = &c;
  std::vector<std::string> got;
  c.Submit("a", [&](Result<std::string> r) {
    got.push_back(*r);
    self->Submit("b", [&](Result<std::string> r2) { got.push_back(*r2); });
  });
  EXPECT_EQ(got, (std::vector<std::string>{"a!", "b!"}));
  EXPECT_EQ(sent.size(), 2u);
  EXPECT_EQ(c.in_flight(), 0);
  EXPECT_EQ(c.queued(), 0u);
}

TEST(ReadCoalescerTest, AnAnswerAfterDestructionCallsNobody) {
  Coalescer<std::string>::BatchDone late;
  bool called = false;
  {
    Coalescer<std::string> c(
        Opts(1, 64), [&late](std::vector<std::string>, Coalescer<std::string>::BatchDone done) { late = done; },
        nullptr);
    c.Submit("k", [&called](Result<std::string>) { called = true; });
  }
  late(std::vector<std::string>{"v"});
  EXPECT_FALSE(called);
}

// ---- demultiplexing ----------------------------------------------------------

TEST(CoalescedReadsTest, FwmatchSplitGivesEachPrefixExactlyWhatItsOwnFwmatchWould) {
  // "u|a" prefixes "u|a." and "u|ab."; "u|ab." does not prefix "u|a.".
  const std::vector<std::string> prefixes = {"u|a.", "u|ab.", "u|a", "c.u|a."};
  const std::string body =
      "c.u|a.US.v1c3,4\n"
      "u|a.v1c3,1\n"
      "u|a.v1c4,2\n"
      "u|ab.v1c3,5\n"
      "u|abc.v1c3,7\n";
  auto split = SplitFwmatchByPrefix(body, prefixes);
  ASSERT_TRUE(split.ok()) << split.status().ToString();
  ASSERT_EQ(split->size(), 4u);
  // Oracle: filter the lines by key prefix, independently of the code.
  for (size_t i = 0; i < prefixes.size(); ++i) {
    std::string expected;
    size_t pos = 0;
    while (pos < body.size()) {
      const size_t end = body.find('\n', pos);
      const std::string line = body.substr(pos, end - pos);
      if (line.substr(0, line.find(',')).starts_with(prefixes[i])) expected += line + "\n";
      pos = end + 1;
    }
    EXPECT_EQ((*split)[i], expected) << prefixes[i];
  }
  EXPECT_EQ((*split)[0], "u|a.v1c3,1\nu|a.v1c4,2\n");
  EXPECT_EQ((*split)[1], "u|ab.v1c3,5\n");
  EXPECT_EQ((*split)[3], "c.u|a.US.v1c3,4\n");
}

TEST(CoalescedReadsTest, FwmatchSplitWithNoLinesGivesEmptyBodies) {
  auto split = SplitFwmatchByPrefix("", {"u|a.", "u|b."});
  ASSERT_TRUE(split.ok());
  EXPECT_EQ(*split, (std::vector<std::string>{"", ""}));
}

TEST(CoalescedReadsTest, FwmatchSplitRefusesLinesOutsideThePrefixes) {
  EXPECT_EQ(SplitFwmatchByPrefix("u|a.v1c3,1\nu|b.v1c3,1\n", {"u|a."}).status().code(), StatusCode::kCorruption);
  // The end of a stream that failed after it started.
  EXPECT_EQ(SplitFwmatchByPrefix("u|a.v1c3,1\n!ERROR disk, gone\n", {"u|a."}).status().code(),
            StatusCode::kCorruption);
  EXPECT_EQ(SplitFwmatchByPrefix("u|a.v1c3\n", {"u|a."}).status().code(), StatusCode::kCorruption);
}

TEST(CoalescedReadsTest, MgetSplitMatchesWholeKeysOnly) {
  const ArchiveView view{.generation = 7, .last_day = 19000};
  const std::vector<std::string> keys = {"u|a", "u|ab", "u|abc"};
  auto split = SplitArchiveMget("u|ab,v1c3:2 v1c4:3\nu|abc,v1c5:1\n", keys, view, 1);
  ASSERT_TRUE(split.ok()) << split.status().ToString();
  ASSERT_EQ(split->size(), 3u);
  EXPECT_FALSE((*split)[0].found);  // "u|a" prefixes the others but has no line of its own
  EXPECT_TRUE((*split)[1].found);
  EXPECT_EQ((*split)[1].body, "v1c3:2 v1c4:3\n");
  EXPECT_EQ((*split)[2].body, "v1c5:1\n");
  for (const ArchiveReply& r : *split) {
    EXPECT_EQ(r.view, view);  // every key carries the headers of the answer
    EXPECT_EQ(r.replica, 1u);
  }
}

TEST(CoalescedReadsTest, MgetSplitRefusesUnaskedAndRepeatedKeys) {
  const ArchiveView view{.generation = 1, .last_day = std::nullopt};
  EXPECT_EQ(SplitArchiveMget("u|abc,v1c5:1\n", {"u|a", "u|ab"}, view, 0).status().code(), StatusCode::kCorruption);
  EXPECT_EQ(SplitArchiveMget("u|a,x\nu|a,y\n", {"u|a", "u|b"}, view, 0).status().code(), StatusCode::kCorruption);
}

TEST(CoalescedReadsTest, TargetsCarryEveryKeyEncoded) {
  EXPECT_EQ(MGetTarget({"u|a", "u|b c"}), "/mget?key=u%7Ca&key=u%7Cb%20c");
  EXPECT_EQ(MFwmatchTarget({"u|a."}), "/mfwmatch?key=u%7Ca.");
}

}  // namespace
}  // namespace clickatron::api
