// Helpers the generated Decode<Message> functions share (internal to src/protocol).
//
// Every Decode*(reader, version) first checks the version against the
// advertised table, then reads the whole body with the sticky-error reader and
// finishes with FinishDecode, which prefixes any error with the message, its
// version and direction: "Produce v7 request: field TopicData.Name at byte
// 12: truncated: expected 5 more bytes, found 2".
#pragma once

#include <fmt/format.h>

#include <cstdint>
#include <utility>

#include "common/status.h"
#include "protocol/api_keys.h"
#include "protocol/protocol_reader.h"

namespace daruma {

inline constexpr Encoding kClassic = Encoding::kClassic;

// kUnsupported "Produce request: version 8 is not supported (advertised
// 0-7)" for a version outside the advertised range; no byte is read.
inline Status CheckDecodeVersion(ApiKey key, int16_t version, const char* direction) {
  if (IsSupportedVersion(key, version)) return Status::Ok();
  const ApiVersionRange* range = FindAdvertisedApi(key);
  return Status::Unsupported(fmt::format("{} {}: version {} is not supported (advertised {}-{})",
                                         ApiKeyName(key), direction, version,
                                         range ? range->min : 0, range ? range->max : -1));
}

template <typename T>
Result<T> FinishDecode(const ProtocolReader& reader, T value, ApiKey key, int16_t version,
                       const char* direction) {
  if (!reader.ok()) {
    return reader.status().WithContext(
        fmt::format("{} v{} {}", ApiKeyName(key), version, direction));
  }
  return Result<T>(std::move(value));
}

// What every generated Decode<Message> is, for any message struct T (its
// kApiKey, kIsRequest and Read): the version check, the whole body, the
// error named after the message. Generic code (any_request.cc) calls it with
// the T it got from the visitors of protocol/generated/any_message.h.
template <typename T>
Result<T> DecodeMessage(ProtocolReader& reader, int16_t version) {
  const char* direction = T::kIsRequest ? "request" : "response";
  DARUMA_RETURN_IF_ERROR(CheckDecodeVersion(ApiKey(T::kApiKey), version, direction));
  T message;
  (void)message.Read(reader, version);
  return FinishDecode(reader, std::move(message), ApiKey(T::kApiKey), version, direction);
}

}  // namespace daruma
