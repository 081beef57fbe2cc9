#include "broker/protocol/metadata.h"

#include "broker/protocol/codec_util.h"

namespace daruma::broker {
namespace {

constexpr ApiKey kKey = ApiKey::kMetadata;

std::string ReadTopicName(ProtocolReader& r) {
  return r.ReadString("Topics.Name", kClassic);
}

void WritePartition(const MetadataResponse::Partition& p, ProtocolWriter& w) {
  w.WriteInt16(int16_t(p.error_code));
  w.WriteInt32(p.partition_index);
  w.WriteInt32(p.leader_id);
  w.WriteInt32Array(p.replica_nodes, kClassic);
  w.WriteInt32Array(p.isr_nodes, kClassic);
}

MetadataResponse::Partition ReadPartition(ProtocolReader& r) {
  MetadataResponse::Partition p;
  p.error_code = ErrorCode(r.ReadInt16("Topics.Partitions.ErrorCode"));
  p.partition_index = r.ReadInt32("Topics.Partitions.PartitionIndex");
  p.leader_id = r.ReadInt32("Topics.Partitions.LeaderId");
  p.replica_nodes = r.ReadInt32Array("Topics.Partitions.ReplicaNodes", kClassic);
  p.isr_nodes = r.ReadInt32Array("Topics.Partitions.IsrNodes", kClassic);
  return p;
}

}  // namespace

Result<MetadataRequest> DecodeMetadataRequest(ProtocolReader& r, int16_t version) {
  DARUMA_RETURN_IF_ERROR(CheckDecodeVersion(kKey, version, "request"));
  MetadataRequest req;
  if (version == 0) {
    // v0 arrays are not nullable; an empty one means "all topics".
    std::vector<std::string> topics = r.ReadArray<std::string>("Topics", kClassic, ReadTopicName);
    if (!topics.empty()) req.topics = std::move(topics);
  } else {
    req.topics = r.ReadNullableArray<std::string>("Topics", kClassic, ReadTopicName);
  }
  if (version >= 4) req.allow_auto_topic_creation = r.ReadBool("AllowAutoTopicCreation");
  return FinishDecode(r, std::move(req), kKey, version, "request");
}

void EncodeMetadataRequest(const MetadataRequest& req, int16_t version, ProtocolWriter& w) {
  if (version == 0 && !req.topics) {
    w.WriteArrayCount(0, kClassic);
  } else {
    w.WriteNullableArray(req.topics, kClassic, [](const std::string& name, ProtocolWriter& w) {
      w.WriteString(name, kClassic);
    });
  }
  if (version >= 4) w.WriteBool(req.allow_auto_topic_creation);
}

void EncodeMetadataResponse(const MetadataResponse& resp, int16_t version, ProtocolWriter& w) {
  if (version >= 3) w.WriteInt32(resp.throttle_time_ms);
  w.WriteArray(resp.brokers, kClassic,
               [version](const MetadataResponse::Broker& b, ProtocolWriter& w) {
                 w.WriteInt32(b.node_id);
                 w.WriteString(b.host, kClassic);
                 w.WriteInt32(b.port);
                 if (version >= 1) w.WriteNullableString(b.rack, kClassic);
               });
  if (version >= 2) w.WriteNullableString(resp.cluster_id, kClassic);
  if (version >= 1) w.WriteInt32(resp.controller_id);
  w.WriteArray(resp.topics, kClassic,
               [version](const MetadataResponse::Topic& t, ProtocolWriter& w) {
                 w.WriteInt16(int16_t(t.error_code));
                 w.WriteString(t.name, kClassic);
                 if (version >= 1) w.WriteBool(t.is_internal);
                 w.WriteArray(t.partitions, kClassic, WritePartition);
               });
}

Result<MetadataResponse> DecodeMetadataResponse(ProtocolReader& r, int16_t version) {
  DARUMA_RETURN_IF_ERROR(CheckDecodeVersion(kKey, version, "response"));
  MetadataResponse resp;
  if (version >= 3) resp.throttle_time_ms = r.ReadInt32("ThrottleTimeMs");
  resp.brokers =
      r.ReadArray<MetadataResponse::Broker>("Brokers", kClassic, [version](ProtocolReader& r) {
        MetadataResponse::Broker b;
        b.node_id = r.ReadInt32("Brokers.NodeId");
        b.host = r.ReadString("Brokers.Host", kClassic);
        b.port = r.ReadInt32("Brokers.Port");
        if (version >= 1) b.rack = r.ReadNullableString("Brokers.Rack", kClassic);
        return b;
      });
  if (version >= 2) resp.cluster_id = r.ReadNullableString("ClusterId", kClassic);
  if (version >= 1) resp.controller_id = r.ReadInt32("ControllerId");
  resp.topics =
      r.ReadArray<MetadataResponse::Topic>("Topics", kClassic, [version](ProtocolReader& r) {
        MetadataResponse::Topic t;
        t.error_code = ErrorCode(r.ReadInt16("Topics.ErrorCode"));
        t.name = r.ReadString("Topics.Name", kClassic);
        if (version >= 1) t.is_internal = r.ReadBool("Topics.IsInternal");
        t.partitions =
            r.ReadArray<MetadataResponse::Partition>("Topics.Partitions", kClassic, ReadPartition);
        return t;
      });
  return FinishDecode(r, std::move(resp), kKey, version, "response");
}

}  // namespace daruma::broker
