#include "tools/consumer_group_records_decoder.h"

#include <fmt/format.h>

namespace daruma::tools {
namespace {

using Json = nlohmann::ordered_json;

Json NullableText(const std::optional<std::string>& s) {
  return s ? Json(*s) : Json();
}

Result<int32_t> NonNullArray(MessageReader& r, const char* field) {
  DARUMA_ASSIGN_OR_RETURN(int32_t n, r.ArrayLength(field));
  if (n < 0) return Status::Corruption(fmt::format("field {}: null array", field));
  return n;
}

Result<Json> ReadStrings(MessageReader& r, const char* field) {
  DARUMA_ASSIGN_OR_RETURN(int32_t n, NonNullArray(r, field));
  Json list = Json::array();
  for (int32_t i = 0; i < n; ++i) {
    DARUMA_ASSIGN_OR_RETURN(std::string s, r.String(field));
    list.push_back(std::move(s));
  }
  return list;
}

Result<Json> ReadInt32s(MessageReader& r, const char* field) {
  DARUMA_ASSIGN_OR_RETURN(int32_t n, NonNullArray(r, field));
  Json list = Json::array();
  for (int32_t i = 0; i < n; ++i) {
    DARUMA_ASSIGN_OR_RETURN(int32_t v, r.Int32(field));
    list.push_back(v);
  }
  return list;
}

// [{topicId, partitions}] (TopicPartitions / TopicPartition structs).
Result<Json> ReadTopicIdPartitions(MessageReader& r, const char* field) {
  DARUMA_ASSIGN_OR_RETURN(int32_t n, NonNullArray(r, field));
  Json list = Json::array();
  for (int32_t i = 0; i < n; ++i) {
    Json tp;
    DARUMA_ASSIGN_OR_RETURN(tp["topicId"], r.Uuid("TopicId"));
    DARUMA_ASSIGN_OR_RETURN(tp["partitions"], ReadInt32s(r, "Partitions"));
    DARUMA_RETURN_IF_ERROR(r.SkipTaggedFields(field));
    list.push_back(std::move(tp));
  }
  return list;
}

Result<Json> ReadPartitionMetadataValue(MessageReader& r) {
  DARUMA_ASSIGN_OR_RETURN(int32_t n, NonNullArray(r, "Topics"));
  Json topics = Json::array();
  for (int32_t i = 0; i < n; ++i) {
    Json t;
    DARUMA_ASSIGN_OR_RETURN(t["topicId"], r.Uuid("TopicId"));
    DARUMA_ASSIGN_OR_RETURN(t["topicName"], r.String("TopicName"));
    DARUMA_ASSIGN_OR_RETURN(t["numPartitions"], r.Int32("NumPartitions"));
    DARUMA_ASSIGN_OR_RETURN(int32_t partitions, NonNullArray(r, "PartitionMetadata"));
    t["partitionMetadata"] = Json::array();
    for (int32_t j = 0; j < partitions; ++j) {
      Json p;
      DARUMA_ASSIGN_OR_RETURN(p["partition"], r.Int32("Partition"));
      DARUMA_ASSIGN_OR_RETURN(p["racks"], ReadStrings(r, "Racks"));
      DARUMA_RETURN_IF_ERROR(r.SkipTaggedFields("PartitionMetadata"));
      t["partitionMetadata"].push_back(std::move(p));
    }
    DARUMA_RETURN_IF_ERROR(r.SkipTaggedFields("TopicMetadata"));
    topics.push_back(std::move(t));
  }
  return Json{{"topics", std::move(topics)}};
}

// ClassicMemberMetadata {sessionTimeoutMs, supportedProtocols:[{name,
// metadata}]}; bytes as Jackson's binary nodes print them (Base64).
Result<Json> ReadClassicMemberMetadata(MessageReader& r) {
  Json m;
  DARUMA_ASSIGN_OR_RETURN(m["sessionTimeoutMs"], r.Int32("SessionTimeoutMs"));
  DARUMA_ASSIGN_OR_RETURN(int32_t n, NonNullArray(r, "SupportedProtocols"));
  m["supportedProtocols"] = Json::array();
  for (int32_t i = 0; i < n; ++i) {
    Json p;
    DARUMA_ASSIGN_OR_RETURN(p["name"], r.String("Name"));
    DARUMA_ASSIGN_OR_RETURN(auto metadata, r.NullableBytes("Metadata"));
    if (!metadata) return Status::Corruption("field Metadata: null bytes");
    p["metadata"] = Base64(*metadata);
    DARUMA_RETURN_IF_ERROR(r.SkipTaggedFields("ClassicProtocol"));
    m["supportedProtocols"].push_back(std::move(p));
  }
  DARUMA_RETURN_IF_ERROR(r.SkipTaggedFields("ClassicMemberMetadata"));
  return m;
}

Result<Json> ReadMemberMetadataValue(MessageReader& r) {
  Json v;
  DARUMA_ASSIGN_OR_RETURN(auto instance, r.NullableString("InstanceId"));
  v["instanceId"] = NullableText(instance);
  DARUMA_ASSIGN_OR_RETURN(auto rack, r.NullableString("RackId"));
  v["rackId"] = NullableText(rack);
  DARUMA_ASSIGN_OR_RETURN(v["clientId"], r.String("ClientId"));
  DARUMA_ASSIGN_OR_RETURN(v["clientHost"], r.String("ClientHost"));
  DARUMA_ASSIGN_OR_RETURN(v["subscribedTopicNames"], ReadStrings(r, "SubscribedTopicNames"));
  DARUMA_ASSIGN_OR_RETURN(auto regex, r.NullableString("SubscribedTopicRegex"));
  v["subscribedTopicRegex"] = NullableText(regex);
  DARUMA_ASSIGN_OR_RETURN(v["rebalanceTimeoutMs"], r.Int32("RebalanceTimeoutMs"));
  DARUMA_ASSIGN_OR_RETURN(auto assignor, r.NullableString("ServerAssignor"));
  v["serverAssignor"] = NullableText(assignor);
  // The tagged-field section: tag 0 is ClassicMemberMetadata (default null,
  // so shown only when present); other tags are skipped.
  DARUMA_ASSIGN_OR_RETURN(uint32_t tags, r.UnsignedVarint("tagged fields"));
  for (uint32_t i = 0; i < tags; ++i) {
    DARUMA_ASSIGN_OR_RETURN(uint32_t tag, r.UnsignedVarint("tag"));
    DARUMA_ASSIGN_OR_RETURN(uint32_t size, r.UnsignedVarint("tag size"));
    DARUMA_ASSIGN_OR_RETURN(std::string_view bytes, r.Raw(size, "tagged field"));
    if (tag != 0) continue;
    MessageReader inner(bytes, /*flexible=*/true);
    // A null struct: a signed int8 -1 before its fields (Kafka's nullable
    // struct encoding), else 1.
    DARUMA_ASSIGN_OR_RETURN(int8_t present, inner.Int8("ClassicMemberMetadata"));
    if (present < 0) continue;
    DARUMA_ASSIGN_OR_RETURN(v["classicMemberMetadata"], ReadClassicMemberMetadata(inner));
  }
  return v;
}

Result<Json> ReadCurrentMemberAssignmentValue(MessageReader& r) {
  Json v;
  DARUMA_ASSIGN_OR_RETURN(v["memberEpoch"], r.Int32("MemberEpoch"));
  DARUMA_ASSIGN_OR_RETURN(v["previousMemberEpoch"], r.Int32("PreviousMemberEpoch"));
  DARUMA_ASSIGN_OR_RETURN(v["state"], r.Int8("State"));
  DARUMA_ASSIGN_OR_RETURN(v["assignedPartitions"], ReadTopicIdPartitions(r, "AssignedPartitions"));
  DARUMA_ASSIGN_OR_RETURN(v["partitionsPendingRevocation"],
                          ReadTopicIdPartitions(r, "PartitionsPendingRevocation"));
  return v;
}

}  // namespace

Result<Json> ReadConsumerGroupKey(MessageReader& r, int16_t type) {
  Json key;
  DARUMA_ASSIGN_OR_RETURN(key["groupId"], r.String("GroupId"));
  if (type == 5 || type == 7 || type == 8) {
    DARUMA_ASSIGN_OR_RETURN(key["memberId"], r.String("MemberId"));
  }
  return key;
}

const char* ConsumerGroupValueName(int16_t type) {
  switch (type) {
    case 3:
      return "ConsumerGroupMetadataValue";
    case 4:
      return "ConsumerGroupPartitionMetadataValue";
    case 5:
      return "ConsumerGroupMemberMetadataValue";
    case 6:
      return "ConsumerGroupTargetAssignmentMetadataValue";
    case 7:
      return "ConsumerGroupTargetAssignmentMemberValue";
    case 8:
      return "ConsumerGroupCurrentMemberAssignmentValue";
    default:
      return "?";
  }
}

Result<Json> ReadConsumerGroupValue(MessageReader& r, int16_t type) {
  Json v;
  switch (type) {
    case 3: {
      DARUMA_ASSIGN_OR_RETURN(v["epoch"], r.Int32("Epoch"));
      break;
    }
    case 4: {
      DARUMA_ASSIGN_OR_RETURN(v, ReadPartitionMetadataValue(r));
      break;
    }
    case 5:
      // Its tagged fields are its own (ClassicMemberMetadata).
      return ReadMemberMetadataValue(r);
    case 6: {
      DARUMA_ASSIGN_OR_RETURN(v["assignmentEpoch"], r.Int32("AssignmentEpoch"));
      break;
    }
    case 7: {
      DARUMA_ASSIGN_OR_RETURN(v["topicPartitions"], ReadTopicIdPartitions(r, "TopicPartitions"));
      break;
    }
    case 8: {
      DARUMA_ASSIGN_OR_RETURN(v, ReadCurrentMemberAssignmentValue(r));
      break;
    }
    default:
      return Status::InvalidArgument(fmt::format("record type {} is not a consumer group's", type));
  }
  DARUMA_RETURN_IF_ERROR(r.SkipTaggedFields(ConsumerGroupValueName(type)));
  return v;
}

}  // namespace daruma::tools
