#include "coordinator/transaction_log_records.h"

#include <fmt/format.h>

#include <map>
#include <vector>

#include "protocol/protocol_reader.h"
#include "protocol/protocol_writer.h"

namespace daruma {
namespace {

constexpr int16_t kKeyVersion = 0;
constexpr int16_t kValueVersion = 0;
constexpr int16_t kHighestValueVersion = 1;

// A decode that stopped early, or one that left bytes: kCorruption.
Status FinishTxnRecord(const ProtocolReader& reader, const char* what) {
  if (!reader.ok()) {
    return Status::Corruption(fmt::format("{}: {}", what, reader.status().message()));
  }
  if (!reader.AtEnd()) {
    return Status::Corruption(fmt::format("{}: {} unread bytes after byte {}", what,
                                          reader.remaining(), reader.position()));
  }
  return Status::Ok();
}

}  // namespace

Bytes EncodeTransactionLogKey(const std::string& transactional_id) {
  ProtocolWriter w;
  w.WriteInt16(kKeyVersion);
  w.WriteString(transactional_id, Encoding::kClassic);
  return w.Release();
}

Bytes EncodeTransactionLogValue(const TransactionMetadata& txn) {
  const Encoding e = Encoding::kClassic;
  ProtocolWriter w;
  w.WriteInt16(kValueVersion);
  w.WriteInt64(txn.producer_id);
  w.WriteInt16(txn.producer_epoch);
  w.WriteInt32(txn.timeout_ms);
  w.WriteInt8(int8_t(txn.state));
  if (txn.state == TransactionState::kEmpty) {
    w.WriteNullArray(e);
  } else {
    std::map<std::string, std::vector<int32_t>> by_topic;
    for (const TopicPartition& tp : txn.partitions) by_topic[tp.topic].push_back(tp.partition);
    w.WriteArrayCount(by_topic.size(), e);
    for (const auto& [topic, partitions] : by_topic) {
      w.WriteString(topic, e);
      w.WriteInt32Array(partitions, e);
    }
  }
  w.WriteInt64(txn.last_update_timestamp_ms);
  w.WriteInt64(txn.start_timestamp_ms);
  return w.Release();
}

Result<std::string> DecodeTransactionLogKey(ByteSpan key) {
  ProtocolReader r(key);
  const int16_t version = r.ReadInt16("TransactionLogKey.version");
  if (!r.ok()) return Status::Corruption("transaction log key: " + r.status().message());
  if (version != kKeyVersion) {
    return Status::Unsupported(fmt::format("transaction log key: unknown version {}", version));
  }
  std::string id = r.ReadString("TransactionLogKey.transactionalId", Encoding::kClassic);
  if (Status s = FinishTxnRecord(r, "transaction log key"); !s.ok()) return s;
  return id;
}

Result<TransactionMetadata> DecodeTransactionLogValue(ByteSpan value) {
  ProtocolReader r(value);
  const int16_t version = r.ReadInt16("TransactionLogValue.version");
  if (!r.ok()) return Status::Corruption("transaction log value: " + r.status().message());
  if (version < 0 || version > kHighestValueVersion) {
    return Status::Corruption(fmt::format("transaction log value: unknown version {}", version));
  }
  const bool flexible = version >= 1;
  const Encoding e = EncodingFor(flexible);
  TransactionMetadata txn;
  txn.producer_id = r.ReadInt64("TransactionLogValue.producerId");
  txn.producer_epoch = r.ReadInt16("TransactionLogValue.producerEpoch");
  txn.timeout_ms = r.ReadInt32("TransactionLogValue.transactionTimeoutMs");
  const int8_t status = r.ReadInt8("TransactionLogValue.transactionStatus");
  std::optional<size_t> topics =
      r.ReadNullableArrayCount("TransactionLogValue.transactionPartitions", e);
  for (size_t i = 0; r.ok() && topics && i < *topics; ++i) {
    std::string topic = r.ReadString("TransactionLogValue.transactionPartitions.topic", e);
    for (int32_t p :
         r.ReadInt32Array("TransactionLogValue.transactionPartitions.partitionIds", e)) {
      txn.partitions.insert(TopicPartition{topic, p});
    }
    if (flexible) r.SkipTaggedFields("TransactionLogValue.transactionPartitions");
  }
  txn.last_update_timestamp_ms =
      r.ReadInt64("TransactionLogValue.transactionLastUpdateTimestampMs");
  txn.start_timestamp_ms = r.ReadInt64("TransactionLogValue.transactionStartTimestampMs");
  if (flexible) {
    for (const TaggedField& field : r.ReadTaggedFields("TransactionLogValue")) {
      // Tag 0: the producer id of the last committed transaction (KIP-890).
      if (field.tag == 0 && field.data.size() == 8) {
        txn.previous_producer_id = int64_t(LoadBe64(field.data.data()));
      }
    }
  }
  if (Status s = FinishTxnRecord(r, "transaction log value"); !s.ok()) return s;
  std::optional<TransactionState> state = TransactionStateFromId(status);
  if (!state) {
    return Status::Corruption(
        fmt::format("transaction log value: unknown transaction state id {}", status));
  }
  txn.state = *state;
  // Kafka ignores the partitions of an Empty transaction.
  if (txn.state == TransactionState::kEmpty) txn.partitions.clear();
  return txn;
}

}  // namespace daruma
