// Framed append-only log files: the API's oplog segments and late-data files.
//
// A file is a sequence of frames, little-endian:
//   magic   u32  0x4C4F4B43 ("CKOL")
//   length  u32  payload bytes
//   crc32   u32  zlib crc32 of the payload
//   payload length bytes
// A crash can leave a torn last frame: the reader reports it as a truncated
// tail (and where the good data ends) so the writer can cut it off before
// appending. A bad frame followed by more data is CORRUPTION, never skipped.
// Files ending in ".gz" (closed, compressed segments) are read through
// GzipReader (gzip_file.h): one truncated or damaged is CORRUPTION, never a
// torn tail, since it was written whole and renamed into place.
//
// A failed append (a write error, whatever part of the frame went out first)
// is cut back off the file with ftruncate to the size before it, so the next
// append starts on a frame boundary and the writer stays usable; the failing
// Append returns the write's IO_ERROR. The cut is not fsynced by itself: the
// next Sync persists it with the frames after it. Only when the cut itself
// fails is the writer poisoned: that Append still returns the write's error,
// and every later Append returns one IO_ERROR ("cannot cut a failed
// append"), so nothing is written after bytes a reader would call
// corruption. Sync and Close still work on a poisoned writer. An oversized
// payload is refused (INVALID_ARGUMENT) before anything is written and
// poisons nothing; after Close, Append returns FAILED_PRECONDITION.
//
// Thread-safety: a writer or reader belongs to one thread at a time.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>

#include "clickatron/status.h"

namespace clickatron {

inline constexpr uint32_t kFrameMagic = 0x4C4F4B43;
inline constexpr size_t kFrameHeaderBytes = 12;
inline constexpr uint32_t kMaxFramePayload = 256u << 20;

class FramedLogWriter {
 public:
  // Opens for append (creating it). If the file ends in a torn frame, the tail
  // is cut first (and reported in the log).
  static Result<std::unique_ptr<FramedLogWriter>> Open(const std::string& path);
  virtual ~FramedLogWriter() = default;
  virtual Status Append(std::string_view payload) = 0;  // buffered write, no fsync
  // Cuts the file back to `size` bytes (at most size()): frames appended
  // after that point are undone. If the cut fails, no more appends are taken.
  virtual Status TruncateTo(uint64_t size) = 0;
  virtual Status Sync() = 0;                             // fdatasync
  virtual Status Close() = 0;
  virtual uint64_t size() const = 0;                     // bytes in the file
  virtual const std::string& path() const = 0;
};

class FramedLogReader {
 public:
  static Result<std::unique_ptr<FramedLogReader>> Open(const std::string& path);
  virtual ~FramedLogReader() = default;
  // The next payload; nullopt at the end (clean, or a torn tail: see below).
  virtual Result<std::optional<std::string>> Next() = 0;
  // After Next() returned nullopt: true if the file ended inside a frame.
  virtual bool truncated_tail() const = 0;
  // Byte offset just past the last whole frame read.
  virtual uint64_t good_bytes() const = 0;
};

}  // namespace clickatron
