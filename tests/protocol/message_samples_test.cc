// The sample messages generated from the schemas (protocol/generated/
// samples.h), which are request_decoder_fuzz's seeds: every message of every
// schema at every version of its schema has a default and a filled sample,
// and each sample's frame decodes to the message it was written from.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <set>
#include <string>
#include <tuple>
#include <variant>

#include "protocol/any_request.h"
#include "protocol/generated/any_message.h"
#include "protocol/generated/api_schemas.h"
#include "protocol/generated/samples.h"
#include "protocol/request_header.h"

namespace daruma {
namespace {

// (api key, is request, version, filled)
using SampleKey = std::tuple<int16_t, bool, int16_t, bool>;

std::set<SampleKey> SampleKeys() {
  std::set<SampleKey> keys;
  for (const MessageSample& s : MessageSamples()) {
    EXPECT_TRUE(keys.insert({s.api_key, s.is_request, s.version, s.filled}).second) << s.Name();
  }
  return keys;
}

TEST(MessageSamplesTest, EveryMessageAndVersionHasADefaultAndAFilledSample) {
  const std::set<SampleKey> keys = SampleKeys();
  size_t expected = 0;
  ForEachMessageType([&]<typename T>() {
    for (int16_t v = T::kMinVersion; v <= T::kMaxVersion; ++v) {
      for (bool filled : {false, true}) {
        EXPECT_TRUE(keys.contains({T::kApiKey, T::kIsRequest, v, filled}))
            << T::kApiName << (T::kIsRequest ? " request v" : " response v") << v;
        ++expected;
      }
    }
  });
  EXPECT_EQ(keys.size(), expected);
}

TEST(MessageSamplesTest, EveryApiOfTheTableHasRequestAndResponseSamplesAtEachVersion) {
  const std::set<SampleKey> keys = SampleKeys();
  for (const ApiSchema& api : kApiSchemas) {
    for (int16_t v = api.min_version; v <= api.max_version; ++v) {
      EXPECT_TRUE(keys.contains({api.key, true, v, true})) << api.name << " request v" << v;
      EXPECT_TRUE(keys.contains({api.key, false, v, true})) << api.name << " response v" << v;
    }
  }
}

TEST(MessageSamplesTest, SampleNamesAreUniqueFileNames) {
  std::set<std::string> names;
  for (const MessageSample& s : MessageSamples()) {
    const std::string name = s.Name();
    EXPECT_TRUE(names.insert(name).second) << name;
    EXPECT_EQ(name.find('/'), std::string::npos) << name;
  }
}

TEST(MessageSamplesTest, EverySampleFrameDecodesToItsMessage) {
  for (const MessageSample& s : MessageSamples()) {
    const Bytes frame = SampleFrame(s);
    ProtocolReader reader(frame);
    Result<RequestHeader> header = DecodeRequestHeader(reader);
    ASSERT_TRUE(header.ok()) << s.Name() << ": " << header.status().ToString();
    EXPECT_EQ(int16_t(header->api_key), s.api_key) << s.Name();
    EXPECT_EQ(header->api_version, s.version) << s.Name();
    const ByteSpan body = ByteSpan(frame).subspan(reader.position());
    EXPECT_TRUE(std::ranges::equal(body, s.body)) << s.Name();

    auto check = [&]<typename T>() {
      ProtocolReader r(body);
      T decoded;
      Status status = decoded.Read(r, s.version);
      ASSERT_TRUE(status.ok()) << s.Name() << ": " << status.ToString();
      EXPECT_TRUE(r.AtEnd()) << s.Name() << ": " << r.remaining() << " bytes left";
      T expected;
      if (s.filled) Fill(expected, s.version, 0);
      EXPECT_TRUE(decoded == expected) << s.Name();
      // An advertised request also decodes through the broker's path.
      if constexpr (T::kIsRequest) {
        if (!IsSupportedVersion(ApiKey(s.api_key), s.version)) return;
        ProtocolReader any_reader(body);
        Result<AnyRequest> any = DecodeAnyRequest(any_reader, ApiKey(s.api_key), s.version);
        ASSERT_TRUE(any.ok()) << s.Name() << ": " << any.status().ToString();
        ASSERT_TRUE(std::holds_alternative<T>(*any)) << s.Name();
        EXPECT_TRUE(std::get<T>(*any) == expected) << s.Name();
      }
    };
    const bool visited =
        s.is_request ? VisitRequestType(s.api_key, check) : VisitResponseType(s.api_key, check);
    EXPECT_TRUE(visited) << s.Name();
  }
}

}  // namespace
}  // namespace daruma
