#include "broker/protocol/delete_topics.h"

#include "broker/protocol/codec_util.h"

namespace daruma::broker {
namespace {

constexpr ApiKey kKey = ApiKey::kDeleteTopics;

}  // namespace

Result<DeleteTopicsRequest> DecodeDeleteTopicsRequest(ProtocolReader& r, int16_t version) {
  DARUMA_RETURN_IF_ERROR(CheckDecodeVersion(kKey, version, "request"));
  DeleteTopicsRequest req;
  req.topic_names = r.ReadStringArray("TopicNames", kClassic);
  req.timeout_ms = r.ReadInt32("TimeoutMs");
  return FinishDecode(r, std::move(req), kKey, version, "request");
}

void EncodeDeleteTopicsRequest(const DeleteTopicsRequest& req, int16_t /*version*/,
                               ProtocolWriter& w) {
  w.WriteStringArray(req.topic_names, kClassic);
  w.WriteInt32(req.timeout_ms);
}

void EncodeDeleteTopicsResponse(const DeleteTopicsResponse& resp, int16_t version,
                                ProtocolWriter& w) {
  if (version >= 1) w.WriteInt32(resp.throttle_time_ms);
  w.WriteArray(resp.responses, kClassic,
               [](const DeleteTopicsResponse::TopicResult& t, ProtocolWriter& w) {
                 w.WriteString(t.name, kClassic);
                 w.WriteInt16(int16_t(t.error_code));
               });
}

Result<DeleteTopicsResponse> DecodeDeleteTopicsResponse(ProtocolReader& r, int16_t version) {
  DARUMA_RETURN_IF_ERROR(CheckDecodeVersion(kKey, version, "response"));
  DeleteTopicsResponse resp;
  if (version >= 1) resp.throttle_time_ms = r.ReadInt32("ThrottleTimeMs");
  resp.responses =
      r.ReadArray<DeleteTopicsResponse::TopicResult>("Responses", kClassic, [](ProtocolReader& r) {
        DeleteTopicsResponse::TopicResult t;
        t.name = r.ReadString("Responses.Name", kClassic);
        t.error_code = ErrorCode(r.ReadInt16("Responses.ErrorCode"));
        return t;
      });
  return FinishDecode(r, std::move(resp), kKey, version, "response");
}

}  // namespace daruma::broker
