// Shared by the transaction coordinator tests that run over real logs
// (txn_malformed_input_test.cc, the transaction crash matrix): TxnNode, the
// broker's transactional half on one LogManager (`__transaction_state`,
// `__consumer_offsets` with a GroupCoordinator, data topics, producer ids in
// the log dir), a marker writer doing what the broker's LogTxnMarkerWriter
// does, transactional produce as the broker's produce handler does it, and a
// read_committed reader that filters aborted transactions as Kafka's
// consumer does.
#pragma once

#include <algorithm>
#include <cstdint>
#include <map>
#include <memory>
#include <nlohmann/json.hpp>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "coordinator/group_test_support.h"
#include "coordinator/producer_id_manager.h"
#include "coordinator/transaction_coordinator.h"
#include "coordinator/txn_marker_append.h"
#include "log/producer_append_info.h"
#include "record/record_batch_builder.h"

namespace daruma::testing {

inline constexpr char kTxnStateTopic[] = "__transaction_state";

// Kafka's `__transaction_state` configs as the broker sets them
// (RequestHandler::StartCoordinators): compacted, never compressed.
inline TopicConfigOverrides TxnStateTopicOverrides(int32_t segment_bytes) {
  return {{"cleanup.policy", "compact"},
          {"compression.type", "uncompressed"},
          {"segment.bytes", std::to_string(segment_bytes)}};
}

// A stable topic id per name, so a restart finds the same id it wrote.
inline Uuid TopicIdOf(const std::string& topic) {
  std::array<uint8_t, 16> bytes{};
  for (size_t i = 0; i < topic.size(); ++i) bytes[i % 16] = uint8_t(bytes[i % 16] * 31 + topic[i]);
  bytes[0] |= 1;  // never the zero id
  return Uuid(bytes);
}

// LogGroupStorage's view of an internal topic as the broker's TopicRegistry
// gives it (OffsetsLogFor for any topic name).
inline LogGroupStorage::LogFor InternalLogFor(LogManager* manager, std::string topic,
                                              int32_t partitions, LogConfig defaults,
                                              TopicConfigOverrides overrides) {
  return [=](int32_t partition, bool create) -> Result<Log*> {
    const TopicPartition tp{topic, partition};
    if (create && manager->GetLog(tp) == nullptr) {
      DARUMA_ASSIGN_OR_RETURN(LogConfig config, ApplyTopicConfigOverrides(defaults, overrides));
      for (int32_t p = 0; p < partitions; ++p) {
        DARUMA_ASSIGN_OR_RETURN(Log * log,
                                manager->GetOrCreateLog({topic, p}, TopicIdOf(topic), config));
        log->UpdateHighWatermark(log->log_end_offset());
      }
      manager->SetTopicConfig(topic, config, overrides);
    }
    return manager->GetLog(tp);
  };
}

// The broker's LogTxnMarkerWriter without its purgatory: AppendTxnMarker,
// the high watermark raised to the log end, and for a `__consumer_offsets`
// partition the group coordinator told (CompleteTransaction).
class LogMarkerWriter final : public TxnMarkerWriter {
 public:
  LogMarkerWriter(LogRegistry* logs, Clock* clock, GroupCoordinator* groups)
      : logs_(logs), clock_(clock), groups_(groups) {}
  Status WriteMarker(const TopicPartition& tp, int64_t producer_id, int16_t producer_epoch,
                     bool commit) override {
    Log* log = logs_->GetLog(tp);
    if (log == nullptr) return Status::NotFound(tp.ToString() + " does not exist");
    DARUMA_RETURN_IF_ERROR(
        AppendTxnMarker(log, producer_id, producer_epoch, commit, clock_->NowMs()));
    const int64_t end = log->log_end_offset();
    if (end > log->high_watermark()) log->UpdateHighWatermark(end);
    if (groups_ != nullptr && tp.topic == kOffsetsTopic) {
      groups_->CompleteTransaction(producer_id, tp.partition, commit);
    }
    ++written;
    return Status::Ok();
  }
  int64_t written = 0;

