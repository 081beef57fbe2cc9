#include "tools/transaction_log_decoder.h"

#include <fmt/format.h>

#include "tools/dump_message_reader.h"

namespace daruma::tools {
namespace {

const char* StateName(int8_t status) {
  static constexpr const char* kNames[] = {"Empty",        "Ongoing",          "PrepareCommit",
                                           "PrepareAbort", "CompleteCommit",   "CompleteAbort",
                                           "Dead",         "PrepareEpochFence"};
  return status >= 0 && status < 8 ? kNames[status] : nullptr;
}

Result<std::string> ReadPartitions(MessageReader& r) {
  DARUMA_ASSIGN_OR_RETURN(int32_t topics, r.ArrayLength("transactionPartitions"));
  std::string out;
  for (int32_t i = 0; i < topics; ++i) {
    DARUMA_ASSIGN_OR_RETURN(std::string topic, r.String("topic"));
    DARUMA_ASSIGN_OR_RETURN(int32_t n, r.ArrayLength("partitionIds"));
    for (int32_t j = 0; j < n; ++j) {
      DARUMA_ASSIGN_OR_RETURN(int32_t partition, r.Int32("partitionIds"));
      if (!out.empty()) out += ",";
      out += fmt::format("{}-{}", topic, partition);
    }
    DARUMA_RETURN_IF_ERROR(r.SkipTaggedFields("PartitionsSchema tagged fields"));
  }
  return out;
}

Result<std::string> ReadValue(const std::string& value) {
  MessageReader versions(value, false);
  DARUMA_ASSIGN_OR_RETURN(int16_t version, versions.Int16("version"));
  if (version < 0 || version > 1) {
    return Status::Corruption(
        fmt::format("Unknown version {} from the transaction log message value", version));
  }
  MessageReader r(std::string_view(value).substr(2), /*flexible=*/version >= 1);
  DARUMA_ASSIGN_OR_RETURN(int64_t producer_id, r.Int64("producerId"));
  DARUMA_ASSIGN_OR_RETURN(int16_t producer_epoch, r.Int16("producerEpoch"));
  DARUMA_ASSIGN_OR_RETURN(int32_t timeout_ms, r.Int32("transactionTimeoutMs"));
  DARUMA_ASSIGN_OR_RETURN(int8_t status, r.Int8("transactionStatus"));
  const char* state = StateName(status);
  if (state == nullptr) {
    return Status::Corruption(fmt::format("Unknown transaction state id {}", status));
  }
  DARUMA_ASSIGN_OR_RETURN(std::string partitions, ReadPartitions(r));
  DARUMA_ASSIGN_OR_RETURN(int64_t last_update_ms, r.Int64("transactionLastUpdateTimestampMs"));
  DARUMA_RETURN_IF_ERROR(r.Int64("transactionStartTimestampMs").status());
  DARUMA_RETURN_IF_ERROR(r.SkipTaggedFields("TransactionLogValue tagged fields"));
  if (status == 0) partitions.clear();  // Kafka ignores an Empty txn's partitions
  return fmt::format(
      "producerId:{},producerEpoch:{},state={},partitions=[{}],txnLastUpdateTimestamp={},"
      "txnTimeoutMs={}",
      producer_id, producer_epoch, state, partitions, last_update_ms, timeout_ms);
}

}  // namespace

DecodedKeyValue DecodeTransactionLogRecord(const Record& record) {
  auto error = [&](const std::string& why) {
    return std::optional<std::string>(
        fmt::format("Error at offset {}, skipping. {}", record.offset, why));
  };
  if (!record.key) return {std::nullopt, error("message had a missing key")};
  MessageReader r(*record.key, /*flexible=*/false);
  auto version = r.Int16("key version");
  if (!version.ok()) return {std::nullopt, error(version.status().message())};
  if (*version != 0) return {fmt::format("unknown::version={}", *version), std::nullopt};
  auto id = r.String("transactionalId");
  if (!id.ok()) return {std::nullopt, error(id.status().message())};
  DecodedKeyValue out{"transaction_metadata::transactionalId=" + *id, std::nullopt};
  if (!record.value) {
    out.payload = "<DELETE>";
    return out;
  }
  auto value = ReadValue(*record.value);
  out.payload = value.ok() ? *value : *error(value.status().message());
  return out;
}

}  // namespace daruma::tools
