// Request and response headers (spec kafka-protocol-subset.md §1.4).
//
//   Request header v1:  RequestApiKey int16, RequestApiVersion int16,
//                       CorrelationId int32, ClientId classic nullable string
//   Request header v2:  v1 + tagged-field section
//   Response header v0: CorrelationId int32
//   Response header v1: CorrelationId int32 + tagged-field section (0x00)
//
// ClientId is ALWAYS a classic (int16-length) nullable string, even in v2.
// The header version follows from (key, version) via api_keys.h; an unknown
// key is read as header v1 (the caller then closes the connection, so only
// the correlation id matters). ApiVersions responses always use header v0.
#pragma once

#include <cstdint>
#include <optional>
#include <string>

#include "common/status.h"
#include "protocol/api_keys.h"
#include "protocol/protocol_reader.h"
#include "protocol/protocol_writer.h"

namespace daruma {

struct RequestHeader {
  ApiKey api_key = ApiKey::kApiVersions;
  int16_t api_version = 0;
  int32_t correlation_id = 0;
  std::optional<std::string> client_id;

  bool operator==(const RequestHeader&) const = default;
};

// Reads the header and leaves `reader` at the first byte of the body. Fails
// (kInvalidArgument naming the field and byte) only on malformed bytes; an
// unknown key or unsupported version is NOT an error here — check with
// IsSupportedVersion before decoding the body.
Result<RequestHeader> DecodeRequestHeader(ProtocolReader& reader);
// Writes header v1 or v2 as chosen by RequestHeaderVersion (test clients).
void EncodeRequestHeader(const RequestHeader& header, ProtocolWriter& writer);

// Writes response header v0 or v1 for (key, version) of the REQUEST.
void EncodeResponseHeader(int32_t correlation_id, ApiKey key, int16_t version,
                          ProtocolWriter& writer);
// Reads a response header; returns the correlation id (test clients).
Result<int32_t> DecodeResponseHeader(ProtocolReader& reader, ApiKey key, int16_t version);

}  // namespace daruma
