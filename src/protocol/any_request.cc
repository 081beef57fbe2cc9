#include "protocol/any_request.h"

#include <fmt/format.h>

#include <utility>
#include <variant>

#include "protocol/codec_util.h"

namespace daruma {

Result<AnyRequest> DecodeAnyRequest(ProtocolReader& reader, ApiKey key, int16_t version) {
  DARUMA_RETURN_IF_ERROR(CheckSupportedVersion(key, version));
  // An advertised API without a schema would be a table error, not a client's.
  Result<AnyRequest> out = Status::Unsupported(fmt::format("{} has no schema", ApiKeyName(key)));
  VisitRequestType(int16_t(key), [&]<typename T>() {
    Result<T> decoded = DecodeMessage<T>(reader, version);
    if (decoded.ok()) {
      out = AnyRequest(std::move(decoded).value());
    } else {
      out = decoded.status();
    }
  });
  return out;
}

void EncodeAnyRequest(const AnyRequest& request, int16_t version, ProtocolWriter& writer) {
  std::visit([&](const auto& message) { message.Write(writer, version); }, request);
}

}  // namespace daruma
