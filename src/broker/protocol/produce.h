// Produce (key 0), versions 0–7, none flexible (spec §3.3).
//
//   Request:  TransactionalId nullable string (v3+), Acks int16, TimeoutMs
//             int32, TopicData [Name string, PartitionData [Index int32,
//             Records nullable records (int32 length)]]
//   Response: Responses [Name string, PartitionResponses [Index int32,
//             ErrorCode int16, BaseOffset int64, LogAppendTimeMs int64 (v2+,
//             default -1), LogStartOffset int64 (v5+, default -1)]],
//             ThrottleTimeMs int32 (v1+)
//
// Records on decode are VIEWS into the request frame (no copy): the frame
// must outlive the ProduceRequest. nullopt = a null record set (length -1),
// distinct from an empty one. The codec does not look inside the records.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "broker/protocol/error_codes.h"
#include "broker/protocol/protocol_reader.h"
#include "broker/protocol/protocol_writer.h"
#include "common/bytes.h"
#include "common/status.h"

namespace daruma::broker {

struct ProduceRequest {
  struct Partition {
    int32_t index = 0;
    std::optional<ByteSpan> records;  // view into the frame; nullopt = null
    // Compares record CONTENTS (spans have no operator==).
    bool operator==(const Partition& other) const;
  };
  struct Topic {
    std::string name;
    std::vector<Partition> partitions;
    bool operator==(const Topic&) const = default;
  };
  std::optional<std::string> transactional_id;  // v3+
  int16_t acks = 1;
  int32_t timeout_ms = 0;
  std::vector<Topic> topics;

  bool operator==(const ProduceRequest&) const = default;
};

struct ProduceResponse {
  struct Partition {
    int32_t index = 0;
    ErrorCode error_code = ErrorCode::kNone;
    int64_t base_offset = -1;
    int64_t log_append_time_ms = -1;  // v2+
    int64_t log_start_offset = -1;    // v5+
    bool operator==(const Partition&) const = default;
  };
  struct Topic {
    std::string name;
    std::vector<Partition> partitions;
    bool operator==(const Topic&) const = default;
  };
  std::vector<Topic> responses;
  int32_t throttle_time_ms = 0;  // v1+

  bool operator==(const ProduceResponse&) const = default;
};

Result<ProduceRequest> DecodeProduceRequest(ProtocolReader& reader, int16_t version);
void EncodeProduceResponse(const ProduceResponse& response, int16_t version,
                           ProtocolWriter& writer);
void EncodeProduceRequest(const ProduceRequest& request, int16_t version, ProtocolWriter& writer);
Result<ProduceResponse> DecodeProduceResponse(ProtocolReader& reader, int16_t version);

}  // namespace daruma::broker
