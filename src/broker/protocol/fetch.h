// Fetch (key 1), versions 4–11, none flexible (spec §3.4).
//
//   Request:  ReplicaId int32, MaxWaitMs int32, MinBytes int32, MaxBytes int32,
//             IsolationLevel int8, SessionId int32 (v7+), SessionEpoch int32
//             (v7+), Topics [Topic string, Partitions [Partition int32,
//             CurrentLeaderEpoch int32 (v9+), FetchOffset int64,
//             LogStartOffset int64 (v5+), PartitionMaxBytes int32]],
//             ForgottenTopicsData [Topic string, Partitions []int32] (v7+),
//             RackId string (v11)
//   Response: ThrottleTimeMs int32, ErrorCode int16 (v7+), SessionId int32
//             (v7+), Responses [Topic string, Partitions [PartitionIndex int32,
//             ErrorCode int16, HighWatermark int64, LastStableOffset int64,
//             LogStartOffset int64 (v5+), AbortedTransactions nullable
//             [ProducerId int64, FirstOffset int64], PreferredReadReplica
//             int32 (v11), Records nullable records (int32 length)]]
//
// Response records are OWNED bytes (whole batches, copied once into the
// response frame by the encoder) followed by `file_records`: ranges of
// segment files the encoder splices into the frame unread (zero copy, see
// response_frame.h; a frame with splices must be taken with ReleaseFrame).
// Decoding always yields bytes. Records default to an EMPTY record set:
// a Fetch response must never carry null (kafka-python cannot parse it);
// nullopt exists only so decoding a peer's null is lossless.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "broker/protocol/error_codes.h"
#include "broker/protocol/protocol_reader.h"
#include "broker/protocol/protocol_writer.h"
#include "broker/protocol/response_frame.h"
#include "common/bytes.h"
#include "common/status.h"

namespace daruma::broker {

struct FetchRequest {
  struct Partition {
    int32_t partition = 0;
    int32_t current_leader_epoch = -1;  // v9+
    int64_t fetch_offset = 0;
    int64_t log_start_offset = -1;  // v5+
    int32_t partition_max_bytes = 0;
    bool operator==(const Partition&) const = default;
  };
  struct Topic {
    std::string topic;
    std::vector<Partition> partitions;
    bool operator==(const Topic&) const = default;
  };
  struct ForgottenTopic {
    std::string topic;
    std::vector<int32_t> partitions;
    bool operator==(const ForgottenTopic&) const = default;
  };
  int32_t replica_id = -1;
  int32_t max_wait_ms = 0;
  int32_t min_bytes = 0;
  int32_t max_bytes = 0x7fffffff;
  int8_t isolation_level = 0;  // 0 READ_UNCOMMITTED, 1 READ_COMMITTED
  int32_t session_id = 0;      // v7+
  int32_t session_epoch = -1;  // v7+
  std::vector<Topic> topics;
  std::vector<ForgottenTopic> forgotten_topics_data;  // v7+
  std::string rack_id;                                // v11

  bool operator==(const FetchRequest&) const = default;
};

struct FetchResponse {
  struct AbortedTransaction {
    int64_t producer_id = 0;
    int64_t first_offset = 0;
    bool operator==(const AbortedTransaction&) const = default;
  };
  struct Partition {
    int32_t partition_index = 0;
    ErrorCode error_code = ErrorCode::kNone;
    int64_t high_watermark = -1;
    int64_t last_stable_offset = -1;
    int64_t log_start_offset = -1;  // v5+
    // nullopt = null (READ_UNCOMMITTED); READ_COMMITTED sends an array.
    std::optional<std::vector<AbortedTransaction>> aborted_transactions;
    int32_t preferred_read_replica = -1;  // v11
    std::optional<Bytes> records = Bytes{};
    std::vector<FileSlice> file_records;  // sent after `records`; encode only
    bool operator==(const Partition&) const = default;
  };
  struct Topic {
    std::string topic;
    std::vector<Partition> partitions;
    bool operator==(const Topic&) const = default;
  };
  int32_t throttle_time_ms = 0;
  ErrorCode error_code = ErrorCode::kNone;  // v7+
  int32_t session_id = 0;                   // v7+
  std::vector<Topic> responses;

  bool operator==(const FetchResponse&) const = default;
};

Result<FetchRequest> DecodeFetchRequest(ProtocolReader& reader, int16_t version);
void EncodeFetchResponse(const FetchResponse& response, int16_t version, ProtocolWriter& writer);
void EncodeFetchRequest(const FetchRequest& request, int16_t version, ProtocolWriter& writer);
Result<FetchResponse> DecodeFetchResponse(ProtocolReader& reader, int16_t version);

}  // namespace daruma::broker
