#include "convert_line.h"

#include <charconv>
#include <cstring>

#include <fmt/format.h>

#include "clickatron/convert.h"
#include "clickatron/key_codec.h"
#include "clickatron/record.h"
#include "clickatron/ymdh.h"

namespace clickatron::rebuild {
namespace {

bool IsNamespaceByte(unsigned char c) {
  return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_' ||
         c == '-';
}

// Printable ASCII that a stored key part may hold as itself (key_codec.h:
// no space : , . | and no control byte). Bytes >= 0x7f take the slow path.
bool IsPlainKeyByte(unsigned char c) {
  return c > 0x20 && c < 0x7f && c != ':' && c != ',' && c != '.' && c != '|';
}

bool FastNamespace(std::string_view ns) {
  if (ns.empty() || ns.size() > kMaxNamespaceLength) return false;
  for (char c : ns) {
    if (!IsNamespaceByte(static_cast<unsigned char>(c))) return false;
  }
  return ns != kLookupNamespace;
}

// A stored key part: short plain ASCII, or a 12-character hash.
bool FastKeyPart(std::string_view part) {
  if (part.empty()) return false;
  if (part.size() < kHashLength) {
    for (char c : part) {
      if (!IsPlainKeyByte(static_cast<unsigned char>(c))) return false;
    }
    return true;
  }
  return LooksLikeHash(part);
}

int B32(char c) {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'a' && c <= 'v') return c - 'a' + 10;
  return -1;
}

bool FastYmdh(std::string_view ymdh) {
  if (ymdh.size() != 4) return false;
  const int y = B32(ymdh[0]), m = B32(ymdh[1]), d = B32(ymdh[2]), h = B32(ymdh[3]);
  if (y < 0 || m < 1 || m > 12 || d < 1 || h < 0 || h > 23) return false;
  return d <= DaysInMonth(kFirstSeedYmdhYear + y, m);  // a 5-character code takes the core's path
}

bool IsCounter(RecordType type) { return type == RecordType::kTotal || type == RecordType::kSubtotal; }

// Only counts CheckLineCount takes: any other goes the core's way, and is refused there.
bool FastCount(std::string_view text, int64_t* value) {
  if (text.empty()) return false;
  const auto [ptr, ec] = std::from_chars(text.data(), text.data() + text.size(), *value);
  return ec == std::errc() && ptr == text.data() + text.size() && CheckLineCount(*value).ok();
}

void AppendCount(int64_t value, std::string* out) {
  char digits[24];
  const auto [end, ec] = std::to_chars(digits, digits + sizeof(digits), value);
  out->append(digits, static_cast<size_t>(end - digits));
}

// True (and *out appended) when the line has the common shape. One pass
// finds the delimiters; anything unexpected is left to the core.
bool FastConvert(std::string_view line, std::string* out) {
  constexpr size_t kNone = std::string_view::npos;
  size_t comma = kNone, bar = kNone, prefix_dot = kNone;
  size_t dots[2] = {kNone, kNone};
  int key_dots = 0;
  for (size_t i = 0; i < line.size(); ++i) {
    const char c = line[i];
    if (c == ',') {
      comma = i;
      break;
    }
    if (c == '|') {
      if (bar != kNone) return false;
      bar = i;
    } else if (c == '.') {
      if (bar == kNone) {
        if (prefix_dot != kNone) return false;
        prefix_dot = i;
      } else {
        if (key_dots == 2) return false;
        dots[key_dots++] = i;
      }
    }
  }
  if (comma == kNone || bar == kNone) return false;
  int64_t count = 0;
  if (!FastCount(line.substr(comma + 1), &count)) return false;
  const auto part = [&](size_t begin, size_t end) { return line.substr(begin, end - begin); };
  if (prefix_dot == kNone) {
    // Total: ns|tkey.YMDH -> ns|tkey,YMDH:count
    if (key_dots != 1) return false;
    const std::string_view tkey = part(bar + 1, dots[0]);
    const std::string_view ymdh = part(dots[0] + 1, comma);
    if (!FastNamespace(part(0, bar)) || !FastKeyPart(tkey) || !FastYmdh(ymdh)) return false;
    out->reserve(out->size() + comma + 24);
    out->append(line.data(), dots[0]);
    out->push_back(',');
    out->append(ymdh);
    out->push_back(':');
    AppendCount(count, out);
    return true;
  }
  // Subtotal: sns.ns|tkey.skey.YMDH -> sns.ns|tkey.YMDH,skey:count
  if (key_dots != 2) return false;
  const std::string_view tkey = part(bar + 1, dots[0]);
  const std::string_view skey = part(dots[0] + 1, dots[1]);
  const std::string_view ymdh = part(dots[1] + 1, comma);
  if (!FastNamespace(part(0, prefix_dot)) || !FastNamespace(part(prefix_dot + 1, bar)) || !FastKeyPart(tkey) ||
      !FastKeyPart(skey) || !FastYmdh(ymdh)) {
    return false;
  }
  out->reserve(out->size() + comma + 24);
  out->append(line.data(), dots[0]);
  out->push_back('.');
  out->append(ymdh);
  out->push_back(',');
  out->append(skey);
  out->push_back(':');
  AppendCount(count, out);
  return true;
}

}  // namespace

Status ConvertRealtimeLine(std::string_view realtime_line, std::string* out) {
  if (FastConvert(realtime_line, out)) return Status::Ok();
  Result<RealtimeLine> parsed = ParseRealtimeLine(realtime_line);
  if (!parsed.ok()) return parsed.status();
  // Quoted as the parser's refusals quote it (a rejects file names the line).
  if (IsCounter(parsed->key.type)) {
    if (Status st = CheckLineCount(parsed->count); !st.ok()) {
      return st.WithContext(fmt::format("realtime line {}", QuoteForMessage(realtime_line)));
    }
  }
  Result<std::string> converted = RealtimeToArchiveLine(realtime_line);
  if (!converted.ok()) return converted.status();
  out->append(*converted);
  return Status::Ok();
}

Status NormalizeArchiveLine(std::string_view archive_line, std::string* out) {
  Result<ArchiveRecord> record = ParseArchiveLine(archive_line);
  if (!record.ok()) return record.status();
  if (Status st = CheckArchiveCounts(*record); !st.ok()) {
    return st.WithContext(fmt::format("archive line {}", QuoteForMessage(archive_line)));
  }
  out->append(FormatArchiveLine(*record));
  return Status::Ok();
}

}  // namespace clickatron::rebuild
