#include "file_loader.h"

#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include <utility>

#include "clickatron/clock.h"
#include "clickatron/manifest.h"
#include "clickatron/ymdh.h"

namespace clickatron::archive {
namespace {

// Compares what the manifest promises with what the file holds; the message
// says which field differs and both values, so an operator can tell a
// truncated copy from a stale manifest.
Status MatchManifest(const Manifest& expected, const Manifest& actual, const std::string& path) {
  auto mismatch = [&](std::string_view field, const auto& want, const auto& got) {
    return Status(StatusCode::kCorruption,
                  fmt::format("{} does not match its manifest: {} is {} in the file, {} in the manifest", path,
                              field, got, want),
                  kFileMismatch);
  };
  if (actual.bytes != expected.bytes) return mismatch("bytes", expected.bytes, actual.bytes);
  if (actual.records != expected.records) return mismatch("records", expected.records, actual.records);
  if (actual.crc32 != expected.crc32) return mismatch("crc32", expected.crc32, actual.crc32);
  if (actual.first_key != expected.first_key) {
    return mismatch("first_key", fmt::format("\"{}\"", expected.first_key), fmt::format("\"{}\"", actual.first_key));
  }
  if (actual.last_key != expected.last_key) {
    return mismatch("last_key", fmt::format("\"{}\"", expected.last_key), fmt::format("\"{}\"", actual.last_key));
  }
  return Status::Ok();
}

}  // namespace

LoadOptions LoadOptions::From(const MemberConfig& member, const ArchiveConfig& archive) {
  LoadOptions o;
  o.path = member.file;
  o.separator = archive.field_separator.empty() ? ',' : archive.field_separator[0];
  o.madvise = archive.madvise;
  o.mlock = archive.mlock;
  o.warmup = archive.warmup;
  o.verify_sorted = archive.verify_sorted_on_load;
  return o;
}

Result<SortedFilePtr> LoadSortedFile(const LoadOptions& options) {
  // Map first: the mapping pins this generation even if the path is renamed
  // over while we check it.
  auto mapping = MappedFile::Open(options.path);
  if (!mapping.ok()) {
    if (mapping.status().code() == StatusCode::kNotFound) return SortedFile::Empty(options.path, options.separator);
    return mapping.status();
  }
  std::string manifest_path = ManifestPathFor(options.path);
  auto manifest = ReadManifest(manifest_path);
  if (!manifest.ok()) {
    if (manifest.status().code() == StatusCode::kNotFound) {
      return Status::NotFound(
          fmt::format("{} has no manifest {}: refusing a file that cannot be checked", options.path, manifest_path));
    }
    return manifest.status();
  }
  if (options.refuse_last_day_from_today && !manifest->last_day.empty()) {
    const Result<int64_t> last_day = ParseDate(manifest->last_day);
    const int64_t today = SystemClock::Instance().TodayUtc();
    if (!last_day.ok() || *last_day >= today) {
      return Status(StatusCode::kCorruption,
                    fmt::format("{} says last_day {}, today or later by this host's clock (UTC {}): a generation "
                                "holds closed days only; its manifest is damaged, or a clock is wrong",
                                manifest_path, manifest->last_day, FormatDate(today)),
                    "LAST_DAY_AHEAD");
    }
  }
  std::string_view data = (*mapping)->data();
  // Cheapest check first: a truncated copy fails here without a full pass.
  if (data.size() != manifest->bytes) {
    return Status(StatusCode::kCorruption,
                  fmt::format("{} does not match its manifest: bytes is {} in the file, {} in the manifest",
                              options.path, data.size(), manifest->bytes),
                  kFileMismatch);
  }
  Manifest actual;
  DescribeArchiveData(data, &actual);
  CLICKATRON_RETURN_IF_ERROR(MatchManifest(*manifest, actual, options.path));
  if (options.verify_sorted) {
    Status sorted = CheckSorted(data, options.separator);
    if (!sorted.ok()) return sorted.WithContext(options.path);
  }
  // Served files are read-only: an edit in place (which the docs forbid)
  // then needs a deliberate chmod first. Not fatal when another user owns
  // the file; the scrub still catches such an edit.
  for (const std::string& path : {options.path, manifest_path}) {
    if (Status st = RemoveWriteBits(path); !st.ok()) spdlog::warn("could not make {} read-only: {}", path, st.ToString());
  }
  // Tuning failures are logged, not fatal: the data is still right to serve.
  if (Status st = (*mapping)->Advise(options.madvise); !st.ok()) spdlog::warn("{}", st.ToString());
  if (options.mlock) {
    if (Status st = (*mapping)->Lock(); !st.ok()) spdlog::warn("{} (raise RLIMIT_MEMLOCK?)", st.ToString());
  }
  if (options.warmup) (void)(*mapping)->Touch();
  return SortedFile::Create(options.served_path.empty() ? options.path : options.served_path, std::move(mapping).value(), std::move(manifest).value(), options.separator);
}

}  // namespace clickatron::archive
