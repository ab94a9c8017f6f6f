// FlowQueue: requests that wait for realtime shards go on first come, first
// served per shard. A new request waits behind older ones for its shards even
// when those shards have just dropped below the mark; requests for other
// shards are not held back; a request still waiting at its deadline expires;
// a stop refuses every waiting request.
#include "ingest/flow_queue.h"

#include <gtest/gtest.h>

#include <set>
#include <string>
#include <vector>

// A namespace of this file's own: its names beside those of the other files
// compiled with it in one unity file (tests/CMakeLists.txt).
namespace clickatron::api::flow_queue_test {
namespace {

using Queue = FlowQueue<std::string>;
using Clock = Queue::Clock;

// Which shards are behind, as the test sets them.
struct Shards {
  std::set<uint32_t> behind;
  Queue::Behind Fn() {
    return [this](uint32_t s) { return behind.count(s) > 0; };
  }
};

// What a Resume did, in order.
struct Outcome {
  std::vector<std::string> admitted, expired;
};

Outcome Resume(Queue& q, Shards& shards, Clock::time_point now,
               const std::function<void(const std::string&)>& on_admit = nullptr) {
  Outcome out;
  q.Resume(
      now, shards.Fn(),
      [&](std::string& r, std::vector<uint32_t>&, Clock::time_point) {
        out.admitted.push_back(r);
        if (on_admit) on_admit(r);
      },
      [&](std::string& r) { out.expired.push_back(r); });
  return out;
}

const Clock::time_point kNow = Clock::now();
const Clock::time_point kLater = kNow + std::chrono::seconds(5);

TEST(FlowQueueTest, NewRequestWaitsBehindOlderOnesForItsShard) {
  Shards shards{{0}};
  Queue q(2);
  ASSERT_TRUE(q.MustWait({0}, shards.Fn()));
  q.Park("old", {0}, shards.Fn(), kLater);
  // Shard 0 drops below the mark between two checks: a new request for it
  // still waits (the older one goes first), one for shard 1 does not.
  shards.behind.clear();
  EXPECT_TRUE(q.MustWait({0}, shards.Fn()));
  EXPECT_TRUE(q.MustWait({0, 1}, shards.Fn()));
  EXPECT_FALSE(q.MustWait({1}, shards.Fn()));
  q.Park("new", {0}, shards.Fn(), kLater);
  EXPECT_EQ(q.size(), 2u);

  const Outcome out = Resume(q, shards, kNow);
  EXPECT_EQ(out.admitted, (std::vector<std::string>{"old", "new"}));
  EXPECT_TRUE(out.expired.empty());
  EXPECT_TRUE(q.empty());
  EXPECT_FALSE(q.MustWait({0}, shards.Fn())) << "nothing waits any more";
}

TEST(FlowQueueTest, AdmittingTheOldestCanHoldBackTheNextOnes) {
  Shards shards{{0}};
  Queue q(1);
  q.Park("first", {0}, shards.Fn(), kLater);
  q.Park("second", {0}, shards.Fn(), kLater);
  q.Park("third", {0}, shards.Fn(), kLater);
  shards.behind.clear();
  // Admitting "first" fills shard 0 to the mark again: the others keep
  // waiting, in their order.
  Outcome out = Resume(q, shards, kNow, [&](const std::string&) { shards.behind.insert(0); });
  EXPECT_EQ(out.admitted, (std::vector<std::string>{"first"}));
  EXPECT_EQ(q.size(), 2u);
  shards.behind.clear();
  out = Resume(q, shards, kNow);
  EXPECT_EQ(out.admitted, (std::vector<std::string>{"second", "third"}));
}

TEST(FlowQueueTest, RequestWaitingForOneShardDoesNotHoldBackAnother) {
  Shards shards{{0}};
  Queue q(2);
  q.Park("to both", {0, 1}, shards.Fn(), kLater);  // waits for shard 0 only
  EXPECT_FALSE(q.MustWait({1}, shards.Fn()));
  EXPECT_TRUE(q.MustWait({0}, shards.Fn()));
  // A request for shard 1 that had to wait (shard 1 behind then) goes on
  // when shard 1 is below the mark, though the older one still waits.
  shards.behind.insert(1);
  q.Park("to 1", {1}, shards.Fn(), kLater);
  shards.behind.erase(1);
  const Outcome out = Resume(q, shards, kNow);
  EXPECT_EQ(out.admitted, (std::vector<std::string>{"to 1"}));
  EXPECT_EQ(q.size(), 1u);
  EXPECT_TRUE(q.MustWait({0}, shards.Fn()));
}

TEST(FlowQueueTest, RequestStillWaitingAtItsDeadlineExpires) {
  Shards shards{{0}};
  Queue q(2);
  q.Park("soon", {0}, shards.Fn(), kNow + std::chrono::milliseconds(10));
  q.Park("late", {0}, shards.Fn(), kLater);
  Outcome out = Resume(q, shards, kNow);
  EXPECT_TRUE(out.admitted.empty());
  EXPECT_TRUE(out.expired.empty());
  out = Resume(q, shards, kNow + std::chrono::milliseconds(20));
  EXPECT_EQ(out.expired, (std::vector<std::string>{"soon"}));
  EXPECT_EQ(q.size(), 1u);
  // Past its deadline but free to go: admitted, not refused.
  shards.behind.clear();
  out = Resume(q, shards, kLater + std::chrono::seconds(1));
  EXPECT_EQ(out.admitted, (std::vector<std::string>{"late"}));
  EXPECT_TRUE(out.expired.empty());
}

TEST(FlowQueueTest, RefuseAllTakesEveryRequestOutOldestFirst) {
  Shards shards{{0, 1}};
  Queue q(2);
  q.Park("first", {0}, shards.Fn(), kLater);
  q.Park("second", {1}, shards.Fn(), kLater);
  q.Park("third", {0, 1}, shards.Fn(), kLater);
  std::vector<std::string> refused;
  q.RefuseAll([&](std::string& r) { refused.push_back(r); });
  EXPECT_EQ(refused, (std::vector<std::string>{"first", "second", "third"}));
  EXPECT_TRUE(q.empty());
  // Nobody waits for the shards any more: only their own state counts.
  shards.behind.clear();
  EXPECT_FALSE(q.MustWait({0, 1}, shards.Fn()));
}

}  // namespace
}  // namespace clickatron::api::flow_queue_test
