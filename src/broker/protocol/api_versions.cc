#include "broker/protocol/api_versions.h"

#include "broker/protocol/codec_util.h"

namespace daruma::broker {
namespace {

constexpr ApiKey kKey = ApiKey::kApiVersions;

bool Flexible(int16_t version) {
  return IsFlexible(kKey, version);
}

}  // namespace

std::vector<ApiVersionsResponse::Key> AdvertisedApiKeys() {
  std::vector<ApiVersionsResponse::Key> keys;
  for (const ApiVersionRange& range : AdvertisedApis()) {
    keys.push_back({range.key, range.min, range.max});
  }
  return keys;
}

Result<ApiVersionsRequest> DecodeApiVersionsRequest(ProtocolReader& r, int16_t version) {
  DARUMA_RETURN_IF_ERROR(CheckDecodeVersion(kKey, version, "request"));
  ApiVersionsRequest req;
  if (Flexible(version)) {
    req.client_software_name = r.ReadString("ClientSoftwareName", Encoding::kCompact);
    req.client_software_version = r.ReadString("ClientSoftwareVersion", Encoding::kCompact);
    r.SkipTaggedFields("_tagged_fields");
  }
  return FinishDecode(r, std::move(req), kKey, version, "request");
}

void EncodeApiVersionsRequest(const ApiVersionsRequest& req, int16_t version, ProtocolWriter& w) {
  if (!Flexible(version)) return;
  w.WriteString(req.client_software_name, Encoding::kCompact);
  w.WriteString(req.client_software_version, Encoding::kCompact);
  w.WriteEmptyTaggedFields();
}

void EncodeApiVersionsResponse(const ApiVersionsResponse& resp, int16_t version,
                               ProtocolWriter& w) {
  const bool flexible = Flexible(version);
  const Encoding e = EncodingFor(flexible);
  w.WriteInt16(int16_t(resp.error_code));
  w.WriteArray(resp.api_keys, e, [flexible](const ApiVersionsResponse::Key& k, ProtocolWriter& w) {
    w.WriteInt16(int16_t(k.api_key));
    w.WriteInt16(k.min_version);
    w.WriteInt16(k.max_version);
    if (flexible) w.WriteEmptyTaggedFields();
  });
  if (version >= 1) w.WriteInt32(resp.throttle_time_ms);
  if (flexible) w.WriteEmptyTaggedFields();
}

Result<ApiVersionsResponse> DecodeApiVersionsResponse(ProtocolReader& r, int16_t version) {
  DARUMA_RETURN_IF_ERROR(CheckDecodeVersion(kKey, version, "response"));
  const bool flexible = Flexible(version);
  const Encoding e = EncodingFor(flexible);
  ApiVersionsResponse resp;
  resp.error_code = ErrorCode(r.ReadInt16("ErrorCode"));
  resp.api_keys =
      r.ReadArray<ApiVersionsResponse::Key>("ApiKeys", e, [flexible](ProtocolReader& r) {
        ApiVersionsResponse::Key k;
        k.api_key = ApiKey(r.ReadInt16("ApiKeys.ApiKey"));
        k.min_version = r.ReadInt16("ApiKeys.MinVersion");
        k.max_version = r.ReadInt16("ApiKeys.MaxVersion");
        if (flexible) r.SkipTaggedFields("ApiKeys._tagged_fields");
        return k;
      });
  if (version >= 1) resp.throttle_time_ms = r.ReadInt32("ThrottleTimeMs");
  // SupportedFeatures / FinalizedFeatures* / ZkMigrationReady are not used.
  if (flexible) r.SkipTaggedFields("_tagged_fields");
  return FinishDecode(r, std::move(resp), kKey, version, "response");
}

}  // namespace daruma::broker
