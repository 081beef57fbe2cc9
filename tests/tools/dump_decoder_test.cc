// The `__consumer_offsets` (--offsets-decoder) and `__transaction_state`
// (--transaction-log-decoder) decoders of `daruma dump`: exact key and
// payload text for every key type and value version, tombstones, embedded
// consumer-protocol blobs, flexible versions with tagged fields, and the
// error texts; plus the record line they produce through RunDump.
#include <gtest/gtest.h>

#include <sstream>
#include <string>
#include <vector>

#include "common/bytes.h"
#include "record/record_batch_builder.h"
#include "support/test_support.h"
#include "tools/dump_command.h"
#include "tools/kraft_control_record_decoder.h"
#include "tools/offsets_message_decoder.h"
#include "tools/transaction_log_decoder.h"

namespace daruma::tools {
namespace {

// Builds Kafka protocol bytes: classic (int16/int32 lengths) or flexible
// (compact lengths).
class Enc {
 public:
  explicit Enc(bool flexible = false) : flexible_(flexible), w_(&bytes_) {}
  Enc& I8(int8_t v) { return w_.WriteInt8(v), *this; }
  Enc& I16(int16_t v) { return w_.WriteInt16(v), *this; }
  Enc& I32(int32_t v) { return w_.WriteInt32(v), *this; }
  Enc& I64(int64_t v) { return w_.WriteInt64(v), *this; }
  Enc& Str(const std::string& s) {
    flexible_ ? w_.WriteUnsignedVarint(uint32_t(s.size() + 1)) : w_.WriteInt16(int16_t(s.size()));
    w_.WriteBytes(AsBytes(s));
    return *this;
  }
  Enc& NullStr() { return flexible_ ? w_.WriteUnsignedVarint(0) : w_.WriteInt16(-1), *this; }
  Enc& Blob(const std::string& s) {
    flexible_ ? w_.WriteUnsignedVarint(uint32_t(s.size() + 1)) : w_.WriteInt32(int32_t(s.size()));
    w_.WriteBytes(AsBytes(s));
    return *this;
  }
  Enc& NullBlob() { return flexible_ ? w_.WriteUnsignedVarint(0) : w_.WriteInt32(-1), *this; }
  Enc& Array(int32_t n) {
    flexible_ ? w_.WriteUnsignedVarint(uint32_t(n + 1)) : w_.WriteInt32(n);
    return *this;
  }
  // An empty tagged-field section, or one field with `tag` and `data`.
  Enc& NoTags() { return flexible_ ? w_.WriteUnsignedVarint(0) : void(), *this; }
  Enc& Tag(uint32_t tag, const std::string& data) {
    w_.WriteUnsignedVarint(1);
    w_.WriteUnsignedVarint(tag);
    w_.WriteUnsignedVarint(uint32_t(data.size()));
    w_.WriteBytes(AsBytes(data));
    return *this;
  }
  std::string str() const { return std::string(bytes_.begin(), bytes_.end()); }

