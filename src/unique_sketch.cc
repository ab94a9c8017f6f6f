// HyperLogLog sketches of visitor sets (see unique_sketch.h).
#include "clickatron/unique_sketch.h"

#include <xxhash.h>

#include <algorithm>
#include <array>
#include <cmath>
#include <iterator>

#include <fmt/format.h>

namespace clickatron {
namespace {

constexpr char kExplicitForm = 'e';
constexpr char kDenseForm = 'd';
constexpr int kHashRestBits = 64 - kSketchPrecision;  // bits left for the register value

// 1 byte per 7 significant bits (0 takes one byte).
size_t VarintBytes(uint64_t v) { return (63 - static_cast<size_t>(__builtin_clzll(v | 1)) + 7) / 7; }

void AppendVarint(uint64_t v, std::string* out) {
  while (v >= 0x80) {
    out->push_back(static_cast<char>((v & 0x7f) | 0x80));
    v >>= 7;
  }
  out->push_back(static_cast<char>(v));
}

size_t ExplicitBytes(const std::vector<uint64_t>& hashes) {
  size_t bytes = 0;
  uint64_t previous = 0;
  for (uint64_t h : hashes) {
    bytes += VarintBytes(h - previous);
    previous = h;
  }
  return bytes;
}

// Sorted, distinct lists of hashes (the explicit parts of a union) united
// pairwise, run by run: set_union drops a hash both hold, so log2(runs)
// linear passes give the sorted, distinct union without sorting every hash
// again. Its two buffers are kept for the next union.
class SortedRuns {
 public:
  // Room for `hashes` hashes in all, no runs yet.
  void Reset(size_t hashes) {
    from_.resize(hashes);
    to_.resize(hashes);
    from_ends_.clear();
    filled_ = 0;
  }
  void Append(const std::vector<uint64_t>& run) {
    if (run.empty()) return;
    std::copy(run.begin(), run.end(), from_.begin() + static_cast<ptrdiff_t>(filled_));
    filled_ += run.size();
    from_ends_.push_back(filled_);
  }
  // The union of the runs appended (valid until Reset).
  const std::vector<uint64_t>& Unite() {
    while (from_ends_.size() > 1) {
      to_ends_.clear();
      uint64_t* out = to_.data();
      const uint64_t* begin = from_.data();
      for (size_t r = 0; r < from_ends_.size(); r += 2) {
        const uint64_t* middle = from_.data() + from_ends_[r];
        const uint64_t* end = r + 1 < from_ends_.size() ? from_.data() + from_ends_[r + 1] : middle;
        out = std::set_union(begin, middle, middle, end, out);
        to_ends_.push_back(static_cast<size_t>(out - to_.data()));
        begin = end;
      }
      from_.swap(to_);
      from_ends_.swap(to_ends_);
    }
    from_.resize(from_ends_.empty() ? 0 : from_ends_.front());
    return from_;
  }

