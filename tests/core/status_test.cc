// Status and Result: an OK status holds nothing, an error's parts survive
// copies and moves, and a Result always holds a value or an error.
#include "clickatron/status.h"

#include <gtest/gtest.h>

#include <string>
#include <utility>

namespace clickatron {
namespace {

TEST(StatusTest, OkHasNoTextAndErrorsKeepTheirsThroughCopiesAndMoves) {
  const Status ok = Status::Ok();
  EXPECT_TRUE(ok.ok());
  EXPECT_EQ(ok.code(), StatusCode::kOk);
  EXPECT_EQ(ok.message(), "");
  EXPECT_EQ(ok.reason(), "");
  EXPECT_EQ(ok.ToString(), "OK");
  EXPECT_EQ(ok.HttpStatus(), 200);

  Status bad = Status::Unavailable("shard 3 is down", "SHARD_UNAVAILABLE");
  Status copy = bad;
  EXPECT_EQ(copy.code(), StatusCode::kUnavailable);
  EXPECT_EQ(copy.message(), "shard 3 is down");
  EXPECT_EQ(copy.reason(), "SHARD_UNAVAILABLE");
  copy = Status::Ok();
  EXPECT_TRUE(copy.ok());
  EXPECT_FALSE(bad.ok());  // a copy is its own
  Status moved = std::move(bad);
  EXPECT_EQ(moved.ToString(), "SHARD_UNAVAILABLE: shard 3 is down");
  EXPECT_EQ(moved.HttpStatus(), 503);
  const Status context = moved.WithContext("reading k");
  EXPECT_EQ(context.message(), "reading k: shard 3 is down");
  EXPECT_EQ(context.reason(), "SHARD_UNAVAILABLE");
  EXPECT_TRUE(Status::Ok().WithContext("reading k").ok());
  // An OK code given a message is OK all the same.
  EXPECT_TRUE(Status(StatusCode::kOk, "fine").ok());
}

TEST(StatusTest, AResultHoldsAValueOrAnError) {
  const Result<int> value = 7;
  ASSERT_TRUE(value.ok());
  EXPECT_EQ(*value, 7);
  const Result<int> error = Status::NotFound("no key");
  EXPECT_FALSE(error.ok());
  EXPECT_EQ(error.status().code(), StatusCode::kNotFound);
  // Made of an OK status, it would hold nothing to read: an error says so.
  const Result<std::string> empty = Status::Ok();
  EXPECT_FALSE(empty.ok());
  EXPECT_EQ(empty.status().code(), StatusCode::kInternal);
}

}  // namespace
}  // namespace clickatron