 private:
  bool flexible_;
  Bytes bytes_;
  ByteWriter w_;
};

Record MakeRecord(std::optional<std::string> key, std::optional<std::string> value,
                  int64_t offset = 17) {
  Record r;
  r.offset = offset;
  r.key = std::move(key);
  r.value = std::move(value);
  return r;
}

std::string OffsetKey(int16_t type) {
  return Enc().I16(type).Str("g1").Str("orders").I32(3).str();
}

constexpr char kOffsetKeyJson[] =
    R"({"type":"1","data":{"group":"g1","topic":"orders","partition":3}})";

// KRaft's control records as kafka-dump-log prints them (its generated JSON
// converters); a value that does not decode gets no description.
TEST(KraftControlRecordTest, SnapshotHeaderFooterKraftVersionAndVoters) {
  EXPECT_EQ(DescribeKraftControlRecord(ControlRecordType::kSnapshotHeader,
                                       Enc(true).I16(0).I64(1728565330138).NoTags().str()),
            R"(SnapshotHeader {"version":0,"lastContainedLogTimestamp":1728565330138})");
  EXPECT_EQ(DescribeKraftControlRecord(ControlRecordType::kSnapshotFooter,
                                       Enc(true).I16(0).Tag(7, "xy").str()),
            R"(SnapshotFooter {"version":0})");
  EXPECT_EQ(DescribeKraftControlRecord(ControlRecordType::kKraftVersion,
                                       Enc(true).I16(0).I16(1).NoTags().str()),
            R"(KRaftVersion {"version":0,"kRaftVersion":1})");
  const std::string voters = Enc(true)
                                 .I16(0)
                                 .Array(1)
                                 .I32(1)
                                 .I64(0x0102030405060708)
                                 .I64(0x090a0b0c0d0e0f10)
                                 .Array(1)
                                 .Str("CONTROLLER")
                                 .Str("localhost")
                                 .I16(int16_t(uint16_t(60000)))
                                 .NoTags()
                                 .I16(0)
                                 .I16(1)
                                 .NoTags()
                                 .NoTags()
                                 .NoTags()
                                 .str();
  EXPECT_EQ(DescribeKraftControlRecord(ControlRecordType::kKraftVoters, voters),
            R"(KRaftVoters {"version":0,"voters":[{"voterId":1,"voterDirectoryId":")"
            R"(AQIDBAUGBwgJCgsMDQ4PEA","endpoints":[{"name":"CONTROLLER","host":"localhost",)"
            R"("port":60000}],"kRaftVersionFeature":{"minSupportedVersion":0,)"
            R"("maxSupportedVersion":1}}]})");
  EXPECT_EQ(DescribeKraftControlRecord(ControlRecordType::kSnapshotHeader, "\x00"), std::nullopt);
  EXPECT_EQ(DescribeKraftControlRecord(ControlRecordType::kLeaderChange,
                                       Enc(true).I16(0).I32(1).Array(0).Array(0).NoTags().str()),
            std::nullopt);
}

TEST(OffsetsDecoderTest, OffsetCommitKeyAndValueV3) {
  auto d = DecodeOffsetsRecord(
      MakeRecord(OffsetKey(1), Enc().I16(3).I64(42).I32(7).Str("meta").I64(1700000000000).str()));
  EXPECT_EQ(d.key, kOffsetKeyJson);
  EXPECT_EQ(d.payload, R"({"version":"3","data":{"offset":42,"leaderEpoch":7,"metadata":"meta",)"
                       R"("commitTimestamp":1700000000000}})");
}

TEST(OffsetsDecoderTest, OffsetCommitValueV0V1AndFlexibleV4) {
  auto v0 = DecodeOffsetsRecord(MakeRecord(OffsetKey(0), Enc().I16(0).I64(1).Str("").I64(2).str()));
  EXPECT_EQ(v0.key, R"({"type":"0","data":{"group":"g1","topic":"orders","partition":3}})");
  EXPECT_EQ(v0.payload, R"({"version":"0","data":{"offset":1,"metadata":"","commitTimestamp":2}})");
  auto v1 = DecodeOffsetsRecord(
      MakeRecord(OffsetKey(1), Enc().I16(1).I64(1).Str("").I64(2).I64(3).str()));
  EXPECT_EQ(v1.payload, R"({"version":"1","data":{"offset":1,"metadata":"","commitTimestamp":2,)"
                        R"("expireTimestamp":3}})");
  std::string v4 = Enc().I16(4).str() + Enc(true).I64(9).I32(-1).Str("x").I64(5).Tag(7, "zz").str();
  auto d4 = DecodeOffsetsRecord(MakeRecord(OffsetKey(1), v4));
  EXPECT_EQ(d4.payload, R"({"version":"4","data":{"offset":9,"leaderEpoch":-1,"metadata":"x",)"
                        R"("commitTimestamp":5}})");
}

TEST(OffsetsDecoderTest, TombstoneIsDelete) {
  auto d = DecodeOffsetsRecord(MakeRecord(OffsetKey(1), std::nullopt));
  EXPECT_EQ(d.key, kOffsetKeyJson);
  EXPECT_EQ(d.payload, "<DELETE>");
}

std::string Subscription() {
  // ConsumerProtocolSubscription v1: topics ["orders"], no user data,
  // owned partitions orders [0].
  return Enc()
      .I16(1)
      .Array(1)
      .Str("orders")
      .NullBlob()
      .Array(1)
      .Str("orders")
      .Array(1)
      .I32(0)
      .str();
}

std::string Assignment() {
  return Enc().I16(0).Array(1).Str("orders").Array(2).I32(0).I32(1).NullBlob().str();
}

TEST(OffsetsDecoderTest, ConsumerGroupMetadataV3DecodesEmbeddedProtocol) {
  std::string key = Enc().I16(2).Str("g1").str();
  std::string value = Enc()
                          .I16(3)
                          .Str("consumer")
                          .I32(5)
                          .Str("range")
                          .Str("m1")
                          .I64(123)
                          .Array(1)
                          .Str("m1")
                          .NullStr()
                          .Str("c1")
                          .Str("/10.0.0.1")
                          .I32(300000)
                          .I32(45000)
                          .Blob(Subscription())
                          .Blob(Assignment())
                          .str();
  auto d = DecodeOffsetsRecord(MakeRecord(key, value));
  EXPECT_EQ(d.key, R"({"type":"2","data":{"group":"g1"}})");
  EXPECT_EQ(
      d.payload,
      R"({"version":"3","data":{"protocolType":"consumer","generation":5,"protocol":"range",)"
      R"("leader":"m1","currentStateTimestamp":123,"members":[{"memberId":"m1",)"
      R"("groupInstanceId":null,"clientId":"c1","clientHost":"/10.0.0.1",)"
      R"("rebalanceTimeout":300000,"sessionTimeout":45000,"subscription":{"topics":)"
      R"(["orders"],"userData":null,"ownedPartitions":[{"topic":"orders","partitions":[0]}]},)"
      R"("assignment":{"assignedPartitions":[{"topic":"orders","partitions":[0,1]}],)"
      R"("userData":null}}]}})");
}

TEST(OffsetsDecoderTest, GroupMetadataV0OtherProtocolKeepsBase64) {
  std::string key = Enc().I16(2).Str("g1").str();
  std::string value = Enc()
                          .I16(0)
                          .Str("connect")
                          .I32(1)
                          .NullStr()
                          .NullStr()
                          .Array(1)
                          .Str("m1")
                          .Str("c1")
                          .Str("h")
                          .I32(10)
                          .Blob("abc")
                          .Blob("ab")
                          .str();
  auto d = DecodeOffsetsRecord(MakeRecord(key, value));
  EXPECT_EQ(d.payload,
            R"({"version":"0","data":{"protocolType":"connect","generation":1,"protocol":null,)"
            R"("leader":null,"members":[{"memberId":"m1","clientId":"c1","clientHost":"h",)"
            R"("sessionTimeout":10,"subscription":"YWJj","assignment":"YWI="}]}})");
}

TEST(OffsetsDecoderTest, FlexibleGroupMetadataV4) {
  std::string key = Enc().I16(2).Str("g1").str();
  std::string value = Enc().I16(4).str() + Enc(true)
                                               .Str("consumer")
                                               .I32(2)
                                               .Str("range")
                                               .Str("m1")
                                               .I64(9)
                                               .Array(1)
                                               .Str("m1")
                                               .Str("static-1")
                                               .Str("c1")
                                               .Str("h")
                                               .I32(1)
                                               .I32(2)
                                               .Blob("x")  // not decodable: stays Base64
                                               .Blob(Assignment())
                                               .NoTags()
                                               .NoTags()
                                               .str();
  auto d = DecodeOffsetsRecord(MakeRecord(key, value));
  EXPECT_EQ(d.payload,
            R"({"version":"4","data":{"protocolType":"consumer","generation":2,"protocol":"range",)"
            R"("leader":"m1","currentStateTimestamp":9,"members":[{"memberId":"m1",)"
            R"("groupInstanceId":"static-1","clientId":"c1","clientHost":"h",)"
            R"("rebalanceTimeout":1,"sessionTimeout":2,"subscription":"eA==",)"
            R"("assignment":{"assignedPartitions":[{"topic":"orders","partitions":[0,1]}],)"
            R"("userData":null}}]}})");
}

// KIP-848's records (types 3-8), as Kafka 3.9's JSON converters print them.
TEST(OffsetsDecoderTest, ConsumerGroupRecordsOfKip848) {
  auto metadata = DecodeOffsetsRecord(MakeRecord(
      Enc().I16(3).Str("g1").str(), Enc().I16(0).I32(5).NoTags().str() + std::string(1, '\0')));
  EXPECT_EQ(metadata.key, R"({"type":"3","data":{"groupId":"g1"}})");
  EXPECT_EQ(metadata.payload, R"({"version":"0","data":{"epoch":5}})");

  const std::string topic_id = Enc().I64(0x0102030405060708).I64(0x090a0b0c0d0e0f10).str();
  const std::string id_text = "AQIDBAUGBwgJCgsMDQ4PEA";
  auto partitions = DecodeOffsetsRecord(MakeRecord(
      Enc().I16(4).Str("g1").str(), Enc().I16(0).str() + Enc(true).Array(1).str() + topic_id +
                                        Enc(true)
                                            .Str("orders")
                                            .I32(2)
                                            .Array(1)
                                            .I32(0)
                                            .Array(1)
                                            .Str("rack-a")
                                            .NoTags()
                                            .NoTags()
                                            .NoTags()
                                            .str()));
  EXPECT_EQ(partitions.payload,
            R"({"version":"0","data":{"topics":[{"topicId":")" + id_text +
                R"(","topicName":"orders","numPartitions":2,)"
                R"("partitionMetadata":[{"partition":0,"racks":["rack-a"]}]}]}})");

