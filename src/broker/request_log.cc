#include "broker/request_log.h"

#include <fmt/format.h>

#include "broker/request_metrics.h"

namespace daruma::broker {

std::string_view RejectKindName(RejectKind kind) {
  switch (kind) {
    case RejectKind::kMalformedHeader:
      return "malformed_header";
    case RejectKind::kUnknownApiKey:
      return "unknown_api_key";
    case RejectKind::kUnsupportedVersion:
      return "unsupported_version";
    case RejectKind::kMalformedBody:
      return "malformed_body";
  }
  return "unknown";
}

void LogErrorResponse(EventLog* log, const RequestHeader& header, const ResponseErrors& errors) {
  if (log == nullptr || !errors.any() || !log->Enabled(LogLevel::kInfo)) return;
  const std::string_view api = ApiMetricLabel(int16_t(header.api_key));
  const std::string_view error = ErrorCodeName(errors.first);
  LogFields f;
  f.Add("client_id", header.client_id.value_or(""))
      .Add("api", api)
      .Add("api_version", header.api_version)
      .Add("correlation_id", header.correlation_id)
      .Add("error", error)
      .Add("errors", errors.count);
  if (!errors.where.empty()) f.Add("at", errors.where);
  if (!errors.message.empty()) f.Add("reason", errors.message);
  log->WriteLimited(LogLevel::kInfo, fmt::format("error_response/{}/{}", api, error),
                    "error_response", f);
}

void LogRejectedRequest(EventLog* log, const RequestHeader* header, int16_t api_key,
                        int16_t api_version, RejectKind kind, std::string_view reason,
                        std::string_view action) {
  if (log == nullptr || !log->Enabled(LogLevel::kInfo)) return;
  // The label, not the raw name: odd keys share one limit key, so a client
  // cycling through keys cannot multiply the lines.
  const std::string_view api = ApiMetricLabel(api_key);
  LogFields f;
  f.Add("client_id", header != nullptr ? header->client_id.value_or("") : "")
      .Add("api_key", api_key)
      .Add("api", api)
      .Add("api_version", api_version);
  if (header != nullptr) f.Add("correlation_id", header->correlation_id);
  f.Add("kind", RejectKindName(kind)).Add("reason", reason).Add("action", action);
  log->WriteLimited(LogLevel::kInfo,
                    fmt::format("request_rejected/{}/{}", api, RejectKindName(kind)),
                    "request_rejected", f);
}

}  // namespace daruma::broker
