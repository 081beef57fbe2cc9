// Fetch (spec §3.4, §5.5): whole batches below the high watermark
// (READ_UNCOMMITTED) or the last stable offset (READ_COMMITTED), byte limits
// with the progress guarantee, and the long poll in the delayed-fetch
// purgatory (woken by appends, forced at max wait or shutdown). READ_UNCOMMITTED
// log bytes are file ranges sent with sendfile when the FetchSliceReader can
// serve them (fetch_slice_reader.h), else bytes copied by Log::Read.
// From v13 topics are named by id; ids are resolved once, when the request
// arrives (an unknown id: UNKNOWN_TOPIC_ID for each of its partitions).
// Bytes the background scrub found damaged are not served (broker/scrubber.h):
// CORRUPT_MESSAGE at a damaged offset, a read cut at the damage below it.
#include <algorithm>
#include <memory>

#include "broker/api_handlers.h"
#include "broker/scrubber.h"
#include "log/leader_epoch.h"
#include "protocol/messages.h"

namespace daruma::broker {
namespace {

constexpr int8_t kReadCommitted = 1;

struct FetchOutcome {
  FetchResponse response;
  int64_t available = 0;  // bytes of records in the response
  bool any_error = false;
};

// A fetch with its topics' names: the request's own up to v12, resolved from
// the topic ids from v13 (nullopt: unknown id).
struct ResolvedFetch {
  FetchRequest request;
  std::vector<std::optional<std::string>> names;  // one per request.topics
};

ResolvedFetch Resolve(const HandlerEnv& env, FetchRequest request, int16_t version) {
  ResolvedFetch out;
  for (const auto& topic : request.topics) {
    if (version < 13) {
      out.names.push_back(topic.topic);
    } else if (auto info = env.topics.FindById(Uuid(topic.topic_id))) {
      out.names.push_back(info->name);
    } else {
      out.names.push_back(std::nullopt);
    }
  }
  out.request = std::move(request);
  return out;
}

// The fetching replica: ReplicaId up to v14, ReplicaState from v15.
int32_t ReplicaIdOf(const FetchRequest& request) {
  return std::max(request.replica_id, request.replica_state.replica_id);
}

// Per-partition errors that need no read (§3.4): a follower's fetch, and a
// CurrentLeaderEpoch other than the one this node leads `log` at (-1: none
// given, not checked).
ErrorCode CheckPartition(const FetchRequest& request, const FetchRequest::Partition& p,
                         const Log& log) {
  if (ReplicaIdOf(request) >= 0) return ErrorCode::kNotLeaderOrFollower;
  if (p.current_leader_epoch < 0) return ErrorCode::kNone;
  const int32_t epoch = LeaderEpochOf(log);
  if (p.current_leader_epoch < epoch) return ErrorCode::kFencedLeaderEpoch;
  if (p.current_leader_epoch > epoch) return ErrorCode::kUnknownLeaderEpoch;
  return ErrorCode::kNone;
}

// The answer for a fetch that reaches scrub damage with nothing before it.
// Empty records, as Kafka sends with any partition error (MemoryRecords.
// EMPTY): a null record set (size -1) is a protocol error to librdkafka,
// which then retried at once, tens of thousands of times a second, without
// ever showing the application CORRUPT_MESSAGE.
void RefuseDamaged(HandlerEnv& env, const ScrubFetchDamage& damage, int64_t fetch_offset,
                   FetchResponse::Partition& out) {
  env.ctx.scrubber->NoteRefused(damage, fetch_offset);
  out.error_code = ScrubErrorCode(damage.finding);
  out.records.emplace();
  out.file_records.clear();
  out.aborted_transactions.reset();
}

// Reads one partition with at most `max_bytes` (the first batch of the whole
// response is returned even when larger: `min_one`).
FetchResponse::Partition ReadPartition(HandlerEnv& env, const FetchRequest& request,
                                       const std::string& topic, const FetchRequest::Partition& p,
                                       int64_t max_bytes, bool min_one) {
  FetchResponse::Partition out;
  out.partition_index = p.partition;
  Log* log = env.topics.ServedLog({topic, p.partition}, &out.error_code);
  if (log == nullptr) return out;
  out.error_code = CheckPartition(request, p, *log);
  if (out.error_code != ErrorCode::kNone) return out;
  std::optional<ScrubFetchDamage> damage;
  if (env.ctx.scrubber != nullptr && env.ctx.scrubber->HasFindings()) {
    damage = env.ctx.scrubber->DamageFrom(*log, p.fetch_offset);
    if (damage && damage->finding.damage.first_offset <= p.fetch_offset) {
      RefuseDamaged(env, *damage, p.fetch_offset, out);
      return out;
    }
  }
  const bool committed = request.isolation_level == kReadCommitted;
  if (committed) out.aborted_transactions.emplace();
  const FetchIsolation isolation =
      committed ? FetchIsolation::kTxnCommitted : FetchIsolation::kHighWatermark;
  std::optional<std::vector<FileSlice>> slices;
  if (max_bytes > 0 || min_one) {
    int64_t upper = 0;
    slices = env.slices.Read(*log, p.fetch_offset, max_bytes, min_one, isolation, &upper);
    if (slices && committed) {
      // As Log::Read does: the aborted transactions below the bound used.
      Result<std::vector<AbortedTxn>> aborted =
          log->CollectAbortedTransactions(p.fetch_offset, upper);
      if (!aborted.ok()) slices.reset();  // Log::Read reports the error
      for (const AbortedTxn& txn : aborted.ok() ? *aborted : std::vector<AbortedTxn>{}) {
        out.aborted_transactions->push_back({txn.producer_id, txn.first_offset});
      }
    }
  }
  if (slices) {
    out.file_records = std::move(*slices);  // sent with sendfile
  } else if (max_bytes > 0 || min_one) {
    Result<FetchDataInfo> data = log->Read(
        p.fetch_offset, int32_t(std::clamp<int64_t>(max_bytes, 0, INT32_MAX)), isolation, min_one);
    if (!data.ok()) {
      out.error_code = ErrorCodeForLogRead(env.topics, {topic, p.partition}, log, data.status());
      out.aborted_transactions.reset();
      return out;
    }
    out.records = std::move(data->records);
    if (committed) {
      for (const AbortedTxn& txn : data->aborted_transactions) {
        out.aborted_transactions->push_back({txn.producer_id, txn.first_offset});
      }
    }
  } else if (p.fetch_offset < log->log_start_offset() || p.fetch_offset > log->log_end_offset()) {
    out.error_code = ErrorCode::kOffsetOutOfRange;
    out.aborted_transactions.reset();
    return out;
  }
  if (damage && (slices || out.records)) {
    // Below the damage: what lies before its first byte is served.
    const bool any = slices ? !out.file_records.empty() : !out.records->empty();
    const int64_t kept = slices ? CutSlicesAtDamage(*damage, &out.file_records)
                                : CutRecordsAtDamage(*damage, &*out.records);
    if (any && kept == 0) {
      RefuseDamaged(env, *damage, p.fetch_offset, out);
      return out;
    }
  }
  out.high_watermark = log->high_watermark();
  out.last_stable_offset = log->last_stable_offset();
  out.log_start_offset = log->log_start_offset();
  return out;
}

FetchOutcome ReadAll(HandlerEnv& env, const ResolvedFetch& fetch) {
  const FetchRequest& request = fetch.request;
  FetchOutcome outcome;
  int64_t remaining = std::min<int64_t>(request.max_bytes, env.ctx.fetch_max_bytes);
  for (size_t i = 0; i < request.topics.size(); ++i) {
    const FetchRequest::Topic& topic = request.topics[i];
    FetchResponse::Topic t;
    t.topic = topic.topic;
    t.topic_id = topic.topic_id;
    for (const auto& p : topic.partitions) {
      if (!fetch.names[i]) {
        FetchResponse::Partition unknown;
        unknown.partition_index = p.partition;
        unknown.error_code = ErrorCode::kUnknownTopicId;
        outcome.any_error = true;
        t.partitions.push_back(std::move(unknown));
        continue;
      }
      const int64_t limit = std::min<int64_t>(p.partition_max_bytes, remaining);
      FetchResponse::Partition out =
          ReadPartition(env, request, *fetch.names[i], p, limit, outcome.available == 0);
      int64_t size = out.records ? int64_t(out.records->size()) : 0;
      for (const FileSlice& slice : out.file_records) size += int64_t(slice.length);
      outcome.available += size;
      remaining -= size;
      outcome.any_error = outcome.any_error || out.error_code != ErrorCode::kNone;
      t.partitions.push_back(std::move(out));
    }
    outcome.response.responses.push_back(std::move(t));
  }
  return outcome;
}

// Session-less fetches only (§3.4): a top-level error, or kNone.
ErrorCode CheckSession(const FetchRequest& request) {
  if (request.session_id != 0) return ErrorCode::kFetchSessionIdNotFound;
  if (request.session_epoch != -1 && request.session_epoch != 0) {
    return ErrorCode::kInvalidFetchSessionEpoch;
  }
  return ErrorCode::kNone;
}

std::vector<TopicPartition> Partitions(const ResolvedFetch& fetch) {
  std::vector<TopicPartition> out;
  for (size_t i = 0; i < fetch.request.topics.size(); ++i) {
    if (!fetch.names[i]) continue;
    for (const auto& p : fetch.request.topics[i].partitions) {
      out.push_back({*fetch.names[i], p.partition});
    }
  }
  return out;
}

}  // namespace

void HandleFetch(HandlerEnv& env, const RequestHeader& header, ProtocolReader& body,
                 const Respond& respond) {
  Result<FetchRequest> decoded = DecodeFetchRequest(body, header.api_version);
  if (!decoded.ok()) return CloseMalformed(env, header, decoded.status(), respond);
  if (ErrorCode session = CheckSession(*decoded); session != ErrorCode::kNone) {
    FetchResponse response;
    response.error_code = session;
    return respond(EncodeResponseFrame(env, header, response, EncodeFetchResponse), false);
  }
  auto request =
      std::make_shared<const ResolvedFetch>(Resolve(env, std::move(*decoded), header.api_version));
  // Called now, on every wake, and forced at max wait: true once responded.
  DelayedFetchPurgatory::Attempt attempt = [env, header, request, respond](bool force) mutable {
    FetchOutcome outcome = ReadAll(env, *request);
    if (!force && !outcome.any_error && outcome.available < request->request.min_bytes) {
      return false;
    }
    respond(EncodeResponseFrame(env, header, outcome.response, EncodeFetchResponse), false);
    return true;
  };
  if (attempt(request->request.max_wait_ms <= 0)) return;
  env.purgatory.Park(Partitions(*request), std::chrono::milliseconds(request->request.max_wait_ms),
                     env.client, std::move(attempt));
}

}  // namespace daruma::broker
