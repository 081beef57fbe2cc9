// libFuzzer target: the input is one Kafka request frame without its 4-byte
// size prefix, exactly what the broker's RequestHandler receives. The header
// is decoded, then the body for its API and version (src/broker/protocol).
//
// Invariants checked (a violation aborts, i.e. is a finding):
// - decoding never crashes, reads out of bounds or allocates from a hostile
//   length (ASan/UBSan and the RSS limit catch those);
// - a failure is a Status naming a byte position or the unsupported version;
// - whatever decoded re-encodes to bytes that decode again, consume every
//   byte, and compare equal to the first decode (header and body);
// - the same body bytes are also fed to the matching RESPONSE decoder, which
//   must satisfy the same round-trip invariant.
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string>

#include "common/bytes.h"
#include "protocol/any_request.h"
#include "protocol/request_header.h"

namespace daruma::broker {
namespace {

void Check(bool condition) {
  if (!condition) std::abort();
}

void CheckFailureNamesPosition(const Status& status) {
  Check(status.code() == StatusCode::kUnsupported ||
        status.message().find(" at byte ") != std::string::npos);
}

template <typename Decode, typename Encode>
void RoundTripResponse(ByteSpan body, int16_t version, Decode decode, Encode encode) {
  ProtocolReader reader(body);
  auto first = decode(reader, version);
  if (!first.ok()) return CheckFailureNamesPosition(first.status());
  ProtocolWriter writer;
  encode(*first, version, writer);
  ProtocolReader again(writer.bytes());
  auto second = decode(again, version);
  Check(second.ok());
  Check(again.AtEnd());
  Check(*second == *first);
}

void FuzzResponse(ApiKey key, int16_t version, ByteSpan body) {
  switch (key) {
    case ApiKey::kProduce:
      return RoundTripResponse(body, version, DecodeProduceResponse, EncodeProduceResponse);
    case ApiKey::kFetch:
      return RoundTripResponse(body, version, DecodeFetchResponse, EncodeFetchResponse);
    case ApiKey::kListOffsets:
      return RoundTripResponse(body, version, DecodeListOffsetsResponse, EncodeListOffsetsResponse);
    case ApiKey::kMetadata:
      return RoundTripResponse(body, version, DecodeMetadataResponse, EncodeMetadataResponse);
    case ApiKey::kApiVersions:
      return RoundTripResponse(body, version, DecodeApiVersionsResponse, EncodeApiVersionsResponse);
    case ApiKey::kCreateTopics:
      return RoundTripResponse(body, version, DecodeCreateTopicsResponse,
                               EncodeCreateTopicsResponse);
    case ApiKey::kDeleteTopics:
      return RoundTripResponse(body, version, DecodeDeleteTopicsResponse,
                               EncodeDeleteTopicsResponse);
    case ApiKey::kDescribeConfigs:
      return RoundTripResponse(body, version, DecodeDescribeConfigsResponse,
                               EncodeDescribeConfigsResponse);
    default:
      return;
  }
}

}  // namespace
}  // namespace daruma::broker

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace daruma;
  using namespace daruma::broker;
  ByteSpan frame(data, size);
  ProtocolReader reader(frame);
  Result<RequestHeader> header = DecodeRequestHeader(reader);
  if (!header.ok()) {
    CheckFailureNamesPosition(header.status());
    return 0;
  }
  Check(reader.position() <= size);
  const ApiKey key = header->api_key;
  const int16_t version = header->api_version;
  if (!IsSupportedVersion(key, version)) return 0;
  const ByteSpan body = frame.subspan(reader.position());

  Result<AnyRequest> request = DecodeAnyRequest(reader, key, version);
  if (!request.ok()) {
    CheckFailureNamesPosition(request.status());
  } else {
    Check(request->index() != std::variant_npos);
    ProtocolWriter writer;
    EncodeRequestHeader(*header, writer);
    EncodeAnyRequest(*request, version, writer);
    ProtocolReader again(writer.bytes());
    Result<RequestHeader> header2 = DecodeRequestHeader(again);
    Check(header2.ok());
    Check(*header2 == *header);
    Result<AnyRequest> request2 = DecodeAnyRequest(again, key, version);
    Check(request2.ok());
    Check(again.AtEnd());
    Check(*request2 == *request);
  }
  FuzzResponse(key, version, body);
  return 0;
}
