// The routes of a deletion's realtime part (tombstones.h): install, cut,
// list. The API node that takes a DELETE sends them (signed: internal
// routes); docs/protocols.md, "Deletions", has the wire format.
#include <fmt/format.h>
#include <nlohmann/json.hpp>
#include <spdlog/spdlog.h>

#include "clickatron/key_codec.h"
#include "clickatron/ymdh.h"
#include "realtime_server.h"

namespace clickatron::realtime {
namespace {

Result<nlohmann::json> JsonBody(const HttpExchangePtr& ex) {
  nlohmann::json j = nlohmann::json::parse(ex->body(), nullptr, /*allow_exceptions=*/false);
  if (j.is_discarded() || !j.is_object()) return Status::InvalidArgument("the body must be a JSON object", "BAD_BODY");
  return j;
}

}  // namespace

Result<uint64_t> RealtimeServer::DeleteTombstoneRecords(const Tombstone& t) {
  uint64_t deleted = 0;
  // Every day the store holds: counters and uniques of the deleted hours are
  // in their own days, a lookup in whichever day was Today when it was put.
  for (int64_t day : ring_->store().Days()) {
    auto n = ring_->store().DeleteMatching(day, [&t](std::string_view key) { return t.Matches(key); });
    if (!n.ok()) return n.status();
    deleted += *n;
  }
  return deleted;
}

// POST /tombstone, body {"id","ns","tkey","lookup","from","to"}: installs it
// pending (batches it matches are refused from now on), waits until what was
// applied before is checkpointed, deletes its records from the stores and
// answers {"epoch","deleted_records"}. Installing an id again answers the
// same tombstone (a retry after a lost answer).
void RealtimeServer::HandleTombstone(const HttpExchangePtr& ex) {
  auto body = JsonBody(ex);
  if (!body.ok()) {
    ex->ReplyError(body.status());
    return;
  }
  auto parsed = Tombstone::FromJson(*body);
  if (!parsed.ok()) {
    ex->ReplyError(400, "BAD_TOMBSTONE", parsed.status().message());
    return;
  }
  if (Status st = ValidateNamespace(parsed->ns, "ns"); !st.ok()) {
    ex->ReplyError(400, "BAD_TOMBSTONE", st.message());
    return;
  }
  if (parsed->from_unix % kSecondsPerHour != 0 || parsed->to_unix % kSecondsPerHour != 0) {
    ex->ReplyError(400, "BAD_TOMBSTONE", "from and to must be whole hours");
    return;
  }
  auto installed = tombstones_->Install(std::move(parsed).value());
  if (!installed.ok()) {
    ex->ReplyError(installed.status());
    return;
  }
  const std::string id = installed->id;
  const uint64_t epoch = installed->epoch;
  // A run for this id is out (a retry after the API's request timed out):
  // this request waits for its answer, also once the records are deleted
  // and the run waits for the checkpoints that read them.
  if (auto run = tombstone_runs_.find(id); run != tombstone_runs_.end()) {
    run->second.push_back(ex);
    return;
  }
  if (installed->deleted) {
    ex->ReplyJson({{"id", id}, {"epoch", epoch}, {"deleted_records", 0}});
    return;
  }
  tombstone_runs_[id].push_back(ex);
  // From here no batch adds a record it matches; what the in-memory tables
  // hold of them goes to the stores with the next checkpoint, and is deleted there.
  ring_->checkpointer().WhenPersisted([this, id, epoch](Status persisted) {
    if (!persisted.ok()) {
      AnswerTombstoneRun(id, epoch,
                         Status::Unavailable(fmt::format("the records in memory could not be persisted ({}); retry",
                                                         persisted.message()),
                                             "CHECKPOINT_FAILED"));
      return;
    }
    const Tombstone* t = tombstones_->Find(id);
    if (t == nullptr) {
      AnswerTombstoneRun(id, epoch, Status::NotFound(fmt::format("tombstone {} is gone", id)));
      return;
    }
    // A copy: the set may change on the loop while the worker scans.
    tombstone_worker_->Post([this, copy = *t, epoch] {
      Result<uint64_t> deleted = DeleteTombstoneRecords(copy);
      http_->RunInLoop([this, id = copy.id, epoch, deleted] {
        Result<uint64_t> answer = deleted;
        if (answer.ok()) {
          if (Status marked = tombstones_->MarkDeleted(id); !marked.ok()) answer = marked;
        }
        if (!answer.ok()) {
          spdlog::error("tombstone {}: {}", id, answer.status().ToString());
          AnswerTombstoneRun(id, epoch, answer);
          return;
        }
        counters_.tombstone_deleted_records += *answer;
        spdlog::info("tombstone {}: {} stored records deleted", id, *answer);
        // A checkpoint frozen before the delete reads the store through a
        // snapshot taken then, records and all, until it finishes: the
        // answer (after which every read must be without them) waits for
        // it. Answered whatever it says: the records are deleted.
        ring_->checkpointer().WhenPersisted(
            [this, id, epoch, answer](const Status&) { AnswerTombstoneRun(id, epoch, answer); });
      });
    });
  });
}

void RealtimeServer::AnswerTombstoneRun(const std::string& id, uint64_t epoch, const Result<uint64_t>& answer) {
  auto run = tombstone_runs_.find(id);
  if (run == tombstone_runs_.end()) return;
  const std::vector<HttpExchangePtr> waiting = std::move(run->second);
  tombstone_runs_.erase(run);
  for (const HttpExchangePtr& ex : waiting) {
    if (answer.ok()) {
      ex->ReplyJson({{"id", id}, {"epoch", epoch}, {"deleted_records", *answer}});
    } else {
      ex->ReplyError(answer.status());
    }
  }
}

// POST /tombstone/cut, body {"id","cut":{"SOURCE":SEQ,…}}.
void RealtimeServer::HandleTombstoneCut(const HttpExchangePtr& ex) {
  auto body = JsonBody(ex);
  if (!body.ok()) {
    ex->ReplyError(body.status());
    return;
  }
  std::string id;
  std::map<std::string, uint64_t> cut;
  try {
    id = body->at("id").get<std::string>();
    cut = body->at("cut").get<std::map<std::string, uint64_t>>();
  } catch (const nlohmann::json::exception& e) {
    ex->ReplyError(400, "BAD_CUT", fmt::format("needs an id and a cut of source -> seq: {}", e.what()));
    return;
  }
  // Records a batch above the cut adds must outlive any scan: none is out.
  if (tombstone_runs_.contains(id)) {
    ex->AddHeader("Retry-After", "1");
    ex->ReplyError(503, "TOMBSTONE_DELETING",
                   fmt::format("tombstone {} is still deleting its records; send the cut once its install answers", id));
    return;
  }
  if (Status st = tombstones_->SetCut(id, std::move(cut)); !st.ok()) {
    ex->ReplyError(st);
    return;
  }
  ex->ReplyJson({{"id", id}});
}

// GET /tombstones: {"epoch", "tombstones": [...]}.
void RealtimeServer::HandleTombstones(const HttpExchangePtr& ex) {
  nlohmann::json all = nlohmann::json::array();
  for (const Tombstone& t : tombstones_->all()) all.push_back(t.ToJson());
  ex->ReplyJson({{"epoch", tombstones_->epoch()}, {"tombstones", std::move(all)}});
}

}  // namespace clickatron::realtime
