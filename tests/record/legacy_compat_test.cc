// Legacy v0/v1 message sets written by an independent implementation
// (kafka-python's LegacyRecordBatchBuilder, fixtures/legacy-kafka-python):
// every file, every shallow entry and every message must decode to what
// expected.json records, and uncompressed entries must be rebuilt byte for
// byte by BuildLegacyMessage.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "record/legacy_message.h"
#include "support/test_support.h"

namespace daruma {
namespace {

using nlohmann::json;

std::string LegacyDir() {
  return testing::FixturesDir() + "/legacy-kafka-python";
}

std::optional<std::string> OptString(const json& j) {
  if (j.is_null()) return std::nullopt;
  return j.get<std::string>();
}

struct Shallow {
  size_t position;
  ByteSpan bytes;
};

// Walks the file as spec §5 does: entry size = 12 + int32 at byte 8.
std::vector<Shallow> SplitEntries(const std::string& file, const std::string& name) {
  std::vector<Shallow> out;
  ByteSpan all = AsBytes(file);
  size_t pos = 0;
  while (pos + 17 <= all.size()) {
    int32_t size = int32_t(LoadBe32(all.data() + pos + 8));
    EXPECT_GE(size, kLegacyMinMessageSizeV0) << name << " position " << pos;
    if (size < kLegacyMinMessageSizeV0 || pos + 12 + size_t(size) > all.size()) break;
    EXPECT_LT(int8_t(all[pos + 16]), 2) << name << " position " << pos << ": not a legacy entry";
    out.push_back({pos, all.subspan(pos, 12 + size_t(size))});
    pos += 12 + size_t(size);
  }
  EXPECT_EQ(pos, all.size()) << name << ": trailing bytes";
  return out;
}

class LegacyCompatTest : public ::testing::Test {
 protected:
  void SetUp() override {
    if (testing::FixturesDir().empty()) return;
    expected_ = json::parse(testing::ReadFileToString(LegacyDir() + "/expected.json"));
  }
  json expected_;
};

TEST_F(LegacyCompatTest, CoversEveryMagicAndCodec) {
  DARUMA_REQUIRE_FIXTURES();
  std::vector<std::string> names;
  for (const auto& [name, _] : expected_.items()) names.push_back(name);
  EXPECT_EQ(names.size(), 8u);
  for (int magic : {0, 1}) {
    for (const char* codec : {"none", "gzip", "snappy", "lz4"}) {
      std::string name = "magic" + std::to_string(magic) + "-" + codec + ".log";
      ASSERT_TRUE(expected_.contains(name)) << name;
      EXPECT_EQ(expected_[name]["magic"].get<int>(), magic);
      EXPECT_EQ(expected_[name]["codec"].get<std::string>(), codec);
    }
  }
}

TEST_F(LegacyCompatTest, ShallowEntriesMatchExpected) {
  DARUMA_REQUIRE_FIXTURES();
  for (const auto& [name, exp] : expected_.items()) {
    SCOPED_TRACE(name);
    std::string file = testing::ReadFileToString(LegacyDir() + "/" + name);
    std::vector<Shallow> entries = SplitEntries(file, name);
    const json& shallow = exp["shallow"];
    ASSERT_EQ(entries.size(), shallow.size());
    auto codec = CompressionFromName(exp["codec"].get<std::string>());
    ASSERT_TRUE(codec.has_value());
    for (size_t i = 0; i < entries.size(); ++i) {
      SCOPED_TRACE("shallow entry " + std::to_string(i));
      const json& s = shallow[i];
      EXPECT_EQ(entries[i].position, s["position"].get<size_t>());
      EXPECT_EQ(entries[i].bytes.size(), s["size"].get<size_t>());
      auto view = LegacyMessageView::Parse(entries[i].bytes);
      ASSERT_TRUE(view.ok()) << view.status().ToString();
      Status valid = view->Validate();
      EXPECT_TRUE(valid.ok()) << valid.ToString();
      EXPECT_EQ(view->offset(), s["offset"].get<int64_t>());
      EXPECT_EQ(view->magic(), exp["magic"].get<int>());
      EXPECT_EQ(view->compression_id(), int(*codec));
      auto records = view->DecodeRecords();
      ASSERT_TRUE(records.ok()) << records.status().ToString();
      std::vector<int64_t> offsets;
      for (const Record& r : *records) offsets.push_back(r.offset);
      EXPECT_EQ(offsets, s["innerOffsets"].get<std::vector<int64_t>>());
      // The wrapper's Offset is the offset of its last inner message (spec §3.2).
      EXPECT_EQ(view->offset(), offsets.back());
    }
  }
}

TEST_F(LegacyCompatTest, MessagesMatchExpected) {
  DARUMA_REQUIRE_FIXTURES();
  for (const auto& [name, exp] : expected_.items()) {
    SCOPED_TRACE(name);
    std::string file = testing::ReadFileToString(LegacyDir() + "/" + name);
    std::vector<LegacyDeepRecord> all;
    for (const Shallow& e : SplitEntries(file, name)) {
      auto view = LegacyMessageView::Parse(e.bytes);
      ASSERT_TRUE(view.ok()) << view.status().ToString();
      auto deep = view->DecodeDeep();
      ASSERT_TRUE(deep.ok()) << "position " << e.position << ": " << deep.status().ToString();
      all.insert(all.end(), deep->begin(), deep->end());
    }
    const json& messages = exp["messages"];
    ASSERT_EQ(all.size(), messages.size());
    const int magic = exp["magic"].get<int>();
    for (size_t i = 0; i < all.size(); ++i) {
      SCOPED_TRACE("message " + std::to_string(i));
      const json& m = messages[i];
      const Record& r = all[i].record;
      EXPECT_EQ(r.offset, m["offset"].get<int64_t>());
      const int64_t ts = m["timestamp"].is_null() ? kNoTimestamp : m["timestamp"].get<int64_t>();
      EXPECT_EQ(r.timestamp, ts);
      EXPECT_EQ(r.key, OptString(m["key"]));
      EXPECT_EQ(r.value, OptString(m["value"]));
      EXPECT_EQ(r.sequence, kNoSequence);
      EXPECT_TRUE(r.headers.empty());
      EXPECT_EQ(all[i].magic, magic);
      EXPECT_TRUE(all[i].crc_valid);
      EXPECT_EQ(all[i].timestamp_type,
                magic == 0 ? TimestampType::kNoTimestamp : TimestampType::kCreateTime);
      EXPECT_EQ(all[i].key_size, r.key ? int32_t(r.key->size()) : -1);
      EXPECT_EQ(all[i].value_size, r.value ? int32_t(r.value->size()) : -1);
    }
  }
}

// An independent writer's uncompressed entries are exactly what
// BuildLegacyMessage produces from the same fields.
TEST_F(LegacyCompatTest, UncompressedEntriesRebuildByteForByte) {
  DARUMA_REQUIRE_FIXTURES();
  for (const char* name : {"magic0-none.log", "magic1-none.log"}) {
    SCOPED_TRACE(name);
    std::string file = testing::ReadFileToString(LegacyDir() + "/" + name);
    std::vector<Shallow> entries = SplitEntries(file, name);
    const json& messages = expected_[name]["messages"];
    ASSERT_EQ(entries.size(), messages.size());
    const int8_t magic = int8_t(expected_[name]["magic"].get<int>());
    for (size_t i = 0; i < entries.size(); ++i) {
      const json& m = messages[i];
      const int64_t ts = m["timestamp"].is_null() ? kNoTimestamp : m["timestamp"].get<int64_t>();
      Bytes rebuilt = BuildLegacyMessage(magic, m["offset"].get<int64_t>(), ts, OptString(m["key"]),
                                         OptString(m["value"]));
      EXPECT_EQ(rebuilt, Bytes(entries[i].bytes.begin(), entries[i].bytes.end()))
          << "entry at position " << entries[i].position;
    }
  }
}

// Every compressed wrapper's CRC and structure check out, and a corrupted
// byte inside the compressed value is caught by the outer CRC alone.
TEST_F(LegacyCompatTest, OuterCrcCoversCompressedValue) {
  DARUMA_REQUIRE_FIXTURES();
  for (const char* name : {"magic0-gzip.log", "magic1-snappy.log", "magic1-lz4.log"}) {
    SCOPED_TRACE(name);
    std::string file = testing::ReadFileToString(LegacyDir() + "/" + name);
    std::vector<Shallow> entries = SplitEntries(file, name);
    ASSERT_FALSE(entries.empty());
    Bytes copy(entries[0].bytes.begin(), entries[0].bytes.end());
    copy[copy.size() - 5] ^= 0x40;
    Status st = LegacyMessageView(copy).Validate();
    ASSERT_FALSE(st.ok());
    EXPECT_NE(st.message().find("field crc at byte 12"), std::string::npos) << st.message();
  }
}

}  // namespace
}  // namespace daruma
