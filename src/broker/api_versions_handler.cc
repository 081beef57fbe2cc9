// ApiVersions (spec §3.1): the advertised table; response header always v0.
#include "broker/api_handlers.h"
#include "protocol/messages.h"

namespace daruma::broker {

void HandleApiVersions(HandlerEnv&, const RequestHeader& header, ProtocolReader& body,
                       const Respond& respond) {
  // The v3 client software name/version are accepted whatever they say.
  Result<ApiVersionsRequest> request = DecodeApiVersionsRequest(body, header.api_version);
  if (!request.ok()) return respond(std::nullopt, true);
  ApiVersionsResponse response;
  response.api_keys = AdvertisedApiKeys();
  respond(EncodeResponseFrame(header, response, EncodeApiVersionsResponse), false);
}

void HandleUnsupportedApiVersions(const RequestHeader& header, const Respond& respond) {
  ApiVersionsResponse response;
  response.error_code = ErrorCode::kUnsupportedVersion;
  response.api_keys = AdvertisedApiKeys();
  ProtocolWriter writer;
  // Header v0 and a v0 body, whatever version was asked for.
  EncodeResponseHeader(header.correlation_id, ApiKey::kApiVersions, 0, writer);
  EncodeApiVersionsResponse(response, 0, writer);
  respond(writer.Release(), false);
}

}  // namespace daruma::broker
