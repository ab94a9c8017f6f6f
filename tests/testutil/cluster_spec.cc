#include "testutil/cluster_spec.h"

#include <cstdio>

namespace clickatron::testing {

std::string TomlString(const std::string& value) {
  std::string out = "\"";
  for (const char c : value) {
    switch (c) {
      case '"': out += "\\\""; break;
      case '\\': out += "\\\\"; break;
      case '\n': out += "\\n"; break;
      case '\t': out += "\\t"; break;
      case '\r': out += "\\r"; break;
      default:
        if (static_cast<unsigned char>(c) < 0x20 || c == 0x7f) {
          char buf[8];
          std::snprintf(buf, sizeof(buf), "\\u%04x", static_cast<unsigned>(static_cast<unsigned char>(c)));
          out += buf;
        } else {
          out += c;
        }
    }
  }
  return out + "\"";
}

TomlTable& TomlTable::SetRaw(const std::string& key, const std::string& toml_value) {
  for (auto& [k, v] : entries_) {
    if (k == key) {
      v = toml_value;
      return *this;
    }
  }
  entries_.emplace_back(key, toml_value);
  return *this;
}

TomlTable& TomlTable::SetString(const std::string& key, const std::string& value) {
  return SetRaw(key, TomlString(value));
}

TomlTable& TomlTable::SetInt(const std::string& key, long long value) { return SetRaw(key, std::to_string(value)); }

TomlTable& TomlTable::SetBool(const std::string& key, bool value) { return SetRaw(key, value ? "true" : "false"); }

TomlTable& TomlTable::SetStrings(const std::string& key, const std::vector<std::string>& values) {
  std::string list = "[";
  for (const std::string& v : values) list += (list.size() > 1 ? ", " : "") + TomlString(v);
  return SetRaw(key, list + "]");
}

bool TomlTable::Has(const std::string& key) const {
  for (const auto& [k, v] : entries_) {
    if (k == key) return true;
  }
  return false;
}

std::string TomlTable::Lines() const {
  std::string out;
  for (const auto& [k, v] : entries_) out += k + " = " + v + "\n";
  return out;
}

}  // namespace clickatron::testing
