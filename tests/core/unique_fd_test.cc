// UniqueFd: owns one descriptor, closes it exactly once (never after a move
// or a Release), and Close() reports what close() said.
#include "clickatron/unique_fd.h"

#include <fcntl.h>
#include <gtest/gtest.h>
#include <unistd.h>

#include <cerrno>

namespace clickatron {
namespace {

bool IsOpen(int fd) { return ::fcntl(fd, F_GETFD) != -1; }

// Both ends of a fresh pipe, each owned by the test until handed over.
struct Pipe {
  Pipe() { EXPECT_EQ(::pipe2(fds, O_CLOEXEC), 0); }
  int read_end() const { return fds[0]; }
  int write_end() const { return fds[1]; }
  int fds[2] = {-1, -1};
};

TEST(UniqueFdTest, DestructorClosesTheDescriptor) {
  Pipe p;
  ::close(p.write_end());
  { UniqueFd fd(p.read_end()); EXPECT_TRUE(IsOpen(p.read_end())); }
  EXPECT_FALSE(IsOpen(p.read_end()));
}

TEST(UniqueFdTest, DefaultAndNegativeOwnNothing) {
  UniqueFd none;
  EXPECT_FALSE(none.valid());
  EXPECT_EQ(none.get(), -1);
  UniqueFd negative(-7);
  EXPECT_FALSE(negative.valid());
  EXPECT_EQ(negative.get(), -1);
  EXPECT_TRUE(negative.Close().ok());
}

TEST(UniqueFdTest, MovedFromObjectDoesNotCloseTheDescriptor) {
  Pipe p;
  ::close(p.write_end());
  UniqueFd kept;
  {
    UniqueFd first(p.read_end());
    UniqueFd second(std::move(first));  // construction
    EXPECT_FALSE(first.valid());
    kept = std::move(second);           // assignment
    EXPECT_FALSE(second.valid());
  }  // both moved-from objects end here
  EXPECT_EQ(kept.get(), p.read_end());
  EXPECT_TRUE(IsOpen(p.read_end()));
}

TEST(UniqueFdTest, MoveAssignmentClosesTheDescriptorItReplaces) {
  Pipe p;
  UniqueFd a(p.read_end());
  UniqueFd b(p.write_end());
  a = std::move(b);
  EXPECT_FALSE(IsOpen(p.read_end()));
  EXPECT_TRUE(IsOpen(p.write_end()));
  EXPECT_EQ(a.get(), p.write_end());
}

TEST(UniqueFdTest, ReleaseHandsTheDescriptorBackOpen) {
  Pipe p;
  ::close(p.write_end());
  int released = -1;
  {
    UniqueFd fd(p.read_end());
    released = fd.Release();
    EXPECT_FALSE(fd.valid());
  }
  EXPECT_EQ(released, p.read_end());
  EXPECT_TRUE(IsOpen(released));
  ::close(released);
}

TEST(UniqueFdTest, ResetClosesTheOldDescriptorAndOwnsTheNew) {
  Pipe p;
  UniqueFd fd(p.read_end());
  fd.Reset(p.write_end());
  EXPECT_FALSE(IsOpen(p.read_end()));
  EXPECT_EQ(fd.get(), p.write_end());
  fd.Reset();
  EXPECT_FALSE(IsOpen(p.write_end()));
  EXPECT_FALSE(fd.valid());
}

TEST(UniqueFdTest, CloseClosesOnceAndASecondCloseIsOk) {
  Pipe p;
  ::close(p.write_end());
  UniqueFd fd(p.read_end());
  Status first = fd.Close();
  EXPECT_TRUE(first.ok()) << first.ToString();
  EXPECT_FALSE(fd.valid());
  EXPECT_FALSE(IsOpen(p.read_end()));
  EXPECT_TRUE(fd.Close().ok());
}

TEST(UniqueFdTest, CloseReportsTheErrorCloseReturned) {
  // The only close() failure a test can provoke for sure: EBADF, by closing
  // the descriptor behind the owner's back.
  Pipe p;
  ::close(p.write_end());
  UniqueFd fd(p.read_end());
  ::close(p.read_end());
  Status st = fd.Close();
  EXPECT_EQ(st.code(), StatusCode::kIoError);
  EXPECT_NE(st.message().find("Bad file descriptor"), std::string::npos) << st.message();
  EXPECT_FALSE(fd.valid());  // given up even though close() failed: never retried
}

}  // namespace
}  // namespace clickatron