 private:
  std::vector<uint64_t> from_, to_;
  std::vector<size_t> from_ends_, to_ends_;  // where each run ends in from_ / to_
  size_t filled_ = 0;
};

// Standard base64 without padding: record values need no '=' and this keeps
// one spelling per payload (trailing bits must be zero on decode).
constexpr std::string_view kBase64 = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";

constexpr std::array<int8_t, 256> MakeDecodeTable() {
  std::array<int8_t, 256> table{};
  for (auto& v : table) v = -1;
  for (size_t i = 0; i < kBase64.size(); ++i) table[static_cast<unsigned char>(kBase64[i])] = static_cast<int8_t>(i);
  return table;
}
constexpr std::array<int8_t, 256> kBase64Decode = MakeDecodeTable();

void AppendBase64(std::string_view bytes, std::string* out) {
  const size_t start = out->size();
  out->resize(start + (bytes.size() * 4 + 2) / 3);  // no padding
  char* to = out->data() + start;
  size_t i = 0;
  const auto byte = [&](size_t k) { return static_cast<uint32_t>(static_cast<unsigned char>(bytes[k])); };
  for (; i + 3 <= bytes.size(); i += 3) {
    const uint32_t v = byte(i) << 16 | byte(i + 1) << 8 | byte(i + 2);
    *to++ = kBase64[v >> 18];
    *to++ = kBase64[(v >> 12) & 63];
    *to++ = kBase64[(v >> 6) & 63];
    *to++ = kBase64[v & 63];
  }
  const size_t rest = bytes.size() - i;
  if (rest == 1) {
    const uint32_t v = byte(i) << 16;
    *to++ = kBase64[v >> 18];
    *to++ = kBase64[(v >> 12) & 63];
  } else if (rest == 2) {
    const uint32_t v = byte(i) << 16 | byte(i + 1) << 8;
    *to++ = kBase64[v >> 18];
    *to++ = kBase64[(v >> 12) & 63];
    *to++ = kBase64[(v >> 6) & 63];
  }
}

// Appends the bytes `text` encodes to *out.
Status AppendDecodedBase64(std::string_view text, std::string* out) {
  if (text.size() % 4 == 1) return Status::InvalidArgument("sketch text has a base64 length that cannot be");
  // Four characters make three bytes: decoded a group at a time into the
  // grown buffer (this runs for every sketch a query or a merge reads).
  const size_t start = out->size();
  out->resize(start + text.size() / 4 * 3 + (text.size() % 4 == 0 ? 0 : text.size() % 4 - 1));
  char* to = out->data() + start;
  const auto* from = reinterpret_cast<const unsigned char*>(text.data());
  const auto bad = [&](size_t i) {
    const char c = text[i];
    return Status::InvalidArgument(fmt::format("sketch text holds '{}', not base64", c == '\n' ? '?' : c));
  };
  size_t i = 0;
  for (; i + 4 <= text.size(); i += 4) {
    const int8_t a = kBase64Decode[from[i]], b = kBase64Decode[from[i + 1]];
    const int8_t c = kBase64Decode[from[i + 2]], d = kBase64Decode[from[i + 3]];
    if ((a | b | c | d) < 0) {
      for (size_t k = i;; ++k) {
        if (kBase64Decode[from[k]] < 0) return bad(k);
      }
    }
    const uint32_t v = static_cast<uint32_t>(a) << 18 | static_cast<uint32_t>(b) << 12 |
                       static_cast<uint32_t>(c) << 6 | static_cast<uint32_t>(d);
    *to++ = static_cast<char>(v >> 16);
    *to++ = static_cast<char>((v >> 8) & 0xff);
    *to++ = static_cast<char>(v & 0xff);
  }
  // The last 2 or 3 characters: 1 or 2 bytes, the bits left over zero.
  uint32_t acc = 0;
  int bits = 0;
  for (; i < text.size(); ++i) {
    const int8_t v = kBase64Decode[from[i]];
    if (v < 0) return bad(i);
    acc = (acc << 6) | static_cast<uint32_t>(v);
    bits += 6;
    if (bits >= 8) {
      bits -= 8;
      *to++ = static_cast<char>((acc >> bits) & 0xff);
    }
  }
  if ((acc & ((1u << bits) - 1)) != 0) return Status::InvalidArgument("sketch text has stray bits at its end");
  return Status::Ok();
}

// Ertl, "New cardinality estimation algorithms for HyperLogLog sketches"
// (2017), section 4: sigma and tau are the series that make the estimate
// unbiased for registers at 0 and at the maximum.
double Sigma(double x) {
  if (x == 1.0) return INFINITY;
  double y = 1.0;
  double z = x;
  double previous = 0.0;
  do {
    x *= x;
    previous = z;
    z += x * y;
    y += y;
  } while (z != previous);
  return z;
}

double Tau(double x) {
  if (x == 0.0 || x == 1.0) return 0.0;
  double y = 1.0;
  double z = 1.0 - x;
  double previous = 0.0;
  do {
    x = std::sqrt(x);
    previous = z;
    y *= 0.5;
    z -= (1.0 - x) * (1.0 - x) * y;
  } while (z != previous);
  return z / 3.0;
}

// The checks every binary sketch passes before its payload is read: a form
// letter, and for the dense form the exact payload size.
Status CheckFormAndSize(std::string_view binary) {
  if (binary.empty()) return Status::InvalidArgument("sketch is empty (no form letter)");
  const size_t payload = binary.size() - 1;
  if (binary[0] == kDenseForm) {
    if (payload != kDenseSketchBytes) {
      return Status::InvalidArgument(fmt::format("dense sketch holds {} bytes, not {}", payload, kDenseSketchBytes));
    }
    return Status::Ok();
  }
  if (binary[0] != kExplicitForm) {
    return Status::InvalidArgument(
        fmt::format("sketch form '{}' is neither 'e' (explicit) nor 'd' (dense)", static_cast<char>(binary[0])));
  }
  return Status::Ok();
}

}  // namespace

uint64_t HashVisitor(std::string_view token) { return XXH3_64bits(token.data(), token.size()); }

void UniqueSketch::AddHashToRegisters(uint64_t hash, uint8_t* registers) {
  const size_t index = static_cast<size_t>(hash >> kHashRestBits);
  const uint64_t rest = hash << kSketchPrecision;  // the other bits, at the top
  const uint8_t value =
      rest == 0 ? kMaxSketchRegister : static_cast<uint8_t>(__builtin_clzll(rest) + 1);
  if (registers[index] < value) registers[index] = value;
}

void UniqueSketch::AddToRegisters(uint64_t hash) { AddHashToRegisters(hash, registers_.data()); }

void UniqueSketch::Densify() {
  registers_.assign(kSketchRegisters, 0);
  for (uint64_t h : hashes_) AddToRegisters(h);
  hashes_.clear();
  hashes_.shrink_to_fit();
  explicit_bytes_ = 0;
}

void UniqueSketch::SetHashes(std::vector<uint64_t> hashes) {
  const size_t bytes = ExplicitBytes(hashes);
  SetHashes(std::move(hashes), bytes);
}

void UniqueSketch::SetHashes(std::vector<uint64_t> hashes, size_t explicit_bytes) {
  hashes_ = std::move(hashes);
  explicit_bytes_ = explicit_bytes;
  if (explicit_bytes_ > kDenseSketchBytes) Densify();
}

void UniqueSketch::Add(uint64_t hash) {
  if (!registers_.empty()) {
    AddToRegisters(hash);
    return;
  }
  auto it = std::lower_bound(hashes_.begin(), hashes_.end(), hash);
  if (it != hashes_.end() && *it == hash) return;
  // The payload changes by the deltas around the new hash only.
  const uint64_t previous = it == hashes_.begin() ? 0 : *(it - 1);
  explicit_bytes_ += VarintBytes(hash - previous);
  if (it != hashes_.end()) explicit_bytes_ += VarintBytes(*it - hash) - VarintBytes(*it - previous);
  hashes_.insert(it, hash);
  if (explicit_bytes_ > kDenseSketchBytes) Densify();
}

void UniqueSketch::Merge(const UniqueSketch& other) {
  if (other.empty()) return;
  if (registers_.empty() && other.registers_.empty()) {
    if (hashes_.empty()) {
      *this = other;
      return;
    }
    // A few visitors into many (a realtime shard uniting each window's into
    // an hour's): inserted in place, no new list and no recount of the
    // whole payload. Each insert moves the list's tail, so only for a few:
    // beyond that one pass of set_union moves less.
    constexpr size_t kInPlace = 4;
    if (other.hashes_.size() <= kInPlace && other.hashes_.size() < hashes_.size()) {
      for (uint64_t h : other.hashes_) Add(h);
      return;
    }
    // One pass: the union and its payload size together.
    std::vector<uint64_t> united(hashes_.size() + other.hashes_.size());
    auto a = hashes_.cbegin(), b = other.hashes_.cbegin();
    const auto a_end = hashes_.cend(), b_end = other.hashes_.cend();
    size_t n = 0, bytes = 0;
    uint64_t previous = 0;
    const auto put = [&](uint64_t h) {
      bytes += VarintBytes(h - previous);
      previous = h;
      united[n++] = h;
    };
    while (a != a_end && b != b_end) {
      if (*a < *b) {
        put(*a++);
      } else if (*b < *a) {
        put(*b++);
      } else {
        put(*a++);
        ++b;
      }
    }
    for (; a != a_end; ++a) put(*a);
    for (; b != b_end; ++b) put(*b);
    united.resize(n);
    SetHashes(std::move(united), bytes);
    return;
  }
  if (registers_.empty()) Densify();
  if (other.registers_.empty()) {
    for (uint64_t h : other.hashes_) AddToRegisters(h);
    return;
  }
  for (size_t i = 0; i < kSketchRegisters; ++i) registers_[i] = std::max(registers_[i], other.registers_[i]);
}

uint64_t UniqueSketch::Estimate() const {
  if (registers_.empty()) return hashes_.size();
  return EstimateRegisters(registers_);
}

uint64_t UniqueSketch::EstimateUnion(const std::vector<const UniqueSketch*>& parts) {
  if (parts.empty()) return 0;
  if (parts.size() == 1) return parts.front()->Estimate();
  // Which form the union takes depends on its set alone, and a register
  // keeps the largest value any hash gives it: so every hash into one
  // list (the parts' sorted lists united, SortedRuns) or one register
  // array, in any order, gives what merging the parts one by one gives,
  // in buffers kept per thread.
  size_t hashes = 0;
  bool dense = false;
  for (const UniqueSketch* p : parts) {
    hashes += p->hashes_.size();
    dense = dense || !p->registers_.empty();
  }
  if (!dense) {
    thread_local SortedRuns runs;
    runs.Reset(hashes);
    for (const UniqueSketch* p : parts) runs.Append(p->hashes_);
    const std::vector<uint64_t>& all = runs.Unite();
    if (ExplicitBytes(all) <= kDenseSketchBytes) return all.size();
  }
  thread_local std::vector<uint8_t> registers;
  registers.assign(kSketchRegisters, 0);
  for (const UniqueSketch* p : parts) {
    if (p->registers_.empty()) continue;
    for (size_t i = 0; i < kSketchRegisters; ++i) registers[i] = std::max(registers[i], p->registers_[i]);
  }
  for (const UniqueSketch* p : parts) {
    for (uint64_t h : p->hashes_) AddHashToRegisters(h, registers.data());
  }
  return EstimateRegisters(registers);
}

uint64_t UniqueSketch::EstimateRegisters(const std::vector<uint8_t>& registers) {
  std::array<uint32_t, kMaxSketchRegister + 1> histogram{};
  for (uint8_t r : registers) ++histogram[r];
  const double m = static_cast<double>(kSketchRegisters);
  double z = m * Tau((m - histogram[kMaxSketchRegister]) / m);
  for (int k = kMaxSketchRegister - 1; k >= 1; --k) z = 0.5 * (z + histogram[k]);
  z += m * Sigma(histogram[0] / m);
  constexpr double kAlphaInfinity = 0.721347520444481703680;  // 1 / (2 ln 2)
  return static_cast<uint64_t>(std::llround(kAlphaInfinity * m * m / z));
}

void UniqueSketch::AppendPayload(std::string* out) const {
  if (registers_.empty()) {
    uint64_t previous = 0;
    for (uint64_t h : hashes_) {
      AppendVarint(h - previous, out);
      previous = h;
    }
    return;
  }
  // Four registers in three bytes, the first register in the high bits.
  for (size_t i = 0; i < kSketchRegisters; i += 4) {
    const uint32_t v = uint32_t{registers_[i]} << 18 | uint32_t{registers_[i + 1]} << 12 |
                       uint32_t{registers_[i + 2]} << 6 | registers_[i + 3];
    out->push_back(static_cast<char>(v >> 16));
    out->push_back(static_cast<char>((v >> 8) & 0xff));
    out->push_back(static_cast<char>(v & 0xff));
  }
}

void UniqueSketch::AppendBinary(std::string* out) const {
  out->push_back(registers_.empty() ? kExplicitForm : kDenseForm);
  AppendPayload(out);
}

std::string UniqueSketch::ToBinary() const {
  std::string out;
  AppendBinary(&out);
  return out;
}

void UniqueSketch::AppendText(std::string* out) const {
  // Encoded from a per-thread buffer: a dense payload is 12 KiB, and this
  // runs per record formatted (exports, rebuild lines, the combiner).
  thread_local std::string payload;
  payload.clear();
  AppendPayload(&payload);
  out->push_back(registers_.empty() ? kExplicitForm : kDenseForm);
  AppendBase64(payload, out);
}

Status UniqueSketch::AppendTextOfBinary(std::string_view binary, std::string* out) {
  CLICKATRON_RETURN_IF_ERROR(CheckFormAndSize(binary));
  out->push_back(binary[0]);
  AppendBase64(binary.substr(1), out);
  return Status::Ok();
}

Status UniqueSketch::CheckBinaryForm(std::string_view binary) { return CheckFormAndSize(binary); }

std::string UniqueSketch::ToText() const {
  std::string out;
  AppendText(&out);
  return out;
}

Result<UniqueSketch> UniqueSketch::FromBinary(std::string_view bytes) {
  CLICKATRON_RETURN_IF_ERROR(CheckFormAndSize(bytes));
  const std::string_view payload = bytes.substr(1);
  UniqueSketch out;
  if (bytes[0] == kExplicitForm) {
    std::vector<uint64_t> hashes;
    hashes.reserve(payload.size() / 8 + 1);  // most deltas of a few hashes take 8-9 bytes
    uint64_t previous = 0;
    size_t i = 0;
    while (i < payload.size()) {
      uint64_t delta = 0;
      int shift = 0;
      while (true) {
        if (i == payload.size()) return Status::InvalidArgument("sketch ends inside a varint");
        const auto b = static_cast<unsigned char>(payload[i++]);
        if (shift == 63 && (b & 0x7e) != 0) return Status::InvalidArgument("sketch varint passes 64 bits");
        delta |= static_cast<uint64_t>(b & 0x7f) << shift;
        if ((b & 0x80) == 0) {
          // One spelling per set: a trailing zero byte would make the
          // payload longer than the encoder writes it.
          if (b == 0 && shift > 0) return Status::InvalidArgument("sketch varint has a redundant zero byte");
          break;
        }
        shift += 7;
        if (shift > 63) return Status::InvalidArgument("sketch varint passes 64 bits");
      }
      if (!hashes.empty() && delta == 0) return Status::InvalidArgument("sketch repeats a hash");
      uint64_t hash = 0;
      if (__builtin_add_overflow(previous, delta, &hash)) {
        return Status::InvalidArgument("sketch hashes pass 2^64 (not ascending)");
      }
      hashes.push_back(hash);
      previous = hash;
    }
    // Minimal varints: the payload's size is the list's encoded size. An
    // over-long explicit list becomes dense: one form per set.
    out.SetHashes(std::move(hashes), payload.size());
    return out;
  }
  // The dense form, its size checked above.
  out.registers_.resize(kSketchRegisters);
  for (size_t i = 0, r = 0; i < payload.size(); i += 3, r += 4) {
    const uint32_t v = uint32_t{static_cast<unsigned char>(payload[i])} << 16 |
                       uint32_t{static_cast<unsigned char>(payload[i + 1])} << 8 |
                       static_cast<unsigned char>(payload[i + 2]);
    for (int k = 0; k < 4; ++k) {
      const auto value = static_cast<uint8_t>((v >> (18 - 6 * k)) & 63);
      if (value > kMaxSketchRegister) {
        return Status::InvalidArgument(
            fmt::format("dense sketch register {} is {}, over {}", r + k, value, kMaxSketchRegister));
      }
      out.registers_[r + k] = value;
    }
  }
  return out;
}

Result<UniqueSketch> UniqueSketch::FromText(std::string_view text) {
  if (text.empty()) return Status::InvalidArgument("sketch is empty (no form letter)");
  // The form letter, then the payload decoded right after it: one buffer,
  // reused per thread (this runs per record read and per unique line parsed).
  thread_local std::string bytes;
  bytes.assign(1, text[0]);
  CLICKATRON_RETURN_IF_ERROR(AppendDecodedBase64(text.substr(1), &bytes));
  return FromBinary(bytes);
}

Result<std::string> MergeSketchTexts(std::string_view a, std::string_view b) {
  Result<UniqueSketch> left = UniqueSketch::FromText(a);
  if (!left.ok()) return left.status();
  Result<UniqueSketch> right = UniqueSketch::FromText(b);
  if (!right.ok()) return right.status();
  left->Merge(*right);
  return left->ToText();
}

}  // namespace clickatron
