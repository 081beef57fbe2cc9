// The background scrubber in the broker (broker/scrubber.h), issue 22: a bit
// flipped in an old segment of a running broker is found by one pass; Fetch
// refuses the damaged range with CORRUPT_MESSAGE and still serves the bytes
// before it; /metrics and /health show the finding; the findings file keeps
// it for `daruma repair` and the next start; a repaired or removed segment
// loses its finding at the next pass. Through the handler harness, both with
// zero-copy file ranges and with copied bytes.
#include "broker/scrubber.h"

#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "broker/health.h"
#include "broker/metrics.h"
#include "handler_harness.h"
#include "log/log_file_names.h"
#include "prometheus_text.h"
#include "record/log_entry.h"
#include "recovery/scrub_findings.h"

namespace daruma::broker {
namespace {

using testing::ClientBatch;
using testing::HandlerHarness;
using testing::ParsePrometheusText;

constexpr char kScrubbedTopic[] = "scrubbed";
constexpr int kBatches = 16;
constexpr int kRecordsPerBatch = 3;

// Where the batches of one segment file start (and where it ends).
std::vector<int64_t> BatchPositions(const std::string& path) {
  const std::string bytes = daruma::testing::ReadFileToString(path);
  std::vector<int64_t> out;
  size_t pos = 0;
  while (pos + 12 <= bytes.size()) {
    out.push_back(int64_t(pos));
    pos += 12 + LoadBe32(reinterpret_cast<const uint8_t*>(bytes.data()) + pos + 8);
  }
  out.push_back(int64_t(pos));
  return out;
}

void FlipBit(const std::string& path, int64_t position) {
  std::string bytes = daruma::testing::ReadFileToString(path);
  bytes[size_t(position)] ^= 0x04;
  daruma::testing::WriteStringToFile(path, bytes);
}

// Offsets of the whole, valid batches in fetched bytes.
std::vector<int64_t> BaseOffsets(const std::optional<Bytes>& records) {
  std::vector<int64_t> out;
  if (!records) return out;
  size_t pos = 0;
  while (pos + 17 <= records->size()) {
    const size_t size = 12 + LoadBe32(records->data() + pos + 8);
    if (pos + size > records->size()) break;
    LogEntry e{int64_t(pos), ByteSpan(records->data() + pos, size), int8_t((*records)[pos + 16])};
    EXPECT_TRUE(e.Validate().ok()) << "served a damaged batch at " << pos;
    out.push_back(e.batch().base_offset());
    pos += size;
  }
  return out;
}

class ScrubberBrokerTest : public ::testing::TestWithParam<bool> {
 protected:
  ScrubberBrokerTest() {
    h_ = std::make_unique<HandlerHarness>([this](BrokerContext& ctx) {
      ScrubberOptions o;
      o.logs = ctx.log_manager;
      o.log_dirs = ctx.config.log_dirs;
      o.clock = &clock_;
      o.settings.bytes_per_second = 4096;  // on the fake clock
      o.chunk_bytes = 1024;
      o.sleep = [this](int64_t ms) {
        clock_.Advance(ms);
        if (on_sleep_) std::exchange(on_sleep_, nullptr)();
        return true;
      };
      scrubber_ = std::make_unique<Scrubber>(std::move(o));
      scrubber_->Load();
      ctx.scrubber = scrubber_.get();
      if (GetParam()) ctx.zero_copy_fs = FileSystem::Default();
    });
    EXPECT_EQ(
        h_->CreateTopic(kScrubbedTopic, 1, {{"segment.bytes", "3000"}}).topics.at(0).error_code,
        ErrorCode::kNone);
    for (int i = 0; i < kBatches; ++i) {
      std::vector<std::string> values;
      for (int r = 0; r < kRecordsPerBatch; ++r) values.push_back(std::string(100, char('a' + i)));
      EXPECT_EQ(h_->Produce(kScrubbedTopic, 0, ClientBatch(values)).error_code, ErrorCode::kNone);
    }
    // Below the recovery point: what a scrub reads.
    EXPECT_TRUE(log()->FlushAll().ok());
  }
  ~ScrubberBrokerTest() override { h_.reset(); }  // the handler before the scrubber

