#include "key_prefix.h"

#include <rocksdb/slice.h>
#include <rocksdb/slice_transform.h>

namespace clickatron::realtime {

std::string_view KeyPrefixOf(std::string_view key) {
  const size_t bar = key.find('|');
  if (bar == std::string_view::npos) return {};
  const size_t dot = key.find('.', bar + 1);
  if (dot == std::string_view::npos) return {};
  return key.substr(0, dot + 1);
}

namespace {

class KeyPrefixTransform : public rocksdb::SliceTransform {
 public:
  // Stored in each file's properties: a file made under another name (or
  // none, before this) is read without its prefix filter, never wrongly.
  const char* Name() const override { return "clickatron.KeyPrefix.1"; }
  // RocksDB also asks it of keys outside the domain (DBIter with
  // prefix_same_as_start transforms every key it passes): those stay whole,
  // never an empty Slice that points at nothing.
  rocksdb::Slice Transform(const rocksdb::Slice& key) const override {
    const std::string_view part = KeyPrefixOf(key.ToStringView());
    return part.empty() ? key : rocksdb::Slice(part.data(), part.size());
  }
  bool InDomain(const rocksdb::Slice& key) const override { return !KeyPrefixOf(key.ToStringView()).empty(); }
};

}  // namespace

std::shared_ptr<const rocksdb::SliceTransform> NewKeyPrefixTransform() {
  return std::make_shared<KeyPrefixTransform>();
}

}  // namespace clickatron::realtime
