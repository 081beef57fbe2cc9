#include "broker/protocol/create_topics.h"

#include "broker/protocol/codec_util.h"

namespace daruma::broker {
namespace {

constexpr ApiKey kKey = ApiKey::kCreateTopics;

CreateTopicsRequest::Topic ReadTopic(ProtocolReader& r) {
  CreateTopicsRequest::Topic t;
  t.name = r.ReadString("Topics.Name", kClassic);
  t.num_partitions = r.ReadInt32("Topics.NumPartitions");
  t.replication_factor = r.ReadInt16("Topics.ReplicationFactor");
  t.assignments = r.ReadArray<CreateTopicsRequest::Assignment>(
      "Topics.Assignments", kClassic, [](ProtocolReader& r) {
        CreateTopicsRequest::Assignment a;
        a.partition_index = r.ReadInt32("Topics.Assignments.PartitionIndex");
        a.broker_ids = r.ReadInt32Array("Topics.Assignments.BrokerIds", kClassic);
        return a;
      });
  t.configs =
      r.ReadArray<CreateTopicsRequest::Config>("Topics.Configs", kClassic, [](ProtocolReader& r) {
        CreateTopicsRequest::Config c;
        c.name = r.ReadString("Topics.Configs.Name", kClassic);
        c.value = r.ReadNullableString("Topics.Configs.Value", kClassic);
        return c;
      });
  return t;
}

void WriteTopic(const CreateTopicsRequest::Topic& t, ProtocolWriter& w) {
  w.WriteString(t.name, kClassic);
  w.WriteInt32(t.num_partitions);
  w.WriteInt16(t.replication_factor);
  w.WriteArray(t.assignments, kClassic,
               [](const CreateTopicsRequest::Assignment& a, ProtocolWriter& w) {
                 w.WriteInt32(a.partition_index);
                 w.WriteInt32Array(a.broker_ids, kClassic);
               });
  w.WriteArray(t.configs, kClassic, [](const CreateTopicsRequest::Config& c, ProtocolWriter& w) {
    w.WriteString(c.name, kClassic);
    w.WriteNullableString(c.value, kClassic);
  });
}

}  // namespace

Result<CreateTopicsRequest> DecodeCreateTopicsRequest(ProtocolReader& r, int16_t version) {
  DARUMA_RETURN_IF_ERROR(CheckDecodeVersion(kKey, version, "request"));
  CreateTopicsRequest req;
  req.topics = r.ReadArray<CreateTopicsRequest::Topic>("Topics", kClassic, ReadTopic);
  req.timeout_ms = r.ReadInt32("timeoutMs");
  if (version >= 1) req.validate_only = r.ReadBool("validateOnly");
  return FinishDecode(r, std::move(req), kKey, version, "request");
}

void EncodeCreateTopicsRequest(const CreateTopicsRequest& req, int16_t version, ProtocolWriter& w) {
  w.WriteArray(req.topics, kClassic, WriteTopic);
  w.WriteInt32(req.timeout_ms);
  if (version >= 1) w.WriteBool(req.validate_only);
}

void EncodeCreateTopicsResponse(const CreateTopicsResponse& resp, int16_t version,
                                ProtocolWriter& w) {
  if (version >= 2) w.WriteInt32(resp.throttle_time_ms);
  w.WriteArray(resp.topics, kClassic,
               [version](const CreateTopicsResponse::Topic& t, ProtocolWriter& w) {
                 w.WriteString(t.name, kClassic);
                 w.WriteInt16(int16_t(t.error_code));
                 if (version >= 1) w.WriteNullableString(t.error_message, kClassic);
               });
}

Result<CreateTopicsResponse> DecodeCreateTopicsResponse(ProtocolReader& r, int16_t version) {
  DARUMA_RETURN_IF_ERROR(CheckDecodeVersion(kKey, version, "response"));
  CreateTopicsResponse resp;
  if (version >= 2) resp.throttle_time_ms = r.ReadInt32("ThrottleTimeMs");
  resp.topics =
      r.ReadArray<CreateTopicsResponse::Topic>("Topics", kClassic, [version](ProtocolReader& r) {
        CreateTopicsResponse::Topic t;
        t.name = r.ReadString("Topics.Name", kClassic);
        t.error_code = ErrorCode(r.ReadInt16("Topics.ErrorCode"));
        if (version >= 1) t.error_message = r.ReadNullableString("Topics.ErrorMessage", kClassic);
        return t;
      });
  return FinishDecode(r, std::move(resp), kKey, version, "response");
}

}  // namespace daruma::broker
