// The log lines about requests that did not simply succeed (event_log.h has
// the format and the rate limit):
//
//   event=error_response    INFO, a response carrying an error code: client
//                           id, API, version, correlation id, the first
//                           error, how many entries failed, and why
//   event=request_rejected  INFO, a request answered by closing the connection
//                           (unknown API key, version out of range, a header
//                           or body that does not parse) or by ApiVersions'
//                           UNSUPPORTED_VERSION: client id, api key and name,
//                           version and the reason
//
// Both are rate-limited per (event, API, error or reason kind), so a client
// that repeats one mistake costs a few lines a second. A null log writes
// nothing (unit tests of the handlers).
#pragma once

#include <cstdint>
#include <string_view>

#include "broker/event_log.h"
#include "broker/response_errors.h"
#include "protocol/request_header.h"

namespace daruma::broker {

// Why a request was refused; named in the line and in its limit key.
enum class RejectKind {
  kMalformedHeader,
  kUnknownApiKey,
  kUnsupportedVersion,
  kMalformedBody,
};
std::string_view RejectKindName(RejectKind kind);

void LogErrorResponse(EventLog* log, const RequestHeader& header, const ResponseErrors& errors);

// `header` is null when it did not parse (api key/version then come from the
// frame's first bytes, -1 when it had none).
void LogRejectedRequest(EventLog* log, const RequestHeader* header, int16_t api_key,
                        int16_t api_version, RejectKind kind, std::string_view reason,
                        std::string_view action);

}  // namespace daruma::broker
