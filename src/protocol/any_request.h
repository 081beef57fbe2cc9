// AnyRequest: the decoded body of any advertised request, for code that
// handles requests generically (codec tests, a test client). Handlers
// normally call the per-API Decode*Request directly. The variant and the
// dispatch are generated from the schemas (protocol/generated/any_message.h),
// so every API with a schema is covered with no edit here.
//
// Contract: DecodeAnyRequest(reader, key, version) == the per-API decoder for
// `key`; kUnsupported for a key/version outside AdvertisedApis(). The variant
// holds the same views into the frame as the per-API structs (ProduceRequest
// records), so the frame must outlive it.
#pragma once

#include <cstdint>

#include "common/status.h"
#include "protocol/api_keys.h"
#include "protocol/generated/any_message.h"
#include "protocol/protocol_reader.h"
#include "protocol/protocol_writer.h"

namespace daruma {

Result<AnyRequest> DecodeAnyRequest(ProtocolReader& reader, ApiKey key, int16_t version);
// Encodes the alternative held by `request` at `version` (which must be
// advertised for that API).
void EncodeAnyRequest(const AnyRequest& request, int16_t version, ProtocolWriter& writer);

}  // namespace daruma
