#include "protocol/request_header.h"

namespace daruma {

Result<RequestHeader> DecodeRequestHeader(ProtocolReader& reader) {
  RequestHeader h;
  h.api_key = ApiKey(reader.ReadInt16("RequestApiKey"));
  h.api_version = reader.ReadInt16("RequestApiVersion");
  h.correlation_id = reader.ReadInt32("CorrelationId");
  // ClientId stays classic even in header v2 (flexibleVersions: none).
  h.client_id = reader.ReadNullableString("ClientId", Encoding::kClassic);
  if (reader.ok() && RequestHeaderVersion(h.api_key, h.api_version) >= 2) {
    reader.SkipTaggedFields("RequestHeader._tagged_fields");
  }
  if (!reader.ok()) return reader.status().WithContext("request header");
  return h;
}

void EncodeRequestHeader(const RequestHeader& header, ProtocolWriter& writer) {
  writer.WriteInt16(int16_t(header.api_key));
  writer.WriteInt16(header.api_version);
  writer.WriteInt32(header.correlation_id);
  writer.WriteNullableString(header.client_id, Encoding::kClassic);
  if (RequestHeaderVersion(header.api_key, header.api_version) >= 2) {
    writer.WriteEmptyTaggedFields();
  }
}

void EncodeResponseHeader(int32_t correlation_id, ApiKey key, int16_t version,
                          ProtocolWriter& writer) {
  writer.WriteInt32(correlation_id);
  if (ResponseHeaderVersion(key, version) >= 1) writer.WriteEmptyTaggedFields();
}

Result<int32_t> DecodeResponseHeader(ProtocolReader& reader, ApiKey key, int16_t version) {
  int32_t correlation_id = reader.ReadInt32("CorrelationId");
  if (ResponseHeaderVersion(key, version) >= 1) {
    reader.SkipTaggedFields("ResponseHeader._tagged_fields");
  }
  if (!reader.ok()) return reader.status().WithContext("response header");
  return correlation_id;
}

}  // namespace daruma
