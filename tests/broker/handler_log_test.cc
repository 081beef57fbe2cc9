// What RequestHandler logs (request_log.h) and the handler table that decides
// what it serves (api_handlers.h): one case per kind of refused request, the
// error_response line, and the rate limit over a client repeating itself.
#include <gtest/gtest.h>

#include <sstream>
#include <string>

#include "broker/api_handlers.h"
#include "broker/event_log.h"
#include "broker/handler_harness.h"
#include "broker/request_metrics.h"
#include "protocol/messages.h"

namespace daruma::broker {
namespace {

using testing::HandlerHarness;

bool Has(const std::string& text, const std::string& part) {
  return text.find(part) != std::string::npos;
}

int Count(const std::string& text, const std::string& part) {
  int n = 0;
  for (size_t at = text.find(part); at != std::string::npos; at = text.find(part, at + 1)) ++n;
  return n;
}

// A harness whose handler logs into `out`, on a clock that stands still
// unless the test moves it.
struct LoggedHarness {
  std::ostringstream out;
  std::chrono::steady_clock::time_point now{};
  EventLog log{{&out, LogLevel::kInfo, 10, "", [this] { return now; }}};
  HandlerHarness h{[this](BrokerContext& ctx) { ctx.log = &log; }};

  std::shared_ptr<testing::Reply> Send(ApiKey key, int16_t version, std::string_view body = "",
                                       std::string client = "test client") {
    ProtocolWriter w;
    EncodeRequestHeader({key, version, 5, std::move(client)}, w);
    w.WriteRaw(AsBytes(body));
    return h.SubmitFrame(w.Release());
  }
};

TEST(HandlerTable, EveryRowHasACodecAndApiVersionsListsExactlyTheRows) {
  std::vector<ApiVersionsResponse::Key> keys = HandledApiKeys();
  ASSERT_EQ(keys.size(), ApiHandlerTable().size());
  for (const ApiHandlerRow& row : ApiHandlerTable()) {
    const ApiVersionRange* range = FindAdvertisedApi(row.key);
    ASSERT_NE(range, nullptr) << ApiKeyName(row.key) << " has a handler but no codec range";
    // Logs and /metrics name every api served (DeleteGroups and OffsetDelete
    // were "unknown" for a while).
    EXPECT_NE(daruma::broker::ApiKeyName(int16_t(row.key)), "Unknown")
        << "api key " << int(row.key) << " has no name";
    EXPECT_EQ(FindApiHandler(row.key), &row);
    EXPECT_EQ(HandledVersions(row.key), range);
  }
  for (size_t i = 1; i < keys.size(); ++i) {
    EXPECT_LT(int16_t(keys[i - 1].api_key), int16_t(keys[i].api_key)) << "sorted by key";
  }
  EXPECT_EQ(FindApiHandler(ApiKey::kWriteTxnMarkers), nullptr);
  EXPECT_EQ(HandledVersions(ApiKey::kWriteTxnMarkers), nullptr);
}

TEST(HandlerLog, AnUnknownApiKeyClosesWithOneLine) {
  LoggedHarness l;
  auto r = l.Send(ApiKey(99), 0);
  EXPECT_TRUE(r->done && r->close && !r->frame);
  EXPECT_EQ(l.out.str(),
            "level=INFO event=request_rejected client_id=\"test client\" api_key=99 api=unknown "
            "api_version=0 correlation_id=5 kind=unknown_api_key "
            "reason=\"api key 99 is not supported by this broker\" action=close\n");
}

TEST(HandlerLog, AKafkaApiWithoutAHandlerRowIsAnUnknownKeyToo) {
  LoggedHarness l;
  auto r = l.Send(ApiKey::kWriteTxnMarkers, 1);
  EXPECT_TRUE(r->done && r->close && !r->frame);
  EXPECT_TRUE(Has(l.out.str(), "api_key=27 api=WriteTxnMarkers api_version=1")) << l.out.str();
  EXPECT_TRUE(Has(l.out.str(), "kind=unknown_api_key")) << l.out.str();
}

TEST(HandlerLog, AVersionOutsideTheRangeClosesNamingTheRange) {
  LoggedHarness l;
  auto above = l.Send(ApiKey::kProduce, 12);
  EXPECT_TRUE(above->done && above->close && !above->frame);
  auto below = l.Send(ApiKey::kFetch, 3);
  EXPECT_TRUE(below->done && below->close && !below->frame);
  const std::string text = l.out.str();
  EXPECT_TRUE(Has(text,
                  "api_key=0 api=Produce api_version=12 correlation_id=5 "
                  "kind=unsupported_version reason=\"Produce version 12 is not supported "
                  "(supported 0-11)\" action=close"))
      << text;
  EXPECT_TRUE(Has(text, "api=Fetch api_version=3")) << text;
}

TEST(HandlerLog, ATooNewApiVersionsIsAnsweredInV0FormAndLogged) {
  LoggedHarness l;
  auto r = l.Send(ApiKey::kApiVersions, 99, "a body of a version nobody knows");
  ASSERT_TRUE(r->done);
  EXPECT_FALSE(r->close);
  ApiVersionsResponse v0 =
      HandlerHarness::DecodeReply(*r, ApiKey::kApiVersions, 0, DecodeApiVersionsResponse, 5);
  EXPECT_EQ(v0.error_code, ErrorCode::kUnsupportedVersion);
  EXPECT_EQ(v0.api_keys, HandledApiKeys());
  EXPECT_TRUE(Has(l.out.str(),
                  "api=ApiVersions api_version=99 correlation_id=5 "
                  "kind=unsupported_version"))
      << l.out.str();
  EXPECT_TRUE(Has(l.out.str(), "action=unsupported_version_response")) << l.out.str();
}

TEST(HandlerLog, AMalformedBodyClosesNamingTheField) {
  LoggedHarness l;
  ProtocolWriter cut;
  EncodeRequestHeader({ApiKey::kMetadata, 4, 9, std::string("cutter")}, cut);
  cut.WriteInt32(3);  // three topic names announced, none sent
  auto r = l.h.SubmitFrame(cut.Release());
  EXPECT_TRUE(r->done && r->close && !r->frame);
  EXPECT_TRUE(Has(l.out.str(),
                  "event=request_rejected client_id=cutter api_key=3 api=Metadata "
                  "api_version=4 correlation_id=9 kind=malformed_body reason="))
      << l.out.str();
  EXPECT_EQ(Count(l.out.str(), "\n"), 1);
}

TEST(HandlerLog, AMalformedHeaderClosesWithWhatTheFrameHad) {
  LoggedHarness l;
  auto r = l.h.SubmitFrame(Bytes{0x00, 0x03, 0x00});
  EXPECT_TRUE(r->done && r->close && !r->frame);
  EXPECT_TRUE(Has(l.out.str(),
                  "client_id=\"\" api_key=3 api=Metadata api_version=-1 "
                  "kind=malformed_header"))
      << l.out.str();
}

TEST(HandlerLog, AnErrorResponseNamesTheClientApiAndError) {
  LoggedHarness l;
  DeleteTopicsRequest request{.topic_names = {"never"}, .timeout_ms = 1000};
  auto r = l.h.Submit(ApiKey::kDeleteTopics, 1, request, EncodeDeleteTopicsRequest);
  ASSERT_TRUE(r->done && r->frame);
  EXPECT_EQ(l.out.str(),
            "level=INFO event=error_response client_id=harness api=DeleteTopics api_version=1 "
            "correlation_id=42 error=UNKNOWN_TOPIC_OR_PARTITION errors=1 at=\"topic=never\"\n");
}

TEST(HandlerLog, ASuccessfulResponseWritesNothing) {
  LoggedHarness l;
  l.h.CreateTopic("fine", 1);
  ApiVersionsResponse r = l.h.Call(ApiKey::kApiVersions, 3, ApiVersionsRequest{"kcat", "1"},
                                   EncodeApiVersionsRequest, DecodeApiVersionsResponse);
  EXPECT_EQ(r.error_code, ErrorCode::kNone);
  EXPECT_EQ(l.out.str(), "");
}

TEST(HandlerLog, AClientRepeatingAMistakeIsRateLimited) {
  LoggedHarness l;
  for (int i = 0; i < 50; ++i) l.Send(ApiKey(1000 + i), 0);
  EXPECT_EQ(Count(l.out.str(), "event=request_rejected"), 10)
      << "odd keys share one limit key, like their metric series";
  l.now += std::chrono::seconds(1);
  l.Send(ApiKey(7777), 0);
  EXPECT_TRUE(Has(l.out.str(),
                  "event=log_suppressed limit_key=request_rejected/unknown/"
                  "unknown_api_key suppressed=40\n"))
      << l.out.str();
  EXPECT_EQ(Count(l.out.str(), "event=request_rejected"), 11);
}

}  // namespace
}  // namespace daruma::broker