 private:
  LogRegistry* logs_;
  Clock* clock_;
  GroupCoordinator* groups_;
};

// One transactional batch of `values` (key `key`), as a Kafka producer
// builds it: producer id, epoch, base sequence, the transactional attribute.
inline Bytes TxnBatch(int64_t producer_id, int16_t epoch, int32_t base_sequence,
                      const std::string& key, const std::vector<std::string>& values,
                      int64_t now_ms) {
  BatchBuilderOptions options;
  options.producer_id = producer_id;
  options.producer_epoch = epoch;
  options.base_sequence = base_sequence;
  options.is_transactional = true;
  std::vector<RecordInput> records;
  for (const std::string& v : values) {
    RecordInput r;
    r.timestamp = now_ms;
    r.key = key;
    r.value = v;
    records.push_back(std::move(r));
  }
  Result<Bytes> batch = BuildRecordBatch(options, records);
  EXPECT_TRUE(batch.ok()) << batch.status().ToString();
  return batch.ok() ? std::move(*batch) : Bytes{};
}

// A transactional produce's answer: the coordinator's verification, then
// (only when it passed) the log's append.
struct TxnProduceResult {
  ErrorCode verified = ErrorCode::kNone;
  Status append = Status::Ok();
  int64_t base_offset = -1;
  bool ok() const { return verified == ErrorCode::kNone && append.ok(); }
};

// The produce handler's path for a transactional batch with acks=-1: the
// batch is appended (client origin: sequences checked) under the
// transaction's lock only if the coordinator verifies it, flushed when the
// topic flushes every message, and the high watermark raised.
inline TxnProduceResult ProduceTxnBatch(TransactionCoordinator& txns, Log* log,
                                        const std::string& transactional_id, ByteSpan batch) {
  TxnProduceResult out;
  const RecordBatchView view(batch);
  out.verified = txns.WithOngoingTransaction(
      transactional_id, view.producer_id(), view.producer_epoch(), log->topic_partition(), [&] {
        Result<LogAppendInfo> info = log->AppendAsLeader(batch, 0);
        if (!info.ok()) {
          out.append = info.status();
          return;
        }
        const int64_t end = log->log_end_offset();
        if (log->config_snapshot().flush_messages <= 1 && log->recovery_point() < end) {
          out.append = log->Flush(end);
          if (!out.append.ok()) return;
        }
        if (end > log->high_watermark()) log->UpdateHighWatermark(end);
        out.base_offset = info->first_offset;
      });
  return out;
}

// The records a read_committed consumer gets from `log`, fetching from the
// log start to the last stable offset. Each fetch's aborted-transaction list
// is applied as Kafka's consumer does (CompletedFetch.nextFetchedRecord): a
// producer whose aborted transaction starts at or before a batch's last
// offset is aborted from there on, its transactional batches are skipped
// until its ABORT marker, and control batches are never returned.
inline Result<std::vector<Record>> ReadCommitted(Log* log) {
  std::vector<Record> out;
  int64_t next = log->log_start_offset();
  const int64_t stable = log->last_stable_offset();
  while (next < stable) {
    DARUMA_ASSIGN_OR_RETURN(FetchDataInfo chunk,
                            log->Read(next, 1 << 20, FetchIsolation::kTxnCommitted, true));
    if (chunk.records.empty()) break;
    std::vector<AbortedTxn> aborted = chunk.aborted_transactions;
    std::sort(aborted.begin(), aborted.end(), [](const AbortedTxn& a, const AbortedTxn& b) {
      return a.first_offset < b.first_offset;
    });
    size_t next_aborted = 0;
    std::set<int64_t> aborted_producers;
    ByteSpan rest(chunk.records);
    while (rest.size() >= size_t(kLogOverhead)) {
      const size_t size =
          size_t(LoadBe32(rest.data() + batch_layout::kLength)) + size_t(kLogOverhead);
      if (size > rest.size()) break;
      DARUMA_ASSIGN_OR_RETURN(RecordBatchView batch, RecordBatchView::Parse(rest.subspan(0, size)));
      rest = rest.subspan(size);
      const int64_t fetch_offset = next;
      next = batch.next_offset();
      if (batch.has_producer_id()) {
        while (next_aborted < aborted.size() &&
               aborted[next_aborted].first_offset <= batch.last_offset()) {
          aborted_producers.insert(aborted[next_aborted++].producer_id);
        }
      }
      DARUMA_ASSIGN_OR_RETURN(std::vector<Record> records, batch.DecodeRecords());
      if (batch.is_control()) {
        if (!records.empty() && records[0].key) {
          Result<ControlRecordType> type = ParseControlRecordKey(AsBytes(*records[0].key));
          if (type.ok() && *type == ControlRecordType::kAbort) {
            aborted_producers.erase(batch.producer_id());
          }
        }
        continue;
      }
      if (batch.is_transactional() && aborted_producers.count(batch.producer_id()) > 0) continue;
      for (Record& r : records) {
        if (r.offset >= fetch_offset) out.push_back(std::move(r));
      }
    }
  }
  return out;
}

// The broker's transactional half on one LogManager (see the top of this
// file). Start() = a broker start (log recovery, every log's high watermark
// at its log end as a single-replica leader has it, producer ids opened as
// the broker does, coordinators built); Load() loads groups then
// transactions, as the broker's loader thread does.
struct TxnNodeConfig {
  std::string log_dir;
  LogConfig defaults;  // the broker's log config (every topic)
  std::vector<std::pair<std::string, int32_t>> data_topics;
  int32_t state_segment_bytes = 104857600;    // transaction.state.log.segment.bytes
  int32_t offsets_segment_bytes = 104857600;  // offsets.topic.segment.bytes
  int32_t offsets_partitions = 3;
  int32_t producer_id_block = ProducerIdManager::kDefaultBlockSize;
  TransactionCoordinatorConfig txn;  // txn.state_log_partitions partitions
  GroupCoordinatorConfig groups;
};

class TxnNode {
 public:
  TxnNode(TxnNodeConfig config, GroupTime* time) : config_(std::move(config)), time_(time) {
    config_.groups.offsets_partitions = config_.offsets_partitions;
  }
  ~TxnNode() { Drop(); }
  TxnNode(const TxnNode&) = delete;
  TxnNode& operator=(const TxnNode&) = delete;

