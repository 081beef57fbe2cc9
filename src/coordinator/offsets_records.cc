#include "coordinator/offsets_records.h"

#include <fmt/format.h>

#include "protocol/protocol_reader.h"
#include "protocol/protocol_writer.h"

namespace daruma {
namespace {

constexpr int16_t kOffsetValueVersion = 3;
constexpr int16_t kOffsetValueWithExpireVersion = 1;
constexpr int16_t kGroupValueVersion = 3;
constexpr int16_t kFirstFlexibleValue = 4;

Bytes Release(ProtocolWriter& writer) {
  return writer.Release();
}

// A decode that stopped early, or one that left bytes: kCorruption.
Status Finish(const ProtocolReader& reader, const char* what) {
  if (!reader.ok())
    return Status::Corruption(fmt::format("{}: {}", what, reader.status().message()));
  if (!reader.AtEnd()) {
    return Status::Corruption(fmt::format("{}: {} unread bytes after byte {}", what,
                                          reader.remaining(), reader.position()));
  }
  return Status::Ok();
}

// Kafka reads the highest version it knows with that version's fields; a
// newer version than it knows is an error there too.
Status CheckValueVersion(int16_t version, const char* what) {
  if (version < 0 || version > kFirstFlexibleValue) {
    return Status::Corruption(fmt::format("{}: unknown value version {}", what, version));
  }
  return Status::Ok();
}

}  // namespace

Bytes EncodeOffsetCommitKey(const OffsetCommitKey& key) {
  ProtocolWriter w;
  w.WriteInt16(kOffsetCommitKeyVersion);
  w.WriteString(key.group, Encoding::kClassic);
  w.WriteString(key.topic, Encoding::kClassic);
  w.WriteInt32(key.partition);
  return Release(w);
}

Bytes EncodeGroupMetadataKey(const GroupMetadataKey& key) {
  ProtocolWriter w;
  w.WriteInt16(kGroupMetadataKeyVersion);
  w.WriteString(key.group, Encoding::kClassic);
  return Release(w);
}

Bytes EncodeOffsetCommitValue(const OffsetCommitValue& value) {
  const int16_t version =
      value.expire_timestamp != -1 ? kOffsetValueWithExpireVersion : kOffsetValueVersion;
  ProtocolWriter w;
  w.WriteInt16(version);
  w.WriteInt64(value.offset);
  if (version >= 3) w.WriteInt32(value.leader_epoch);
  w.WriteString(value.metadata, Encoding::kClassic);
  w.WriteInt64(value.commit_timestamp);
  if (version == 1) w.WriteInt64(value.expire_timestamp);
  return Release(w);
}

Bytes EncodeGroupMetadataValue(const GroupMetadataValue& value) {
  const Encoding e = Encoding::kClassic;
  ProtocolWriter w;
  w.WriteInt16(kGroupValueVersion);
  w.WriteString(value.protocol_type, e);
  w.WriteInt32(value.generation);
  w.WriteNullableString(value.protocol, e);
  w.WriteNullableString(value.leader, e);
  w.WriteInt64(value.current_state_timestamp);
  w.WriteArrayCount(value.members.size(), e);
  for (const GroupMemberValue& m : value.members) {
    w.WriteString(m.member_id, e);
    w.WriteNullableString(m.group_instance_id, e);
    w.WriteString(m.client_id, e);
    w.WriteString(m.client_host, e);
    w.WriteInt32(m.rebalance_timeout);
    w.WriteInt32(m.session_timeout);
    w.WriteBytes(m.subscription, e);
    w.WriteBytes(m.assignment, e);
  }
  return Release(w);
}

Result<OffsetsRecordKey> DecodeOffsetsRecordKey(ByteSpan key) {
  ProtocolReader r(key);
  const int16_t version = r.ReadInt16("key.version");
  if (!r.ok()) return Status::Corruption("offsets record key: " + r.status().message());
  if (version == 0 || version == 1) {
    OffsetCommitKey k;
    k.group = r.ReadString("OffsetCommitKey.group", Encoding::kClassic);
    k.topic = r.ReadString("OffsetCommitKey.topic", Encoding::kClassic);
    k.partition = r.ReadInt32("OffsetCommitKey.partition");
    if (Status s = Finish(r, "offset commit key"); !s.ok()) return s;
    return OffsetsRecordKey(std::move(k));
  }
  if (version == 2) {
    GroupMetadataKey k;
    k.group = r.ReadString("GroupMetadataKey.group", Encoding::kClassic);
    if (Status s = Finish(r, "group metadata key"); !s.ok()) return s;
    return OffsetsRecordKey(std::move(k));
  }
  if (version < 0) {
    return Status::Corruption(fmt::format("offsets record key: negative version {}", version));
  }
  return OffsetsRecordKey(OtherRecordKey{version});
}

Result<OffsetCommitValue> DecodeOffsetCommitValue(ByteSpan value) {
  ProtocolReader r(value);
  const int16_t version = r.ReadInt16("OffsetCommitValue.version");
  if (!r.ok()) return Status::Corruption("offset commit value: " + r.status().message());
  if (Status s = CheckValueVersion(version, "offset commit value"); !s.ok()) return s;
  const Encoding e = EncodingFor(version >= kFirstFlexibleValue);
  OffsetCommitValue v;
  v.offset = r.ReadInt64("OffsetCommitValue.offset");
  if (version >= 3) v.leader_epoch = r.ReadInt32("OffsetCommitValue.leaderEpoch");
  v.metadata = r.ReadString("OffsetCommitValue.metadata", e);
  v.commit_timestamp = r.ReadInt64("OffsetCommitValue.commitTimestamp");
  if (version == 1) v.expire_timestamp = r.ReadInt64("OffsetCommitValue.expireTimestamp");
  if (version >= kFirstFlexibleValue) r.SkipTaggedFields("OffsetCommitValue");
  if (Status s = Finish(r, "offset commit value"); !s.ok()) return s;
  return v;
}

Result<GroupMetadataValue> DecodeGroupMetadataValue(ByteSpan value) {
  ProtocolReader r(value);
  const int16_t version = r.ReadInt16("GroupMetadataValue.version");
  if (!r.ok()) return Status::Corruption("group metadata value: " + r.status().message());
  if (Status s = CheckValueVersion(version, "group metadata value"); !s.ok()) return s;
  const bool flexible = version >= kFirstFlexibleValue;
  const Encoding e = EncodingFor(flexible);
  GroupMetadataValue v;
  v.protocol_type = r.ReadString("GroupMetadataValue.protocolType", e);
  v.generation = r.ReadInt32("GroupMetadataValue.generation");
  v.protocol = r.ReadNullableString("GroupMetadataValue.protocol", e);
  v.leader = r.ReadNullableString("GroupMetadataValue.leader", e);
  if (version >= 2)
    v.current_state_timestamp = r.ReadInt64("GroupMetadataValue.currentStateTimestamp");
  v.members =
      r.ReadArray<GroupMemberValue>("GroupMetadataValue.members", e, [&](ProtocolReader& m) {
        GroupMemberValue member;
        member.member_id = m.ReadString("members.memberId", e);
        if (version >= 3)
          member.group_instance_id = m.ReadNullableString("members.groupInstanceId", e);
        member.client_id = m.ReadString("members.clientId", e);
        member.client_host = m.ReadString("members.clientHost", e);
        if (version >= 1) member.rebalance_timeout = m.ReadInt32("members.rebalanceTimeout");
        member.session_timeout = m.ReadInt32("members.sessionTimeout");
        if (version == 0) member.rebalance_timeout = member.session_timeout;
        const ByteSpan sub = m.ReadBytes("members.subscription", e);
        member.subscription.assign(sub.begin(), sub.end());
        const ByteSpan assignment = m.ReadBytes("members.assignment", e);
        member.assignment.assign(assignment.begin(), assignment.end());
        if (flexible) m.SkipTaggedFields("members");
        return member;
      });
  if (flexible) r.SkipTaggedFields("GroupMetadataValue");
  if (Status s = Finish(r, "group metadata value"); !s.ok()) return s;
  return v;
}

int32_t OffsetsPartitionFor(std::string_view group_id, int32_t partitions) {
  // Java's String.hashCode: h = 31 * h + c over UTF-16 code units, in int32
  // arithmetic (wrapping, done here in uint32 to stay defined).
  uint32_t h = 0;
  auto add = [&h](uint32_t unit) { h = 31 * h + unit; };
  size_t i = 0;
  const auto* s = reinterpret_cast<const unsigned char*>(group_id.data());
  while (i < group_id.size()) {
    const unsigned char c = s[i];
    uint32_t cp = 0xFFFD;
    size_t len = 1;
    if (c < 0x80) {
      cp = c;
    } else if ((c >> 5) == 0x6 && i + 1 < group_id.size() && (s[i + 1] >> 6) == 0x2) {
      cp = (uint32_t(c & 0x1F) << 6) | (s[i + 1] & 0x3F);
      len = cp >= 0x80 ? 2 : 1;
      if (cp < 0x80) cp = 0xFFFD;
    } else if ((c >> 4) == 0xE && i + 2 < group_id.size() && (s[i + 1] >> 6) == 0x2 &&
               (s[i + 2] >> 6) == 0x2) {
      cp = (uint32_t(c & 0x0F) << 12) | (uint32_t(s[i + 1] & 0x3F) << 6) | (s[i + 2] & 0x3F);
      len = 3;
      if (cp < 0x800 || (cp >= 0xD800 && cp <= 0xDFFF)) cp = 0xFFFD;
    } else if ((c >> 3) == 0x1E && i + 3 < group_id.size() && (s[i + 1] >> 6) == 0x2 &&
               (s[i + 2] >> 6) == 0x2 && (s[i + 3] >> 6) == 0x2) {
      cp = (uint32_t(c & 0x07) << 18) | (uint32_t(s[i + 1] & 0x3F) << 12) |
           (uint32_t(s[i + 2] & 0x3F) << 6) | (s[i + 3] & 0x3F);
      len = 4;
      if (cp < 0x10000 || cp > 0x10FFFF) cp = 0xFFFD;
    }
    if (cp >= 0x10000) {
      const uint32_t v = cp - 0x10000;
      add(0xD800 + (v >> 10));
      add(0xDC00 + (v & 0x3FF));
    } else {
      add(cp);
    }
    i += len;
  }
  const int32_t hash = int32_t(h);
  // Kafka's Utils.abs: Integer.MIN_VALUE maps to 0.
  const int32_t positive = hash == INT32_MIN ? 0 : (hash < 0 ? -hash : hash);
  return positive % partitions;
}

std::optional<std::vector<std::string>> ConsumerSubscriptionTopics(ByteSpan subscription) {
  ProtocolReader r(subscription);
  const int16_t version = r.ReadInt16("version");
  std::vector<std::string> topics = r.ReadStringArray("topics", Encoding::kClassic);
  if (!r.ok() || version < 0) return std::nullopt;
  return topics;
}

}  // namespace daruma
