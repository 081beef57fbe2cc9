#include "broker/request_handler.h"

#include <fmt/format.h>

#include <algorithm>
#include <utility>

#include "broker/api_handlers.h"
#include "broker/frame_pool.h"
#include "broker/post_runner.h"
#include "log/log_file_names.h"
#include "protocol/api_keys.h"
#include "protocol/request_header.h"

namespace daruma::broker {

RequestHandler::RequestHandler(BrokerContext ctx, asio::any_io_executor request_executor)
    : ctx_(std::move(ctx)),
      request_executor_(request_executor),
      scheduler_(std::make_unique<Scheduler>(ctx_.clock, 1)),
      topics_(ctx_.log_manager, ctx_.config.log),
      purgatory_(scheduler_.get(), PostRunner(request_executor)),
      slices_(ctx_.zero_copy_fs) {
  // Partitions start-up found but does not serve (failed to load, or their
  // dir went offline): see TopicRegistry::Load.
  std::set<TopicPartition> unloaded;
  for (const PartitionRecoveryReport& p : ctx_.log_manager->report().partitions) {
    TopicPartition tp{p.topic, p.partition};
    // Live directories only: a `-delete` or `-future` one is no partition.
    if (BaseName(p.dir) != LogDirName(tp)) continue;
    if (ctx_.log_manager->GetLog(tp) == nullptr) unloaded.insert(std::move(tp));
  }
  std::vector<std::string> notes;
  init_status_ = topics_.Load(unloaded, &notes);
  if (ctx_.log != nullptr) {
    for (const std::string& note : notes) {
      ctx_.log->Write(LogLevel::kWarn, "topic_completed", LogFields().Add("what", note));
    }
  }
  if (init_status_.ok()) init_status_ = OpenProducerIds();
  if (init_status_.ok()) StartCoordinators();
}

LogGroupStorage::LogFor RequestHandler::CoordinatorLogFor(std::string topic, int32_t partitions,
                                                          TopicOverrides overrides) {
  return [this, topic = std::move(topic), partitions, overrides = std::move(overrides)](
             int32_t partition, bool create) -> Result<Log*> {
    const TopicPartition tp{topic, partition};
    // While a log dir is offline its partition dirs are unknown: a partition
    // (or the whole topic, whose overrides every dir records) missing here
    // may be there, with the offsets or transaction states its keys need.
    // Served empty, a consumer would restart from auto.offset.reset; created
    // here, the partition would be in two dirs once that dir is back.
    const bool dir_offline = ctx_.log_manager->HasOfflineLogDir();
    if (dir_offline && !topics_.Find(topic) && !ctx_.log_manager->TopicOverridesOf(topic).empty()) {
      return Status::NotFound(topic + " is not loaded and a log dir is offline");
    }
    if (create) {
      Result<TopicInfo> info = topics_.GetOrCreateInternal(topic, partitions, overrides);
      if (!info.ok()) return info.status();
    }
    Log* log = topics_.GetLog(tp);
    // Not an empty partition: what it holds must not be served without it
    // (the coordinator answers COORDINATOR_NOT_AVAILABLE for its keys).
    if (log == nullptr && topics_.IsUnloaded(tp)) {
      return Status::NotFound(tp.ToString() + " was found at start-up but is not loaded");
    }
    if (log == nullptr && dir_offline && topics_.Find(topic)) {
      return Status::NotFound(tp.ToString() + " is not loaded and a log dir is offline");
    }
    // Kafka's ReplicaManager takes a partition whose dir failed offline and
    // its coordinator resigns: nothing more is appended to or read from a
    // log whose writes may never reach the disk (KAFKA_STORAGE_ERROR, which
    // the coordinators answer as NOT_COORDINATOR).
    if (log != nullptr && ctx_.log_manager->IsInOfflineDir(*log)) {
      return Status::IoError(tp.ToString() + " is in an offline log dir");
    }
    return log;
  };
}

// An internal topic found on disk without a cleanup.policy of its own came
// from a Kafka dir whose metadata gave none (a ZooKeeper-mode broker's, or a
// KRaft import still pending): it is compacted, as Kafka always creates it, or time
// retention would delete the committed offsets and transaction states older
// than retention.ms. A policy an operator recorded here is kept.
void RequestHandler::CompactInternalTopic(const std::string& name) {
  std::optional<TopicInfo> existing = topics_.Find(name);
  if (!existing || existing->overrides.count("cleanup.policy") > 0) return;
  Result<TopicInfo> edited = topics_.EditOverrides(
      name,
      [](const TopicOverrides& current) -> Result<TopicOverrides> {
        TopicOverrides out = current;
        out["cleanup.policy"] = "compact";
        return out;
      },
      /*validate_only=*/false);
  if (ctx_.log == nullptr) return;
  ctx_.log->Write(
      LogLevel::kWarn, "internal_topic_compacted",
      LogFields()
          .Add("topic", name)
          .Add("what",
               edited.ok()
                   ? std::string("found without a cleanup.policy of its own (a dir Kafka "
                                 "wrote): set to compact, as Kafka always has it")
                   : "setting cleanup.policy=compact failed: " + edited.status().ToString()));
}

void RequestHandler::StartCoordinators() {
  CompactInternalTopic(kConsumerOffsetsTopic);
  CompactInternalTopic(kTransactionStateTopic);
  GroupCoordinatorConfig config = ctx_.groups;
  // An internal topic that already exists keeps its partition count (a group
  // or transactional id lives where the count it was written with puts it).
  if (std::optional<TopicInfo> existing = topics_.Find(kConsumerOffsetsTopic)) {
    config.offsets_partitions = existing->partitions;
  }
  group_storage_ = std::make_unique<LogGroupStorage>(
      CoordinatorLogFor(kConsumerOffsetsTopic, config.offsets_partitions,
                        {{"cleanup.policy", "compact"},
                         {"compression.type", "producer"},
                         {"segment.bytes", std::to_string(ctx_.offsets_topic_segment_bytes)}}),
      ctx_.clock);
  groups_ = std::make_unique<GroupCoordinator>(config, group_storage_.get(), scheduler_.get());

  TransactionCoordinatorConfig txn_config = ctx_.transactions;
  if (std::optional<TopicInfo> existing = topics_.Find(kTransactionStateTopic)) {
    txn_config.state_log_partitions = existing->partitions;
  }
  // Kafka's transaction topic configs: compacted, never compressed.
  txn_storage_ = std::make_unique<LogGroupStorage>(
      CoordinatorLogFor(kTransactionStateTopic, txn_config.state_log_partitions,
                        {{"cleanup.policy", "compact"},
                         {"compression.type", "uncompressed"},
                         {"segment.bytes", std::to_string(ctx_.transaction_state_segment_bytes)}}),
      ctx_.clock, kTransactionStateTopic);
  txn_markers_ =
      std::make_unique<LogTxnMarkerWriter>(topics_, hw_mu_, purgatory_, groups_.get(), ctx_.clock);
  txns_ = std::make_unique<TransactionCoordinator>(
      txn_config, txn_storage_.get(), txn_markers_.get(),
      [this]() -> Result<int64_t> {
        if (producer_ids_ == nullptr)
          return Status::IoError("no online log dir keeps producer ids");
        return producer_ids_->Generate();
      },
      scheduler_.get());
  if (producer_ids_ != nullptr) producer_ids_->ExpectFloor();
  // Groups first: a transaction finished by the transaction coordinator's
  // load may complete offsets in a group, which must be loaded by then.
  coordinator_loader_ = std::thread([this, partitions = txn_config.state_log_partitions] {
    RaiseProducerIdFloor(partitions);
    LoadGroups();
    LoadTransactions();
    AbortHangingTransactions();
  });
}

// First on the loader thread, so idempotent producers wait only for this
// read of `__transaction_state`, not for the coordinators' loads.
void RequestHandler::RaiseProducerIdFloor(int32_t partitions) {
  if (producer_ids_ == nullptr) return;
  std::vector<std::string> unread;
  const int64_t max = MaxProducerIdInTransactionLog(txn_storage_.get(), partitions, &unread);
  producer_ids_->RaiseFloor(max < std::numeric_limits<int64_t>::max() ? max + 1 : max);
  if (ctx_.log == nullptr) return;
  for (const std::string& why : unread) {
    ctx_.log->Write(LogLevel::kWarn, "producer_id_floor_incomplete",
                    LogFields()
                        .Add("reason", why)
                        .Add("effect", "producer ids named only there may be handed out again"));
  }
}

void RequestHandler::LoadGroups() {
  const int64_t start = ctx_.clock->NowMs();
  Result<GroupLoadReport> report = groups_->Load();
  if (ctx_.log == nullptr) return;
  if (!report.ok()) {
    ctx_.log->Write(LogLevel::kError, "group_coordinator_load_failed",
                    LogFields().Add("reason", report.status().ToString()));
    return;
  }
  LogFields f;
  f.Add("groups", report->groups)
      .Add("offsets", report->offsets)
      .Add("records", report->records)
      .Add("skipped", report->skipped)
      .Add("ms", ctx_.clock->NowMs() - start);
  // Nothing found (a new broker) is not worth a line at INFO.
  const bool found =
      report->groups > 0 || report->skipped > 0 || !report->failed_partitions.empty();
  ctx_.log->Write(found ? LogLevel::kInfo : LogLevel::kDebug, "group_coordinator_loaded", f);
  for (const std::string& why : report->failed_partitions) {
    ctx_.log->Write(LogLevel::kError, "group_partition_unreadable",
                    LogFields().Add("reason", why).Add("effect", "its groups are not served"));
  }
  for (const std::string& why : report->skipped_reasons) {
    ctx_.log->Write(LogLevel::kWarn, "group_record_skipped", LogFields().Add("reason", why));
  }
}

void RequestHandler::LoadTransactions() {
  const int64_t start = ctx_.clock->NowMs();
  Result<TxnLoadReport> report = txns_->Load();
  if (ctx_.log == nullptr) return;
  if (!report.ok()) {
    ctx_.log->Write(LogLevel::kError, "transaction_coordinator_load_failed",
                    LogFields().Add("reason", report.status().ToString()));
    return;
  }
  LogFields f;
  f.Add("transactional_ids", report->transactions)
      .Add("records", report->records)
      .Add("skipped", report->skipped)
      .Add("completed", report->completed)
      .Add("incomplete", report->incomplete)
      .Add("ongoing", report->ongoing)
      .Add("ms", ctx_.clock->NowMs() - start);
  const bool found =
      report->transactions > 0 || report->skipped > 0 || !report->failed_partitions.empty();
  ctx_.log->Write(found ? LogLevel::kInfo : LogLevel::kDebug, "transaction_coordinator_loaded", f);
  for (const std::string& why : report->failed_partitions) {
    ctx_.log->Write(
        LogLevel::kError, "transaction_partition_unreadable",
        LogFields().Add("reason", why).Add("effect", "its transactional ids are not served"));
  }
  for (const std::string& why : report->skipped_reasons) {
    ctx_.log->Write(LogLevel::kWarn, "transaction_record_skipped", LogFields().Add("reason", why));
  }
}

// open_txns_at_start_ was taken before the coordinator loaded, and the
// coordinator may have ended one of them since: a transaction it had left
// Ongoing whose timeout passed while the broker was down is aborted by its
// own timer, which can finish before this runs. The partition's producer
// state is the truth: its ABORT marker is there once the coordinator let go
// (it writes the markers before it records CompleteAbort).
bool RequestHandler::StillOpen(const OpenTxnAtStart& open) const {
  Log* log = ctx_.log_manager->GetLog(open.tp);
  if (log == nullptr) return false;
  for (const ProducerSnapshotEntry& e : log->ActiveProducerEntries()) {
    if (e.producer_id == open.producer_id) return e.current_txn_first_offset == open.first_offset;
  }
  return false;
}

void RequestHandler::AbortHangingTransactions() {
  if (!txns_->loaded()) return;
  const std::set<std::pair<int64_t, TopicPartition>> owned = txns_->OpenTransactionPartitions();
  const int64_t now = ctx_.clock->NowMs();
  for (const OpenTxnAtStart& open : open_txns_at_start_) {
    // A producer id the coordinator does not know never becomes one it
    // owns: new ids start above every id the logs hold (OpenProducerIds).
    // Owned now or ended already, in either order: the coordinator writes
    // the markers before it lets go.
    if (owned.count({open.producer_id, open.tp}) > 0 || !StillOpen(open)) continue;
    const int64_t delay =
        std::max<int64_t>(0, open.last_timestamp + ctx_.transactions.max_timeout_ms - now);
    if (ctx_.log != nullptr) {
      ctx_.log->Write(LogLevel::kWarn, "hanging_transaction_found",
                      LogFields()
                          .Add("partition", open.tp.ToString())
                          .Add("producer_id", open.producer_id)
                          .Add("producer_epoch", open.producer_epoch)
                          .Add("first_offset", open.first_offset)
                          .Add("abort_in_ms", delay));
    }
    scheduler_->ScheduleOnce("hanging-transaction-abort", delay, [this, open] {
      // Ended meanwhile (a retried EndTxn of a producer that came back, a
      // marker written by hand): nothing is left to abort, and a marker
      // with the old epoch would be refused.
      const bool open_still = StillOpen(open);
      Status s = open_still ? txn_markers_->WriteMarker(open.tp, open.producer_id,
                                                        open.producer_epoch, false)
                            : Status::Ok();
      if (ctx_.log == nullptr) return;
      LogFields f;
      f.Add("partition", open.tp.ToString())
          .Add("producer_id", open.producer_id)
          .Add("first_offset", open.first_offset);
      if (!s.ok()) f.Add("reason", s.ToString());
      const char* event = !open_still ? "hanging_transaction_ended_meanwhile"
                          : s.ok()    ? "hanging_transaction_aborted"
                                      : "hanging_transaction_abort_failed";
      ctx_.log->Write(s.ok() ? LogLevel::kInfo : LogLevel::kError, event, f);
    });
  }
  open_txns_at_start_.clear();
}

// The ids go to the first online dir. Every online dir's file is read, and
// the logs' largest producer id bounds the start from below, so an id is not
// reused when the dir that held the file went offline or the data came from
// elsewhere (Kafka, a copy).
Status RequestHandler::OpenProducerIds() {
  std::vector<std::string> online;
  for (const std::string& dir : ctx_.config.log_dirs) {
    if (!ctx_.log_manager->failure_channel().IsOffline(dir)) online.push_back(dir);
  }
  if (online.empty()) return Status::Ok();
  int64_t first_free = 0;
  // One pass over every producer at start-up: the largest id, and the open
  // transactions AbortHangingTransactions looks at once the transaction
  // coordinator has loaded.
  for (Log* log : ctx_.log_manager->AllLogs()) {
    for (const ProducerSnapshotEntry& e : log->ActiveProducerEntries()) {
      first_free = std::max(first_free, e.producer_id + 1);
      if (e.current_txn_first_offset >= 0) {
        open_txns_at_start_.push_back({log->topic_partition(), e.producer_id, e.epoch,
                                       e.current_txn_first_offset, e.timestamp});
      }
    }
  }
  // A Kafka cluster's controller hands ids out in blocks it records in the
  // metadata log: all below its next block, read by the first start's import
  // and kept with its mark (every start applies it: a start that stopped
  // before this point does not lose it).
  if (const std::optional<int64_t> kafka = ctx_.log_manager->kafka_next_producer_id(); kafka) {
    first_free = std::max(first_free, *kafka);
  }
  Result<std::unique_ptr<ProducerIdManager>> ids =
      ProducerIdManager::Open(FileSystem::Default(), online.front(), online, first_free);
  if (!ids.ok()) {
    return ids.status().WithContext(
        "producer ids (move the file away to restart from the logs' largest producer id)");
  }
  producer_ids_ = std::move(*ids);
  return Status::Ok();
}

std::optional<CoordinatorStatus> RequestHandler::GroupCoordinatorStatus() const {
  if (!groups_) return std::nullopt;
  return CoordinatorStatus{groups_->loaded(), int64_t(groups_->GroupCount())};
}

std::optional<TxnCoordinatorStatus> RequestHandler::TransactionCoordinatorStatus() const {
  if (!txns_) return std::nullopt;
  return TxnCoordinatorStatus{txns_->loaded(), int64_t(txns_->TransactionCount()),
                              int64_t(txns_->PendingMarkerCount())};
}

std::vector<DelayedOperationGauge> RequestHandler::DelayedOperations() const {
  const DelayedOperationStats fetches = purgatory_.stats();
  std::vector<DelayedOperationGauge> gauges = {
      {DelayedOperationKind::kFetchPartition, fetches.delayed, fetches.expired}};
  if (!groups_) return gauges;
  for (DelayedOperationKind kind :
       {DelayedOperationKind::kGroupJoin, DelayedOperationKind::kGroupSync,
        DelayedOperationKind::kMemberHeartbeat, DelayedOperationKind::kPendingMember}) {
    const DelayedOperationStats s = groups_->DeadlineStats(kind);
    gauges.push_back({kind, s.delayed, s.expired});
  }
  return gauges;
}

RequestHandler::~RequestHandler() {
  if (coordinator_loader_.joinable()) coordinator_loader_.join();
  // No deadline fires once the members it would touch start to go.
  scheduler_->Shutdown();
}

// A frame handed over before Shutdown() is handled (draining answers it);
// one handed over after is refused by closing.
void RequestHandler::Handle(std::vector<uint8_t> frame, ClientScopePtr client, Respond respond) {
  if (shut_down_) return respond(std::nullopt, true);
  // Copied now, on the network thread: the server sets it per request.
  std::function<void()> frame_done = client != nullptr ? client->frame_done : nullptr;
  asio::post(request_executor_,
             [this, frame = std::move(frame), client = std::move(client),
              respond = std::move(respond), frame_done = std::move(frame_done)]() mutable {
               HandleRequest(frame, client, respond);
               // A parked Fetch keeps only its decoded request, never the frame.
               FramePool::Default().Give(std::move(frame));
               if (frame_done) frame_done();
             });
}

void RequestHandler::ClientGone(const ClientScopePtr& client) {
  purgatory_.CompleteFor(client);
}

// Parked fetches are forced on the pool (their reads are disk I/O); a fetch
// that parks later is forced at once (the purgatory is closed).
void RequestHandler::Shutdown() {
  shut_down_ = true;
  asio::post(request_executor_, [this] {
    purgatory_.CompleteAll();
    if (groups_) groups_->Shutdown();
    if (txns_) txns_->Shutdown();
  });
}

void RequestHandler::HandleRequest(std::vector<uint8_t>& frame, const ClientScopePtr& client,
                                   const Respond& respond) {
  HandlerEnv env{ctx_,  topics_, purgatory_,          hw_mu_,        slices_,
                 frame, client,  producer_ids_.get(), groups_.get(), txns_.get()};
  ProtocolReader reader(frame);
  Result<RequestHeader> parsed = DecodeRequestHeader(reader);
  if (!parsed.ok()) {
    // Key and version as far as the frame has them, for the log line.
    const int16_t key = frame.size() >= 2 ? int16_t(frame[0] << 8 | frame[1]) : -1;
    const int16_t version = frame.size() >= 4 ? int16_t(frame[2] << 8 | frame[3]) : -1;
    LogRejectedRequest(ctx_.log, nullptr, key, version, RejectKind::kMalformedHeader,
                       parsed.status().ToString(), "close");
    return respond(std::nullopt, true);
  }
  const RequestHeader& header = *parsed;
  const ApiHandlerRow* row = FindApiHandler(header.api_key);
  const ApiVersionRange* range = HandledVersions(header.api_key);
  if (row == nullptr || range == nullptr) {
    LogRejectedRequest(
        ctx_.log, &header, int16_t(header.api_key), header.api_version, RejectKind::kUnknownApiKey,
        fmt::format("api key {} is not supported by this broker", int16_t(header.api_key)),
        "close");
    return respond(std::nullopt, true);
  }
  if (header.api_version < range->min || header.api_version > range->max) {
    // Only a too-new ApiVersions gets an answer, so the client can pick (§3.1).
    if (header.api_key == ApiKey::kApiVersions && header.api_version > range->max) {
      return HandleUnsupportedApiVersions(env, header, respond);
    }
    LogRejectedRequest(
        ctx_.log, &header, int16_t(header.api_key), header.api_version,
        RejectKind::kUnsupportedVersion,
        fmt::format("{} version {} is not supported (supported {}-{})", ApiKeyName(header.api_key),
                    header.api_version, range->min, range->max),
        "close");
    return respond(std::nullopt, true);
  }
  row->handle(env, header, reader, respond);
}

ErrorCode ErrorCodeForLogStatus(const TopicRegistry& topics, const TopicPartition& tp,
                                const Log* log, const Status& status) {
  const ErrorCode code = ErrorCodeForStorageStatus(status);
  ErrorCode now = ErrorCode::kNone;
  if (code == ErrorCode::kUnknownServerError) {
    // An error the failure took the log's dir offline for (kNotFound: a
    // segment roll found the partition dir deleted underneath) is the
    // storage error Kafka answers for any write to a failed dir.
    topics.ServedLog(tp, &now);
    return now == ErrorCode::kKafkaStorageError ? now : code;
  }
  if (code != ErrorCode::kKafkaStorageError) return code;
  const Log* served = topics.ServedLog(tp, &now);
  // Gone, or a new log of a topic created again under the name; an offline
  // dir stays a storage error.
  if (served != log && now != ErrorCode::kKafkaStorageError) {
    return ErrorCode::kUnknownTopicOrPartition;
  }
  return code;
}

ErrorCode ErrorCodeForLogRead(const TopicRegistry& topics, const TopicPartition& tp, const Log* log,
                              const Status& status) {
  if (status.IsCorruption()) {
    return ErrorCodeForLogStatus(topics, tp, log, Status::IoError(status.message()));
  }
  return ErrorCodeForLogStatus(topics, tp, log, status);
}

ErrorCode ErrorCodeForStorageStatus(const Status& status) {
  switch (status.code()) {
    case StatusCode::kOk:
      return ErrorCode::kNone;
    case StatusCode::kIoError:
      return ErrorCode::kKafkaStorageError;
    case StatusCode::kOutOfRange:
      return ErrorCode::kOffsetOutOfRange;
    case StatusCode::kCorruption:
      return ErrorCode::kCorruptMessage;
    case StatusCode::kTooLarge:
      return ErrorCode::kMessageTooLarge;
    case StatusCode::kInvalidRecord:
      return ErrorCode::kInvalidRecord;
    case StatusCode::kInvalidTxnState:
      if (auto rejection = ProducerAppendErrorOf(status)) {
        return ErrorCodeForProducerAppend(*rejection);
      }
      return ErrorCode::kInvalidTxnState;
    default:
      return ErrorCode::kUnknownServerError;
  }
}

}  // namespace daruma::broker
