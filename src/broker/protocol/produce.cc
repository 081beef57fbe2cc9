#include "broker/protocol/produce.h"

#include <algorithm>

#include "broker/protocol/codec_util.h"

namespace daruma::broker {
namespace {

constexpr ApiKey kKey = ApiKey::kProduce;

}  // namespace

bool ProduceRequest::Partition::operator==(const Partition& other) const {
  if (index != other.index || records.has_value() != other.records.has_value()) return false;
  return !records || std::ranges::equal(*records, *other.records);
}

Result<ProduceRequest> DecodeProduceRequest(ProtocolReader& r, int16_t version) {
  DARUMA_RETURN_IF_ERROR(CheckDecodeVersion(kKey, version, "request"));
  ProduceRequest req;
  if (version >= 3) req.transactional_id = r.ReadNullableString("TransactionalId", kClassic);
  req.acks = r.ReadInt16("Acks");
  req.timeout_ms = r.ReadInt32("TimeoutMs");
  req.topics = r.ReadArray<ProduceRequest::Topic>("TopicData", kClassic, [](ProtocolReader& r) {
    ProduceRequest::Topic t;
    t.name = r.ReadString("TopicData.Name", kClassic);
    t.partitions = r.ReadArray<ProduceRequest::Partition>(
        "TopicData.PartitionData", kClassic, [](ProtocolReader& r) {
          ProduceRequest::Partition p;
          p.index = r.ReadInt32("TopicData.PartitionData.Index");
          p.records = r.ReadNullableBytes("TopicData.PartitionData.Records", kClassic);
          return p;
        });
    return t;
  });
  return FinishDecode(r, std::move(req), kKey, version, "request");
}

void EncodeProduceRequest(const ProduceRequest& req, int16_t version, ProtocolWriter& w) {
  if (version >= 3) w.WriteNullableString(req.transactional_id, kClassic);
  w.WriteInt16(req.acks);
  w.WriteInt32(req.timeout_ms);
  w.WriteArray(req.topics, kClassic, [](const ProduceRequest::Topic& t, ProtocolWriter& w) {
    w.WriteString(t.name, kClassic);
    w.WriteArray(t.partitions, kClassic, [](const ProduceRequest::Partition& p, ProtocolWriter& w) {
      w.WriteInt32(p.index);
      w.WriteNullableBytes(p.records, kClassic);
    });
  });
}

void EncodeProduceResponse(const ProduceResponse& resp, int16_t version, ProtocolWriter& w) {
  w.WriteArray(resp.responses, kClassic,
               [version](const ProduceResponse::Topic& t, ProtocolWriter& w) {
                 w.WriteString(t.name, kClassic);
                 w.WriteArray(t.partitions, kClassic,
                              [version](const ProduceResponse::Partition& p, ProtocolWriter& w) {
                                w.WriteInt32(p.index);
                                w.WriteInt16(int16_t(p.error_code));
                                w.WriteInt64(p.base_offset);
                                if (version >= 2) w.WriteInt64(p.log_append_time_ms);
                                if (version >= 5) w.WriteInt64(p.log_start_offset);
                              });
               });
  if (version >= 1) w.WriteInt32(resp.throttle_time_ms);
}

Result<ProduceResponse> DecodeProduceResponse(ProtocolReader& r, int16_t version) {
  DARUMA_RETURN_IF_ERROR(CheckDecodeVersion(kKey, version, "response"));
  ProduceResponse resp;
  resp.responses =
      r.ReadArray<ProduceResponse::Topic>("Responses", kClassic, [version](ProtocolReader& r) {
        ProduceResponse::Topic t;
        t.name = r.ReadString("Responses.Name", kClassic);
        t.partitions = r.ReadArray<ProduceResponse::Partition>(
            "Responses.PartitionResponses", kClassic, [version](ProtocolReader& r) {
              ProduceResponse::Partition p;
              p.index = r.ReadInt32("Responses.PartitionResponses.Index");
              p.error_code = ErrorCode(r.ReadInt16("Responses.PartitionResponses.ErrorCode"));
              p.base_offset = r.ReadInt64("Responses.PartitionResponses.BaseOffset");
              if (version >= 2) {
                p.log_append_time_ms = r.ReadInt64("Responses.PartitionResponses.LogAppendTimeMs");
              }
              if (version >= 5) {
                p.log_start_offset = r.ReadInt64("Responses.PartitionResponses.LogStartOffset");
              }
              return p;
            });
        return t;
      });
  if (version >= 1) resp.throttle_time_ms = r.ReadInt32("ThrottleTimeMs");
  return FinishDecode(r, std::move(resp), kKey, version, "response");
}

}  // namespace daruma::broker