  // `options.fs` and `options.clock` name the file system and the clock.
  Status Start(LogManagerOptions options) {
    Drop();
    fs_ = options.fs;
    manager_ = std::make_unique<LogManager>(options);
    DARUMA_RETURN_IF_ERROR(manager_->Startup({config_.log_dir}, config_.defaults, 1));
    if (manager_->HasFailures()) {
      return Status::IoError("start-up left the log dir offline: " + manager_->ReportJson().dump());
    }
    for (Log* log : manager_->AllLogs()) log->UpdateHighWatermark(log->log_end_offset());
    for (const auto& [topic, partitions] : config_.data_topics) {
      for (int32_t p = 0; p < partitions; ++p) {
        DARUMA_ASSIGN_OR_RETURN(
            Log * log, manager_->GetOrCreateLog({topic, p}, TopicIdOf(topic), config_.defaults));
        log->UpdateHighWatermark(log->log_end_offset());
      }
    }
    // RequestHandler::OpenProducerIds: above every producer id the logs hold.
    int64_t first_free = 0;
    for (Log* log : manager_->AllLogs()) {
      for (const ProducerSnapshotEntry& e : log->ActiveProducerEntries()) {
        first_free = std::max(first_free, e.producer_id + 1);
      }
    }
    DARUMA_ASSIGN_OR_RETURN(
        producer_ids_, ProducerIdManager::Open(fs_, config_.log_dir, {config_.log_dir}, first_free,
                                               config_.producer_id_block));
    offsets_storage_ = std::make_unique<LogGroupStorage>(
        OffsetsLogFor(manager_.get(), config_.offsets_partitions, config_.defaults,
                      OffsetsTopicOverrides(config_.offsets_segment_bytes)),
        &time_->clock);
    state_storage_ = std::make_unique<LogGroupStorage>(
        InternalLogFor(manager_.get(), kTxnStateTopic, config_.txn.state_log_partitions,
                       config_.defaults, TxnStateTopicOverrides(config_.state_segment_bytes)),
        &time_->clock);
    groups_ = std::make_unique<GroupCoordinator>(config_.groups, offsets_storage_.get(),
                                                 &time_->scheduler);
    markers_ = std::make_unique<LogMarkerWriter>(manager_.get(), &time_->clock, groups_.get());
    txns_ = std::make_unique<TransactionCoordinator>(
        config_.txn, state_storage_.get(), markers_.get(),
        [ids = producer_ids_.get()] { return ids->Generate(); }, &time_->scheduler);
    return Status::Ok();
  }

