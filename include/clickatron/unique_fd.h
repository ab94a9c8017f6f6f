// UniqueFd: the one owner of a file descriptor, closing it exactly once.
//
// The destructor closes silently: right for descriptors that were only read,
// and for error paths where a first failure is already being reported. A file
// written for durability calls Close() instead and checks the Status: on NFS
// and some other file systems a write error can first show at close.
//
// EINTR is handled the Linux way: close() is never retried. Linux frees the
// descriptor before close() can fail, even with EINTR, so a retry would close
// whatever descriptor another thread was given in between.
//
// Thread-safety: a UniqueFd belongs to one thread at a time, like the
// descriptor it owns.
#pragma once

#include "clickatron/status.h"

namespace clickatron {

class UniqueFd {
 public:
  UniqueFd() = default;
  // Takes ownership of `fd` (-1, or any negative value, owns nothing).
  explicit UniqueFd(int fd) noexcept : fd_(fd < 0 ? -1 : fd) {}
  ~UniqueFd() { Reset(); }

  UniqueFd(UniqueFd&& other) noexcept : fd_(other.Release()) {}
  UniqueFd& operator=(UniqueFd&& other) noexcept {
    if (this != &other) Reset(other.Release());
    return *this;
  }
  UniqueFd(const UniqueFd&) = delete;
  UniqueFd& operator=(const UniqueFd&) = delete;

  int get() const { return fd_; }
  bool valid() const { return fd_ >= 0; }

  // Gives the descriptor up without closing it; this object owns nothing after.
  [[nodiscard]] int Release() {
    const int fd = fd_;
    fd_ = -1;
    return fd;
  }
  // Closes the descriptor held (ignoring errors), then owns `fd`.
  void Reset(int fd = -1);
  // Closes now and reports what close() said (IO_ERROR with strerror). The
  // descriptor is gone afterwards whatever the outcome; closing an empty
  // UniqueFd is OK.
  Status Close();

 private:
  int fd_ = -1;
};

}  // namespace clickatron