  // A member of a classic consumer (tag 0 present) and one without it.
  const std::string member_fields = Enc(true)
                                        .NullStr()
                                        .Str("r1")
                                        .Str("c1")
                                        .Str("/10.0.0.1")
                                        .Array(1)
                                        .Str("orders")
                                        .NullStr()
                                        .I32(45000)
                                        .Str("uniform")
                                        .str();
  const std::string classic =
      Enc(true).I8(1).I32(10000).Array(1).Str("range").Blob("ab").NoTags().NoTags().str();
  auto member = DecodeOffsetsRecord(
      MakeRecord(Enc().I16(5).Str("g1").Str("m1").str(),
                 Enc().I16(0).str() + member_fields + Enc(true).Tag(0, classic).str()));
  EXPECT_EQ(member.key, R"({"type":"5","data":{"groupId":"g1","memberId":"m1"}})");
  const std::string member_json =
      R"({"instanceId":null,"rackId":"r1","clientId":"c1","clientHost":"/10.0.0.1",)"
      R"("subscribedTopicNames":["orders"],"subscribedTopicRegex":null,)"
      R"("rebalanceTimeoutMs":45000,"serverAssignor":"uniform")";
  EXPECT_EQ(member.payload, R"({"version":"0","data":)" + member_json +
                                R"(,"classicMemberMetadata":{"sessionTimeoutMs":10000,)"
                                R"("supportedProtocols":[{"name":"range","metadata":"YWI="}]}}})");
  auto plain = DecodeOffsetsRecord(
      MakeRecord(Enc().I16(5).Str("g1").Str("m1").str(),
                 Enc().I16(0).str() + member_fields + Enc(true).NoTags().str()));
  EXPECT_EQ(plain.payload, R"({"version":"0","data":)" + member_json + "}}");

