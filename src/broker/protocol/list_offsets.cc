#include "broker/protocol/list_offsets.h"

#include "broker/protocol/codec_util.h"

namespace daruma::broker {
namespace {

constexpr ApiKey kKey = ApiKey::kListOffsets;

}  // namespace

Result<ListOffsetsRequest> DecodeListOffsetsRequest(ProtocolReader& r, int16_t version) {
  DARUMA_RETURN_IF_ERROR(CheckDecodeVersion(kKey, version, "request"));
  ListOffsetsRequest req;
  req.replica_id = r.ReadInt32("ReplicaId");
  if (version >= 2) req.isolation_level = r.ReadInt8("IsolationLevel");
  req.topics = r.ReadArray<ListOffsetsRequest::Topic>("Topics", kClassic, [](ProtocolReader& r) {
    ListOffsetsRequest::Topic t;
    t.name = r.ReadString("Topics.Name", kClassic);
    t.partitions = r.ReadArray<ListOffsetsRequest::Partition>(
        "Topics.Partitions", kClassic, [](ProtocolReader& r) {
          ListOffsetsRequest::Partition p;
          p.partition_index = r.ReadInt32("Topics.Partitions.PartitionIndex");
          p.timestamp = r.ReadInt64("Topics.Partitions.Timestamp");
          return p;
        });
    return t;
  });
  return FinishDecode(r, std::move(req), kKey, version, "request");
}

void EncodeListOffsetsRequest(const ListOffsetsRequest& req, int16_t version, ProtocolWriter& w) {
  w.WriteInt32(req.replica_id);
  if (version >= 2) w.WriteInt8(req.isolation_level);
  w.WriteArray(req.topics, kClassic, [](const ListOffsetsRequest::Topic& t, ProtocolWriter& w) {
    w.WriteString(t.name, kClassic);
    w.WriteArray(t.partitions, kClassic,
                 [](const ListOffsetsRequest::Partition& p, ProtocolWriter& w) {
                   w.WriteInt32(p.partition_index);
                   w.WriteInt64(p.timestamp);
                 });
  });
}

void EncodeListOffsetsResponse(const ListOffsetsResponse& resp, int16_t version,
                               ProtocolWriter& w) {
  if (version >= 2) w.WriteInt32(resp.throttle_time_ms);
  w.WriteArray(resp.topics, kClassic, [](const ListOffsetsResponse::Topic& t, ProtocolWriter& w) {
    w.WriteString(t.name, kClassic);
    w.WriteArray(t.partitions, kClassic,
                 [](const ListOffsetsResponse::Partition& p, ProtocolWriter& w) {
                   w.WriteInt32(p.partition_index);
                   w.WriteInt16(int16_t(p.error_code));
                   w.WriteInt64(p.timestamp);
                   w.WriteInt64(p.offset);
                 });
  });
}

Result<ListOffsetsResponse> DecodeListOffsetsResponse(ProtocolReader& r, int16_t version) {
  DARUMA_RETURN_IF_ERROR(CheckDecodeVersion(kKey, version, "response"));
  ListOffsetsResponse resp;
  if (version >= 2) resp.throttle_time_ms = r.ReadInt32("ThrottleTimeMs");
  resp.topics = r.ReadArray<ListOffsetsResponse::Topic>("Topics", kClassic, [](ProtocolReader& r) {
    ListOffsetsResponse::Topic t;
    t.name = r.ReadString("Topics.Name", kClassic);
    t.partitions = r.ReadArray<ListOffsetsResponse::Partition>(
        "Topics.Partitions", kClassic, [](ProtocolReader& r) {
          ListOffsetsResponse::Partition p;
          p.partition_index = r.ReadInt32("Topics.Partitions.PartitionIndex");
          p.error_code = ErrorCode(r.ReadInt16("Topics.Partitions.ErrorCode"));
          p.timestamp = r.ReadInt64("Topics.Partitions.Timestamp");
          p.offset = r.ReadInt64("Topics.Partitions.Offset");
          return p;
        });
    return t;
  });
  return FinishDecode(r, std::move(resp), kKey, version, "response");
}

}  // namespace daruma::broker
