#include "broker/protocol/find_coordinator.h"

#include "broker/protocol/codec_util.h"

namespace daruma::broker {
namespace {

constexpr ApiKey kKey = ApiKey::kFindCoordinator;

}  // namespace

Result<FindCoordinatorRequest> DecodeFindCoordinatorRequest(ProtocolReader& r, int16_t version) {
  DARUMA_RETURN_IF_ERROR(CheckDecodeVersion(kKey, version, "request"));
  FindCoordinatorRequest req;
  req.key = r.ReadString("Key", kClassic);
  if (version >= 1) req.key_type = r.ReadInt8("KeyType");
  return FinishDecode(r, std::move(req), kKey, version, "request");
}

void EncodeFindCoordinatorRequest(const FindCoordinatorRequest& req, int16_t version,
                                  ProtocolWriter& w) {
  w.WriteString(req.key, kClassic);
  if (version >= 1) w.WriteInt8(req.key_type);
}

void EncodeFindCoordinatorResponse(const FindCoordinatorResponse& resp, int16_t version,
                                   ProtocolWriter& w) {
  if (version >= 1) w.WriteInt32(resp.throttle_time_ms);
  w.WriteInt16(int16_t(resp.error_code));
  if (version >= 1) w.WriteNullableString(resp.error_message, kClassic);
  w.WriteInt32(resp.node_id);
  w.WriteString(resp.host, kClassic);
  w.WriteInt32(resp.port);
}

Result<FindCoordinatorResponse> DecodeFindCoordinatorResponse(ProtocolReader& r, int16_t version) {
  DARUMA_RETURN_IF_ERROR(CheckDecodeVersion(kKey, version, "response"));
  FindCoordinatorResponse resp;
  if (version >= 1) resp.throttle_time_ms = r.ReadInt32("ThrottleTimeMs");
  resp.error_code = ErrorCode(r.ReadInt16("ErrorCode"));
  if (version >= 1) resp.error_message = r.ReadNullableString("ErrorMessage", kClassic);
  resp.node_id = r.ReadInt32("NodeId");
  resp.host = r.ReadString("Host", kClassic);
  resp.port = r.ReadInt32("Port");
  return FinishDecode(r, std::move(resp), kKey, version, "response");
}

}  // namespace daruma::broker
