#include "deletions/deletion.h"

#include <algorithm>
#include <cctype>
#include <random>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "clickatron/key_codec.h"
#include "clickatron/ymdh.h"

namespace clickatron::api {
namespace {

Result<int64_t> HourArg(const QueryArgs& args, std::string_view name) {
  auto value = args.GetSingle(name, fmt::format("{} is given more than once", name));
  const std::string reason = name == "from" ? "INVALID_FROM" : "INVALID_TO";
  if (!value.ok()) return Status::InvalidArgument(value.status().message(), reason);
  Result<int64_t> unix = ParseTimestamp(**value);
  if (!unix.ok()) return Status::InvalidArgument(fmt::format("{}: {}", name, unix.status().message()), reason);
  // Hours are stamped in the years the hour code holds (what /incr takes): a `to` past that is
  // milliseconds sent for seconds, and would widen the deletion to every
  // hour after `from`.
  if (*unix < 0 || *unix > kEndOfHourCodes) {
    return Status::InvalidArgument(
        fmt::format("{} ({}) is outside {}..{}, the years clicks are counted in (unix seconds, not milliseconds)",
                    name, *unix, kMinYmdhYear, kMaxYmdhYear),
        reason);
  }
  if (*unix % kSecondsPerHour != 0) {
    return Status::InvalidArgument(
        fmt::format("{} must be a whole hour (minutes and seconds 0; in unix seconds, divisible by 3600)", name),
        reason);
  }
  return *unix;
}

// A field's check, under the reason that names the field.
Status AsField(const Status& st, std::string_view reason) {
  return st.ok() ? st : Status::InvalidArgument(st.message(), std::string(reason));
}

}  // namespace

std::string NewDeletionId(int64_t now_unix) {
  std::random_device device;
  return fmt::format("del-{}-{:08x}", now_unix, device());
}

Result<Deletion> DeletionFromArgs(const QueryArgs& args, int64_t now_unix) {
  // A parameter left out widens a deletion (no `key`: every key of the
  // namespace; no `from`: from the first hour): a misspelt one (`keys=`,
  // `frm=`) or one this endpoint does not take (`sns=`) is refused, never
  // ignored, or it would erase more than was asked, for good.
  CLICKATRON_RETURN_IF_ERROR(OnlyKnownArgs(args, {"ns", "key", "from", "to", "id"}, "/delete"));
  Deletion d;
  auto ns = args.GetSingle("ns", "ns is given more than once");
  if (!ns.ok() || *ns == nullptr) return Status::InvalidArgument("ns is required (once)", "INVALID_NS");
  CLICKATRON_RETURN_IF_ERROR(AsField(ValidateNamespace(**ns, "ns"), "INVALID_NS"));
  d.ns = **ns;
  auto key = args.GetSingle("key", "key is given more than once");
  if (!key.ok()) return Status::InvalidArgument(key.status().message(), "INVALID_KEY");
  if (*key != nullptr) {
    CLICKATRON_RETURN_IF_ERROR(AsField(ValidateKeyPart(**key, "key"), "INVALID_KEY"));
    d.key = **key;
    const StoredKeyPart stored = StoreKeyPart(d.key);
    d.tkey = stored.stored;
    d.hashed = stored.hashed;
  }
  d.all_time = !args.Has("from") && !args.Has("to");
  d.from_unix = 0;
  // Neither given: all time, hours stamped in the future too (an erasure
  // leaves nothing counted before it). Only `from`: up to the hour after now.
  d.to_unix = d.all_time ? kEndOfHourCodes : (now_unix / kSecondsPerHour + 1) * kSecondsPerHour;
  if (args.Has("from")) {
    auto from = HourArg(args, "from");
    if (!from.ok()) return from.status();
    d.from_unix = *from;
  }
  if (args.Has("to")) {
    auto to = HourArg(args, "to");
    if (!to.ok()) return to.status();
    d.to_unix = *to;
  }
  if (d.to_unix <= d.from_unix) {
    // Name the field that was given: a `from` past the default `to` is the from's fault.
    const bool to_given = args.Has("to");
    return Status::InvalidArgument(
        to_given ? fmt::format("to ({}) must be after from ({})", d.to_unix, d.from_unix)
                 : fmt::format("from ({}) must be before the hour after now ({})", d.from_unix, d.to_unix),
        to_given ? "INVALID_TO" : "INVALID_FROM");
  }
  auto id = args.GetSingle("id", "id is given more than once");
  if (!id.ok()) return Status::InvalidArgument(id.status().message(), "INVALID_ID");
  if (*id != nullptr) {
    const std::string& text = **id;
    const bool well_formed = !text.empty() && text.size() <= 64 && std::all_of(text.begin(), text.end(), [](char ch) {
      return std::isalnum(static_cast<unsigned char>(ch)) || ch == '-' || ch == '_';
    });
    if (!well_formed) return Status::InvalidArgument("id must be 1-64 characters of [A-Za-z0-9_-]", "INVALID_ID");
    d.id = text;
  }
  d.created_unix = now_unix;
  return d;
}

nlohmann::json Deletion::ToJson() const {
  nlohmann::json cut_json = nlohmann::json::object();
  for (const auto& [shard, cut] : cuts) cut_json[std::to_string(shard)] = cut;
  nlohmann::json epoch_json = nlohmann::json::object();
  for (const auto& [shard, epoch] : epochs) epoch_json[std::to_string(shard)] = epoch;
  return {{"id", id},       {"ns", ns},           {"key", key},         {"tkey", tkey},
          {"hashed", hashed}, {"all_time", all_time}, {"from", from_unix}, {"to", to_unix},
          {"created", created_unix}, {"owner", owner}, {"cuts", cut_json}, {"cut_unix", cut_unix}, {"epochs", epoch_json}, {"realtime_done", realtime_done},
          {"peers_told", peers_told}, {"folded_into", folded_into}, {"deployed", deployed}, {"physical", physical}};
}

Result<Deletion> Deletion::FromJson(const nlohmann::json& j) {
  Deletion d;
  try {
    d.id = j.at("id").get<std::string>();
    d.ns = j.at("ns").get<std::string>();
    d.key = j.value("key", "");
    d.tkey = j.value("tkey", "");
    d.hashed = j.value("hashed", false);
    d.all_time = j.value("all_time", false);
    d.from_unix = j.at("from").get<int64_t>();
    d.to_unix = j.at("to").get<int64_t>();
    d.created_unix = j.value("created", int64_t{0});
    d.owner = j.value("owner", "");
    d.realtime_done = j.value("realtime_done", false);
    d.peers_told = j.value("peers_told", false);
    d.folded_into = j.value("folded_into", uint64_t{0});
    d.cut_unix = j.value("cut_unix", int64_t{0});
    d.deployed = j.value("deployed", false);
    d.physical = j.value("physical", false);
    const nlohmann::json cuts = j.value("cuts", nlohmann::json::object());  // kept: items() refers into it
    for (const auto& [shard, cut] : cuts.items()) {
      d.cuts[std::stoi(shard)] = cut.get<std::map<std::string, uint64_t>>();
    }
    const nlohmann::json epochs = j.value("epochs", nlohmann::json::object());
    for (const auto& [shard, epoch] : epochs.items()) d.epochs[std::stoi(shard)] = epoch.get<uint64_t>();
  } catch (const std::exception& e) {
    return Status::InvalidArgument(fmt::format("deletion: {}", e.what()));
  }
  if (d.id.empty() || d.ns.empty() || d.to_unix <= d.from_unix) {
    return Status::InvalidArgument("deletion: needs an id, a namespace and from < to");
  }
  return d;
}

void Deletion::KeepProgressOf(const Deletion& known) {
  realtime_done = realtime_done || known.realtime_done;
  peers_told = peers_told || known.peers_told;
  if (cuts.empty()) {
    cuts = known.cuts;
    cut_unix = known.cut_unix;
  }
  for (const auto& [shard, epoch] : known.epochs) epochs.emplace(shard, epoch);
  folded_into = std::max(folded_into, known.folded_into);
  deployed = deployed || known.deployed;
  physical = physical || known.physical;
}

DeletionScope Deletion::Scope() const {
  DeletionScope scope;
  scope.ns = ns;
  scope.tkey = tkey;
  scope.lookup = LookupKey();
  scope.from_unix = from_unix;
  scope.to_unix = to_unix;
  scope.cuts = cuts;
  return scope;
}

nlohmann::json Deletion::TombstoneJson() const {
  return {{"id", id},
          {"ns", ns},
          {"tkey", tkey},
          {"lookup", LookupKey()},
          {"from", from_unix},
          {"to", to_unix}};
}

}  // namespace clickatron::api
