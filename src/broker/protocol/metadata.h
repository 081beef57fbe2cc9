// Metadata (key 3), versions 0–4, none flexible (spec §3.2).
//
//   Request:  Topics [Name string] (nullable v1+), AllowAutoTopicCreation
//             bool (v4, default true)
//   Response: ThrottleTimeMs int32 (v3+), Brokers [NodeId int32, Host string,
//             Port int32, Rack nullable string (v1+)], ClusterId nullable
//             string (v2+), ControllerId int32 (v1+), Topics [ErrorCode int16,
//             Name string, IsInternal bool (v1+), Partitions [ErrorCode int16,
//             PartitionIndex int32, LeaderId int32, ReplicaNodes []int32,
//             IsrNodes []int32]]
//
// `topics == nullopt` means "all topics" in EVERY version: decoding v0
// normalises its empty array (v0's "all topics") to nullopt, and encoding
// nullopt at v0 writes an empty array. An empty vector at v1+ means "no
// topics" (brokers only).
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "broker/protocol/error_codes.h"
#include "broker/protocol/protocol_reader.h"
#include "broker/protocol/protocol_writer.h"
#include "common/status.h"

namespace daruma::broker {

struct MetadataRequest {
  std::optional<std::vector<std::string>> topics;  // nullopt = all topics
  bool allow_auto_topic_creation = true;           // v4+

  bool operator==(const MetadataRequest&) const = default;
};

struct MetadataResponse {
  struct Broker {
    int32_t node_id = 0;
    std::string host;
    int32_t port = 0;
    std::optional<std::string> rack;  // v1+
    bool operator==(const Broker&) const = default;
  };
  struct Partition {
    ErrorCode error_code = ErrorCode::kNone;
    int32_t partition_index = 0;
    int32_t leader_id = 0;
    std::vector<int32_t> replica_nodes;
    std::vector<int32_t> isr_nodes;
    bool operator==(const Partition&) const = default;
  };
  struct Topic {
    ErrorCode error_code = ErrorCode::kNone;
    std::string name;
    bool is_internal = false;  // v1+
    std::vector<Partition> partitions;
    bool operator==(const Topic&) const = default;
  };
  int32_t throttle_time_ms = 0;  // v3+
  std::vector<Broker> brokers;
  std::optional<std::string> cluster_id;  // v2+
  int32_t controller_id = -1;             // v1+
  std::vector<Topic> topics;

  bool operator==(const MetadataResponse&) const = default;
};

Result<MetadataRequest> DecodeMetadataRequest(ProtocolReader& reader, int16_t version);
void EncodeMetadataResponse(const MetadataResponse& response, int16_t version,
                            ProtocolWriter& writer);
void EncodeMetadataRequest(const MetadataRequest& request, int16_t version, ProtocolWriter& writer);
Result<MetadataResponse> DecodeMetadataResponse(ProtocolReader& reader, int16_t version);

}  // namespace daruma::broker