  auto epoch = DecodeOffsetsRecord(MakeRecord(
      Enc().I16(6).Str("g1").str(), Enc().I16(0).I32(7).NoTags().str() + std::string(1, '\0')));
  EXPECT_EQ(epoch.payload, R"({"version":"0","data":{"assignmentEpoch":7}})");

  auto target =
      DecodeOffsetsRecord(MakeRecord(Enc().I16(7).Str("g1").Str("m1").str(),
                                     Enc().I16(0).str() + Enc(true).Array(1).str() + topic_id +
                                         Enc(true).Array(2).I32(0).I32(1).NoTags().NoTags().str()));
  EXPECT_EQ(target.key, R"({"type":"7","data":{"groupId":"g1","memberId":"m1"}})");
  EXPECT_EQ(target.payload, R"({"version":"0","data":{"topicPartitions":[{"topicId":")" + id_text +
                                R"(","partitions":[0,1]}]}})");

  auto current = DecodeOffsetsRecord(MakeRecord(
      Enc().I16(8).Str("g1").Str("m1").str(),
      Enc().I16(0).I32(3).I32(2).str() + Enc(true).I8(1).Array(0).Array(0).NoTags().str()));
  EXPECT_EQ(current.payload,
            R"({"version":"0","data":{"memberEpoch":3,"previousMemberEpoch":2,"state":1,)"
            R"("assignedPartitions":[],"partitionsPendingRevocation":[]}})");

  auto later = DecodeOffsetsRecord(MakeRecord(Enc().I16(3).Str("g1").str(), Enc().I16(1).str()));
  EXPECT_EQ(later.key,
            "Error at offset 17, skipping. Could not read record with version 1 from value's "
            "buffer due to: Can't read version 1 of ConsumerGroupMetadataValue.");
}

