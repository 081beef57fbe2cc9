// ApiVersions (spec §3.1): the handler table's APIs; response header always v0.
#include <fmt/format.h>

#include "broker/api_handlers.h"
#include "protocol/messages.h"

namespace daruma::broker {

void HandleApiVersions(HandlerEnv& env, const RequestHeader& header, ProtocolReader& body,
                       const Respond& respond) {
  // The v3 client software name/version are accepted whatever they say.
  Result<ApiVersionsRequest> request = DecodeApiVersionsRequest(body, header.api_version);
  if (!request.ok()) return CloseMalformed(env, header, request.status(), respond);
  ApiVersionsResponse response;
  response.api_keys = HandledApiKeys();
  respond(EncodeResponseFrame(env, header, response, EncodeApiVersionsResponse), false);
}

void HandleUnsupportedApiVersions(const HandlerEnv& env, const RequestHeader& header,
                                  const Respond& respond) {
  const ApiVersionRange* range = HandledVersions(ApiKey::kApiVersions);
  LogRejectedRequest(env.ctx.log, &header, int16_t(header.api_key), header.api_version,
                     RejectKind::kUnsupportedVersion,
                     fmt::format("ApiVersions version {} is above the highest supported, {}",
                                 header.api_version, range != nullptr ? range->max : 0),
                     "unsupported_version_response");
  ApiVersionsResponse response;
  response.error_code = ErrorCode::kUnsupportedVersion;
  response.api_keys = HandledApiKeys();
  ProtocolWriter writer;
  // Header v0 and a v0 body, whatever version was asked for: a client that
  // is too new can read only what every version shares.
  EncodeResponseHeader(header.correlation_id, ApiKey::kApiVersions, 0, writer);
  EncodeApiVersionsResponse(response, 0, writer);
  respond(writer.Release(), false);
}

}  // namespace daruma::broker
