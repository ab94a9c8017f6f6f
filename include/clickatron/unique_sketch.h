// UniqueSketch: the set of visitors of one key-hour, as a mergeable
// HyperLogLog sketch (docs/protocols.md, "Unique records").
//
// A visitor token is hashed to 64 bits (XXH3, HashVisitor). A sketch has two
// forms, and which one it is in is a function of the set of hashes alone, so
// any two ways of building one set (add order, merge order, a rebuild or a
// bulk load) give byte-identical records:
//   explicit  the sorted distinct hashes: exact (a 64-bit collision among a
//             few thousand visitors is a 1-in-10^12 event). Stored as varint
//             deltas, ~9 bytes a visitor for a few and ~8 for a thousand.
//   dense     2^14 six-bit registers (12,288 bytes): HyperLogLog with
//             precision 14, 1.04/sqrt(2^14) = 0.81% standard error in
//             theory, estimated with Ertl's
//             improved estimator (no empirical bias tables, unbiased from
//             small to huge cardinalities).
// The explicit form is kept while its encoding is no larger than the dense
// one (1,500 visitors fit, 1,550 do not), so a small key-hour costs tens of
// bytes and the largest one 12 KiB (16 KiB as text). A union is exact while the united set stays
// explicit, and is otherwise the register-wise max: the same sketch as if
// every token had been added to one.
//
// Encodings (both start with the form letter 'e' or 'd'):
//   binary  letter + payload: varint deltas (the first from 0), or the
//           registers packed 6 bits each, big-endian bit order. RocksDB values.
//   text    letter + base64 (standard alphabet, no padding) of the payload.
//           Record values: no ',', ':', ' ', '.', '|' or line break.
//
// Thread-safety: a value type; const methods may be called concurrently.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "clickatron/status.h"

namespace clickatron {

inline constexpr int kSketchPrecision = 14;
inline constexpr size_t kSketchRegisters = size_t{1} << kSketchPrecision;
inline constexpr size_t kDenseSketchBytes = kSketchRegisters * 6 / 8;  // 12,288
// The largest register value: 64 - precision bits left, all zero, plus one.
inline constexpr uint8_t kMaxSketchRegister = 64 - kSketchPrecision + 1;

// XXH3_64bits(token), seed 0: the identity of a visitor in every sketch.
uint64_t HashVisitor(std::string_view token);

class UniqueSketch {
 public:
  UniqueSketch() = default;

  void Add(uint64_t hash);
  void Merge(const UniqueSketch& other);

  // The number of distinct visitors: exact in the explicit form.
  uint64_t Estimate() const;
  // Estimate() of the union of `parts` (none null), without building it
  // sketch by sketch: the same figure as merging them all into one, for a
  // reader that only counts (a unit's hours and days at query time).
  static uint64_t EstimateUnion(const std::vector<const UniqueSketch*>& parts);
  bool exact() const { return registers_.empty(); }
  bool empty() const { return registers_.empty() && hashes_.empty(); }

  void AppendBinary(std::string* out) const;
  std::string ToBinary() const;
  void AppendText(std::string* out) const;
  std::string ToText() const;
  // The text of a binary sketch without decoding it (a store's value sent
  // as a line): the form letter and the payload's size are checked, the
  // rest is left to whoever decodes the text (FromText validates fully).
  static Status AppendTextOfBinary(std::string_view binary, std::string* out);
  // The same check alone: the form letter and the payload's size.
  static Status CheckBinaryForm(std::string_view binary);
  // Validate fully (form letter, encoding, strictly ascending hashes, register
  // range, exact payload length): CORRUPTION-free input or INVALID_ARGUMENT.
  static Result<UniqueSketch> FromBinary(std::string_view bytes);
  static Result<UniqueSketch> FromText(std::string_view text);

  // Heap held, for memory budgets.
  size_t MemoryBytes() const { return hashes_.capacity() * sizeof(uint64_t) + registers_.capacity(); }

  friend bool operator==(const UniqueSketch& a, const UniqueSketch& b) {
    return a.hashes_ == b.hashes_ && a.registers_ == b.registers_;
  }

 private:
  void AddToRegisters(uint64_t hash);
  static void AddHashToRegisters(uint64_t hash, uint8_t* registers);
  static uint64_t EstimateRegisters(const std::vector<uint8_t>& registers);
  void Densify();
  void SetHashes(std::vector<uint64_t> hashes);  // sorted, distinct; densifies if large
  void SetHashes(std::vector<uint64_t> hashes, size_t explicit_bytes);  // the same, its payload size known
  void AppendPayload(std::string* out) const;

  std::vector<uint64_t> hashes_;   // explicit form: sorted, distinct
  std::vector<uint8_t> registers_; // dense form: kSketchRegisters values (empty: explicit)
  size_t explicit_bytes_ = 0;      // the varint payload size of hashes_
};

// Unions the text forms of two sketches into one text (both validated).
Result<std::string> MergeSketchTexts(std::string_view a, std::string_view b);

}  // namespace clickatron
