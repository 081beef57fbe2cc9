// libFuzzer target: the input is one Kafka request frame without its 4-byte
// size prefix, exactly what the broker's RequestHandler receives. The header
// is decoded, then the body is fed to the request AND the response struct of
// the header's API key, at the header's version, for every message and every
// version a schema has (src/protocol/schemas) — advertised or not, so an API
// is fuzzed from the day its schema lands. The dispatch is generated
// (protocol/generated/any_message.h): a new schema needs no edit here. The
// seeds come from the same schemas (request_seed_writer.cc).
//
// Invariants checked (a violation aborts, i.e. is a finding):
// - decoding never crashes, reads out of bounds or allocates from a hostile
//   length (ASan/UBSan and the RSS/malloc limits catch those);
// - a failure is a Status naming a byte position (or, through the broker's
//   path, the unsupported version);
// - whatever decoded re-encodes to bytes that decode again, consume every
//   byte, and compare equal to the first decode (header and body);
// - for an advertised version the broker's path (DecodeAnyRequest, the
//   generated Decode*) agrees with the struct's own Read.
#include <cstddef>
#include <cstdint>
#include <string>

#include "common/bytes.h"
#include "fuzz_support.h"
#include "protocol/any_request.h"
#include "protocol/codec_util.h"
#include "protocol/request_header.h"

namespace daruma::fuzz {
namespace {

void CheckFailureNamesPosition(const Status& status) {
  Check(status.message().find(" at byte ") != std::string::npos);
}

// Reads `body` as a T at `version`; when it reads, the re-encoding must read
// back to an equal T and be consumed to its last byte. Returns whether the
// body read.
template <typename T>
bool RoundTrip(ByteSpan body, int16_t version, T& first) {
  ProtocolReader reader(body);
  Status status = first.Read(reader, version);
  if (!status.ok()) {
    CheckFailureNamesPosition(status);
    return false;
  }
  ProtocolWriter writer;
  first.Write(writer, version);
  ProtocolReader again(writer.bytes());
  T second;
  Check(second.Read(again, version).ok());
  Check(again.AtEnd());
  Check(second == first);
  return true;
}

template <typename T>
void FuzzMessage(ByteSpan body, int16_t version) {
  if (version < T::kMinVersion || version > T::kMaxVersion) return;
  T message;
  const bool read = RoundTrip(body, version, message);
  if (!IsSupportedVersion(ApiKey(T::kApiKey), version)) return;
  // The broker's path: same verdict, same value.
  ProtocolReader reader(body);
  if constexpr (T::kIsRequest) {
    Result<AnyRequest> any = DecodeAnyRequest(reader, ApiKey(T::kApiKey), version);
    Check(any.ok() == read);
    if (!any.ok()) return CheckFailureNamesPosition(any.status());
    Check(std::holds_alternative<T>(*any));
    Check(std::get<T>(*any) == message);
  } else {
    Result<T> decoded = DecodeMessage<T>(reader, version);
    Check(decoded.ok() == read);
    if (!decoded.ok()) return CheckFailureNamesPosition(decoded.status());
    Check(*decoded == message);
  }
}

}  // namespace
}  // namespace daruma::fuzz

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace daruma;
  using daruma::fuzz::Check;
  ByteSpan frame(data, size);
  ProtocolReader reader(frame);
  Result<RequestHeader> header = DecodeRequestHeader(reader);
  if (!header.ok()) {
    fuzz::CheckFailureNamesPosition(header.status());
    return 0;
  }
  Check(reader.position() <= size);
  ProtocolWriter writer;
  EncodeRequestHeader(*header, writer);
  ProtocolReader again(writer.bytes());
  Result<RequestHeader> header2 = DecodeRequestHeader(again);
  Check(header2.ok());
  Check(again.AtEnd());
  Check(*header2 == *header);

  const int16_t key = int16_t(header->api_key);
  const int16_t version = header->api_version;
  const ByteSpan body = frame.subspan(reader.position());
  auto fuzz_message = [&]<typename T>() { fuzz::FuzzMessage<T>(body, version); };
  VisitRequestType(key, fuzz_message);
  VisitResponseType(key, fuzz_message);
  return 0;
}