TEST(OffsetsDecoderTest, UnknownTypeAndErrors) {
  auto unknown = DecodeOffsetsRecord(MakeRecord(Enc().I16(9).Str("g").str(), "v"));
  EXPECT_EQ(unknown.key, "Unknown record type 9 at offset 17, skipping.");
  EXPECT_EQ(unknown.payload, std::nullopt);
  auto bad_version = DecodeOffsetsRecord(MakeRecord(OffsetKey(1), Enc().I16(9).str()));
  EXPECT_EQ(bad_version.key,
            "Error at offset 17, skipping. Could not read record with version 9 from value's "
            "buffer due to: Can't read version 9 of OffsetCommitValue.");
  EXPECT_EQ(bad_version.payload, std::nullopt);
  auto short_value = DecodeOffsetsRecord(MakeRecord(OffsetKey(1), Enc().I16(3).I32(1).str()));
  ASSERT_TRUE(short_value.key.has_value());
  EXPECT_TRUE(
      short_value.key->starts_with("Error at offset 17, skipping. Could not read record "
                                   "with version 3 from value's buffer due to: field "
                                   "offset at byte 0"))
      << *short_value.key;
  auto no_key = DecodeOffsetsRecord(MakeRecord(std::nullopt, "v"));
  EXPECT_EQ(no_key.key,
            "Failed to decode message at offset 17 using offset topic decoder (message had a "
            "missing key)");
}

std::string TxnKey() {
  return Enc().I16(0).Str("txn-1").str();
}