  // Groups first: a transaction the load finishes may complete offsets.
  Result<TxnLoadReport> Load() {
    DARUMA_ASSIGN_OR_RETURN(group_report_, groups_->Load());
    return txns_->Load();
  }

  // A clean stop: the coordinators stop, then the LogManager shuts down.
  Status Shutdown() {
    if (manager_ == nullptr) return Status::Ok();
    txns_->Shutdown();
    groups_->Shutdown();
    const Status st = manager_->Shutdown();
    Drop();
    return st;
  }
  // Everything dropped without a shutdown: what a crash leaves.
  void Drop() {
    txns_.reset();
    markers_.reset();
    groups_.reset();
    state_storage_.reset();
    offsets_storage_.reset();
    producer_ids_.reset();
    manager_.reset();
  }

  bool started() const { return manager_ != nullptr; }
  TransactionCoordinator& txns() { return *txns_; }
  GroupCoordinator& groups() { return *groups_; }
  LogManager& manager() { return *manager_; }
  LogMarkerWriter& markers() { return *markers_; }
  GroupStorage& state_storage() { return *state_storage_; }
  const GroupLoadReport& group_report() const { return group_report_; }
  const TxnNodeConfig& config() const { return config_; }
  Log* log(const TopicPartition& tp) { return manager_->GetLog(tp); }
  TopicPartition OffsetsPartitionOf(const std::string& group) const {
    return {kOffsetsTopic, OffsetsPartitionFor(group, config_.offsets_partitions)};
  }

 private:
  TxnNodeConfig config_;
  GroupTime* time_;
  FileSystem* fs_ = nullptr;
  std::unique_ptr<LogManager> manager_;
  std::unique_ptr<ProducerIdManager> producer_ids_;
  std::unique_ptr<LogGroupStorage> offsets_storage_;
  std::unique_ptr<LogGroupStorage> state_storage_;
  std::unique_ptr<GroupCoordinator> groups_;
  std::unique_ptr<LogMarkerWriter> markers_;
  std::unique_ptr<TransactionCoordinator> txns_;
  GroupLoadReport group_report_;
};

// A transactional producer as a client sees itself: its id, the producer id
// and epoch InitProducerId gave it, and the next sequence per partition
// (each new epoch starts every partition at 0).
struct TxnClient {
  std::string id;
  int64_t producer_id = -1;
  int16_t epoch = -1;
  std::map<TopicPartition, int32_t> sequences;

  void Adopt(const InitProducerIdResult& r) {
    producer_id = r.producer_id;
    epoch = r.producer_epoch;
    sequences.clear();
  }
  // Produces `values` to `tp` with the next sequence, which advances only
  // when the append succeeded.
  TxnProduceResult Produce(TransactionCoordinator& txns, Log* log, const std::string& key,
                           const std::vector<std::string>& values, int64_t now_ms) {
    int32_t& seq = sequences[log->topic_partition()];
    const Bytes batch = TxnBatch(producer_id, epoch, seq, key, values, now_ms);
    TxnProduceResult r = ProduceTxnBatch(txns, log, id, batch);
    if (r.ok()) seq += int32_t(values.size());
    return r;
  }
};

}  // namespace daruma::testing