  Log* log() { return h_->manager().GetLog({kScrubbedTopic, 0}); }
  std::string Segment(int64_t base) { return LogFileName(log()->dir(), base); }
  FetchResponse::Partition Fetch(int64_t offset) {
    return h_->Fetch(kScrubbedTopic, 0, offset, 11, /*isolation=*/0);
  }

  ManualClock clock_{1700000000000};
  std::function<void()> on_sleep_;  // runs once, at the rate limiter's next wait
  std::unique_ptr<Scrubber> scrubber_;
  std::unique_ptr<HandlerHarness> h_;
};

TEST_P(ScrubberBrokerTest, CleanLogHasNoFindingsAndEverySegmentIsRead) {
  ASSERT_GE(log()->num_segments(), 3u);
  EXPECT_TRUE(scrubber_->RunPass());
  const ScrubStatus s = scrubber_->Snapshot();
  EXPECT_EQ(s.passes_completed, 1);
  EXPECT_EQ(s.segments_scrubbed_total, int64_t(log()->num_segments()) - 1);  // not the active one
  EXPECT_EQ(s.bytes_scrubbed_total, s.pass_bytes_total);
  EXPECT_TRUE(s.findings.empty());
  EXPECT_FALSE(scrubber_->HasFindings());
  EXPECT_EQ(BaseOffsets(Fetch(0).records).front(), 0);
}

TEST_P(ScrubberBrokerTest, FlippedBitIsFoundNotServedAndShown) {
  const std::vector<int64_t> bases = log()->segment_base_offsets();
  ASSERT_GE(bases.size(), 3u);
  const int64_t base = bases[1];
  const std::vector<int64_t> pos = BatchPositions(Segment(base));
  ASSERT_GE(pos.size(), 4u);  // at least 3 batches
  FlipBit(Segment(base), pos[1] + 90);
  const int64_t damaged_first = base + kRecordsPerBatch;
  const int64_t damaged_end = base + 2 * kRecordsPerBatch;

  EXPECT_TRUE(scrubber_->RunPass());
  const ScrubStatus s = scrubber_->Snapshot();
  ASSERT_EQ(s.findings.size(), 1u);
  const ScrubFinding& f = s.findings[0].finding;
  EXPECT_EQ(f.tp, (TopicPartition{kScrubbedTopic, 0}));
  EXPECT_EQ(f.segment_base, base);
  EXPECT_EQ(f.damage.kind, DamageKind::kBadCrc);
  EXPECT_EQ(f.damage.position, pos[1]);
  EXPECT_EQ(f.damage.end_position, pos[2]);
  EXPECT_EQ(f.damage.first_offset, damaged_first);
  EXPECT_EQ(f.damage.end_offset, damaged_end);
  EXPECT_EQ(s.findings_recorded_total, 1);

  // Fetch: the damaged offsets are refused, the batches before them served
  // (from the log's start, the read stops at the damage), those after too.
  for (int64_t o = damaged_first; o < damaged_end; ++o) {
    const FetchResponse::Partition refused = Fetch(o);
    EXPECT_EQ(refused.error_code, ErrorCode::kCorruptMessage) << "offset " << o;
    // Empty, not null: librdkafka takes a null record set (size -1) for a
    // protocol error and retries without end.
    ASSERT_TRUE(refused.records.has_value()) << "offset " << o;
    EXPECT_TRUE(refused.records->empty()) << "offset " << o;
  }
  // From the segment's first batch the read stops at the damage.
  FetchResponse::Partition before = Fetch(base);
  EXPECT_EQ(before.error_code, ErrorCode::kNone);
  EXPECT_EQ(BaseOffsets(before.records), std::vector<int64_t>{base});
  // From the log's start: whatever the read reaches, never the damage.
  const std::vector<int64_t> from_start = BaseOffsets(Fetch(0).records);
  ASSERT_FALSE(from_start.empty());
  EXPECT_EQ(from_start.front(), 0);
  EXPECT_LT(from_start.back(), damaged_first);
  FetchResponse::Partition after = Fetch(damaged_end);
  EXPECT_EQ(after.error_code, ErrorCode::kNone);
  EXPECT_EQ(BaseOffsets(after.records).front(), damaged_end);

  // /metrics and /health.
  MetricsSources sources;
  sources.state = BrokerState::kServing;
  sources.log_manager = &h_->manager();
  sources.logs_readable = true;
  sources.scrub = &s;
  const auto prom = ParsePrometheusText(RenderPrometheus(sources));
  EXPECT_TRUE(prom.errors.empty());
  std::map<std::string, double> values;
  for (const auto& sample : prom.samples) values[sample.name] = sample.value;
  EXPECT_EQ(values["daruma_scrub_damaged_ranges"], 1);
  EXPECT_EQ(values["daruma_scrub_findings_total"], 1);
  EXPECT_EQ(values["daruma_scrub_passes_total"], 1);
  EXPECT_EQ(values["daruma_scrub_damaged_bytes"], double(pos[2] - pos[1]));
  EXPECT_GT(values["daruma_scrub_bytes_total"], 0);
  const nlohmann::json health = HealthJson(BrokerState::kServing, &h_->manager(), "127.0.0.1:1",
                                           std::nullopt, std::nullopt, s);
  const nlohmann::json& hf = health.at("scrub").at("findings").at(0);
  EXPECT_EQ(hf.at("topic"), kScrubbedTopic);
  EXPECT_EQ(hf.at("segment"), base);
  EXPECT_EQ(hf.at("position"), pos[1]);
  EXPECT_EQ(hf.at("endPosition"), pos[2]);
  EXPECT_EQ(hf.at("firstOffset"), damaged_first);
  EXPECT_EQ(hf.at("endOffset"), damaged_end);
  EXPECT_EQ(hf.at("kind"), "bad_crc");
  EXPECT_EQ(health.at("scrub").at("passesCompleted"), 1);

  // The findings file, for `daruma repair`.
  auto file = ReadScrubFindings(FileSystem::Default(), h_->dir());
  ASSERT_TRUE(file.ok()) << file.status().ToString();
  ASSERT_EQ(file->findings.size(), 1u);
  EXPECT_EQ(file->findings[0], f);
  EXPECT_TRUE(file->last_pass_completed_ms.has_value());
}

TEST_P(ScrubberBrokerTest, FindingsSurviveARestart) {
  const int64_t base = log()->segment_base_offsets()[1];
  const std::vector<int64_t> pos = BatchPositions(Segment(base));
  FlipBit(Segment(base), pos[0] + 90);
  EXPECT_TRUE(scrubber_->RunPass());
  ASSERT_TRUE(scrubber_->HasFindings());
  h_->Restart();  // a new scrubber loads the file; no pass has run
  EXPECT_TRUE(scrubber_->HasFindings());
  EXPECT_EQ(Fetch(base).error_code, ErrorCode::kCorruptMessage);
  EXPECT_EQ(BaseOffsets(Fetch(0).records).back(), base - kRecordsPerBatch);
}

TEST_P(ScrubberBrokerTest, RepairedSegmentLosesItsFindingAtTheNextPass) {
  const int64_t base = log()->segment_base_offsets()[0];
  const std::vector<int64_t> pos = BatchPositions(Segment(base));
  FlipBit(Segment(base), pos[1] + 90);
  EXPECT_TRUE(scrubber_->RunPass());
  EXPECT_EQ(Fetch(kRecordsPerBatch).error_code, ErrorCode::kCorruptMessage);
  FlipBit(Segment(base), pos[1] + 90);  // flipped back
  EXPECT_TRUE(scrubber_->RunPass());
  EXPECT_FALSE(scrubber_->HasFindings());
  EXPECT_EQ(Fetch(kRecordsPerBatch).error_code, ErrorCode::kNone);
  auto file = ReadScrubFindings(FileSystem::Default(), h_->dir());
  ASSERT_TRUE(file.ok());
  EXPECT_TRUE(file->findings.empty());
}

TEST_P(ScrubberBrokerTest, SegmentRewrittenSinceIsServedAgainBeforeTheNextPass) {
  const int64_t base = log()->segment_base_offsets()[0];
  FlipBit(Segment(base), BatchPositions(Segment(base))[1] + 90);
  EXPECT_TRUE(scrubber_->RunPass());
  EXPECT_EQ(Fetch(kRecordsPerBatch).error_code, ErrorCode::kCorruptMessage);
  // What `daruma repair` or the cleaner leaves: another file under the name.
  FlipBit(Segment(base), BatchPositions(Segment(base))[1] + 90);
  ASSERT_TRUE(FileSystem::Default()->SetModifiedTimeMs(Segment(base), 1600000000000).ok());
  EXPECT_TRUE(scrubber_->HasFindings());  // until the next pass
  EXPECT_EQ(Fetch(kRecordsPerBatch).error_code, ErrorCode::kNone);
}

TEST_P(ScrubberBrokerTest, DeletedTopicsFindingsAreNotAppliedToItsSuccessor) {
  const int64_t base = log()->segment_base_offsets()[0];
  FlipBit(Segment(base), BatchPositions(Segment(base))[0] + 90);
  EXPECT_TRUE(scrubber_->RunPass());
  ASSERT_TRUE(scrubber_->HasFindings());
  DeleteTopicsRequest del{.topic_names = {kScrubbedTopic}, .timeout_ms = 1000};
  h_->Call(ApiKey::kDeleteTopics, 1, del, EncodeDeleteTopicsRequest, DecodeDeleteTopicsResponse);
  h_->CreateTopic(kScrubbedTopic, 1);
  EXPECT_EQ(h_->Produce(kScrubbedTopic, 0, ClientBatch({"x"})).error_code, ErrorCode::kNone);
  EXPECT_EQ(Fetch(0).error_code, ErrorCode::kNone);
  EXPECT_TRUE(scrubber_->RunPass());  // prunes the old log's finding
  EXPECT_FALSE(scrubber_->HasFindings());
}

TEST_P(ScrubberBrokerTest, SegmentRemovedByRetentionMidScanIsNotAFinding) {
  const int64_t base = log()->segment_base_offsets()[0];
  FlipBit(Segment(base), BatchPositions(Segment(base))[0] + 90);
  // Retention removes the damaged segment while the scan waits for the rate
  // limit (after its first block): the open handle still reads it.
  bool retained = false;
  on_sleep_ = [&] {
    retained = log()->MaybeIncrementLogStartOffset(log()->segment_base_offsets()[1]).ok() &&
               h_->manager().RunRetention(log()).ok();
  };
  EXPECT_TRUE(scrubber_->RunPass());
  EXPECT_TRUE(retained);
  EXPECT_FALSE(FileSystem::Default()->Exists(Segment(base)));
  EXPECT_FALSE(scrubber_->HasFindings());
  EXPECT_GT(scrubber_->Snapshot().segments_scrubbed_total, 0);
}

TEST_P(ScrubberBrokerTest, ThreadStopsPromptlyWhenWaiting) {
  ScrubberOptions o;
  o.logs = &h_->manager();
  o.log_dirs = {h_->dir()};
  o.settings.initial_delay_ms = int64_t(1) << 40;  // never due in this test
  Scrubber idle(std::move(o));
  idle.Start();
  EXPECT_EQ(idle.Snapshot().state, "waiting");
  idle.Stop();
  EXPECT_EQ(idle.Snapshot().state, "stopped");
}

TEST_P(ScrubberBrokerTest, DisabledScrubberReadsNothing) {
  ScrubberOptions o;
  o.logs = &h_->manager();
  o.log_dirs = {h_->dir()};
  o.settings.enable = false;
  Scrubber off(std::move(o));
  off.Start();
  EXPECT_EQ(off.Snapshot().state, "disabled");
  EXPECT_FALSE(off.Snapshot().enabled);
  off.Stop();
}

INSTANTIATE_TEST_SUITE_P(ZeroCopy, ScrubberBrokerTest, ::testing::Bool(),
                         [](const ::testing::TestParamInfo<bool>& i) {
                           return i.param ? "FileRanges" : "CopiedBytes";
                         });

}  // namespace
}  // namespace daruma::broker