TEST(TransactionLogDecoderTest, ValueV0) {
  std::string value = Enc()
                          .I16(0)
                          .I64(5)
                          .I16(1)
                          .I32(60000)
                          .I8(1)
                          .Array(2)
                          .Str("orders")
                          .Array(2)
                          .I32(0)
                          .I32(2)
                          .Str("audit")
                          .Array(1)
                          .I32(7)
                          .I64(1700)
                          .I64(1600)
                          .str();
  auto d = DecodeTransactionLogRecord(MakeRecord(TxnKey(), value));
  EXPECT_EQ(d.key, "transaction_metadata::transactionalId=txn-1");
  EXPECT_EQ(d.payload,
            "producerId:5,producerEpoch:1,state=Ongoing,partitions=[orders-0,orders-2,audit-7],"
            "txnLastUpdateTimestamp=1700,txnTimeoutMs=60000");
}

TEST(TransactionLogDecoderTest, FlexibleV1WithTaggedFieldsAndEmptyState) {
  std::string v1 = Enc().I16(1).str() + Enc(true)
                                            .I64(0)
                                            .I16(0)
                                            .I32(60000)
                                            .I8(4)
                                            .Array(1)
                                            .Str("txtest")
                                            .Array(1)
                                            .I32(0)
                                            .NoTags()
                                            .I64(1750000000000)
                                            .I64(1749999999000)
                                            .Tag(2, std::string("\x02", 1))
                                            .str();
  auto d = DecodeTransactionLogRecord(MakeRecord(TxnKey(), v1));
  EXPECT_EQ(d.payload,
            "producerId:0,producerEpoch:0,state=CompleteCommit,partitions=[txtest-0],"
            "txnLastUpdateTimestamp=1750000000000,txnTimeoutMs=60000");
  std::string empty = Enc().I16(0).I64(3).I16(0).I32(100).I8(0).Array(-1).I64(1).I64(-1).str();
  EXPECT_EQ(DecodeTransactionLogRecord(MakeRecord(TxnKey(), empty)).payload,
            "producerId:3,producerEpoch:0,state=Empty,partitions=[],txnLastUpdateTimestamp=1,"
            "txnTimeoutMs=100");
}

TEST(TransactionLogDecoderTest, TombstoneAndUnknownVersions) {
  auto tombstone = DecodeTransactionLogRecord(MakeRecord(TxnKey(), std::nullopt));
  EXPECT_EQ(tombstone.key, "transaction_metadata::transactionalId=txn-1");
  EXPECT_EQ(tombstone.payload, "<DELETE>");
  auto bad_key = DecodeTransactionLogRecord(MakeRecord(Enc().I16(1).Str("x").str(), "v"));
  EXPECT_EQ(bad_key.key, "unknown::version=1");
  auto bad_value = DecodeTransactionLogRecord(MakeRecord(TxnKey(), Enc().I16(2).str()));
  EXPECT_EQ(bad_value.payload,
            "Error at offset 17, skipping. Unknown version 2 from the transaction log message "
            "value");
}

TEST(DumpDecoderTest, DecodersImplyPrintDataLogThroughRunDump) {
  testing::TempDir tmp;
  BatchBuilderOptions bo;
  std::vector<RecordInput> records(1);
  records[0].timestamp = 1000;
  records[0].key = TxnKey();
  records[0].value = std::nullopt;
  auto batch = BuildRecordBatch(bo, records);
  ASSERT_TRUE(batch.ok());
  const std::string path = tmp.Join("00000000000000000000.log");
  testing::WriteStringToFile(path, std::string(batch->begin(), batch->end()));
  DumpOptions o;
  o.files = {path};
  o.transaction_log_decoder = true;
  std::ostringstream out, err;
  EXPECT_EQ(RunDump(o, out, err), 0) << err.str();
  const std::string text = out.str();
  const std::string last = text.substr(text.rfind("| "));
  EXPECT_EQ(last,
            "| offset: 0 CreateTime: 1000 keySize: 9 valueSize: -1 sequence: -1 "
            "headerKeys: [] key: transaction_metadata::transactionalId=txn-1 payload: "
            "<DELETE>\n");
  o.offsets_decoder = true;
  EXPECT_EQ(RunDump(o, out, err), 2);
}

}  // namespace
}  // namespace daruma::tools
