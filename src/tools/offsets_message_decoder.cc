#include "tools/offsets_message_decoder.h"

#include <fmt/format.h>

#include <nlohmann/json.hpp>

#include "tools/consumer_group_records_decoder.h"
#include "tools/dump_message_reader.h"

namespace daruma::tools {
namespace {

using Json = nlohmann::ordered_json;

std::string Dump(const Json& j) {
  return j.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
}

Json NullableText(const std::optional<std::string>& s) {
  return s ? Json(*s) : Json();
}

Result<Json> ReadOffsetCommitKey(MessageReader& r) {
  Json data;
  DARUMA_ASSIGN_OR_RETURN(data["group"], r.String("group"));
  DARUMA_ASSIGN_OR_RETURN(data["topic"], r.String("topic"));
  DARUMA_ASSIGN_OR_RETURN(data["partition"], r.Int32("partition"));
  return data;
}

Result<Json> ReadGroupMetadataKey(MessageReader& r) {
  Json data;
  DARUMA_ASSIGN_OR_RETURN(data["group"], r.String("group"));
  return data;
}

Result<Json> ReadOffsetCommitValue(MessageReader& r, int16_t version) {
  Json data;
  DARUMA_ASSIGN_OR_RETURN(data["offset"], r.Int64("offset"));
  if (version >= 3) {
    DARUMA_ASSIGN_OR_RETURN(data["leaderEpoch"], r.Int32("leaderEpoch"));
  }
  DARUMA_ASSIGN_OR_RETURN(data["metadata"], r.String("metadata"));
  DARUMA_ASSIGN_OR_RETURN(data["commitTimestamp"], r.Int64("commitTimestamp"));
  if (version == 1) {
    DARUMA_ASSIGN_OR_RETURN(data["expireTimestamp"], r.Int64("expireTimestamp"));
  }
  DARUMA_RETURN_IF_ERROR(r.SkipTaggedFields("OffsetCommitValue tagged fields"));
  return data;
}

// [topic STRING, partitions [INT32]] as {"topic":..,"partitions":[..]} (non-flexible).
Result<Json> ReadTopicPartitions(MessageReader& r, const char* field) {
  DARUMA_ASSIGN_OR_RETURN(int32_t n, r.ArrayLength(field));
  if (n < 0) return Status::Corruption(fmt::format("field {}: null array", field));
  Json list = Json::array();
  for (int32_t i = 0; i < n; ++i) {
    Json tp;
    DARUMA_ASSIGN_OR_RETURN(tp["topic"], r.String("topic"));
    DARUMA_ASSIGN_OR_RETURN(int32_t count, r.ArrayLength("partitions"));
    if (count < 0) return Status::Corruption("field partitions: null array");
    Json partitions = Json::array();
    for (int32_t j = 0; j < count; ++j) {
      DARUMA_ASSIGN_OR_RETURN(int32_t p, r.Int32("partitions"));
      partitions.push_back(p);
    }
    tp["partitions"] = std::move(partitions);
    list.push_back(std::move(tp));
  }
  return list;
}

Json NullableBase64(const std::optional<std::string>& bytes) {
  return bytes ? Json(Base64(*bytes)) : Json();
}

// ConsumerProtocolSubscription v0-3 (never flexible), after its int16 version.
Result<Json> ReadSubscription(MessageReader& r, int16_t version) {
  Json data;
  DARUMA_ASSIGN_OR_RETURN(int32_t n, r.ArrayLength("topics"));
  if (n < 0) return Status::Corruption("field topics: null array");
  Json topics = Json::array();
  for (int32_t i = 0; i < n; ++i) {
    DARUMA_ASSIGN_OR_RETURN(std::string topic, r.String("topics"));
    topics.push_back(std::move(topic));
  }
  data["topics"] = std::move(topics);
  DARUMA_ASSIGN_OR_RETURN(auto user_data, r.NullableBytes("userData"));
  data["userData"] = NullableBase64(user_data);
  if (version >= 1) {
    DARUMA_ASSIGN_OR_RETURN(data["ownedPartitions"], ReadTopicPartitions(r, "ownedPartitions"));
  }
  if (version >= 2) {
    DARUMA_ASSIGN_OR_RETURN(data["generationId"], r.Int32("generationId"));
  }
  if (version >= 3) {
    DARUMA_ASSIGN_OR_RETURN(auto rack, r.NullableString("rackId"));
    data["rackId"] = NullableText(rack);
  }
  return data;
}

// ConsumerProtocolAssignment v0-3 (never flexible), after its int16 version.
Result<Json> ReadAssignment(MessageReader& r, int16_t /*version*/) {
  Json data;
  DARUMA_ASSIGN_OR_RETURN(data["assignedPartitions"], ReadTopicPartitions(r, "assignedPartitions"));
  DARUMA_ASSIGN_OR_RETURN(auto user_data, r.NullableBytes("userData"));
  data["userData"] = NullableBase64(user_data);
  return data;
}

// Kafka's replace(): decode an embedded consumer-protocol blob, or keep the
// Base64 when it does not decode (any failure is swallowed, as Kafka does).
template <typename Reader>
Json DecodeEmbedded(const std::optional<std::string>& bytes, Reader read) {
  if (!bytes) return Json();
  MessageReader r(*bytes, /*flexible=*/false);
  auto version = r.Int16("version");
  if (version.ok() && *version >= 0 && *version <= 3) {
    auto json = read(r, *version);
    if (json.ok()) return *json;
  }
  return Json(Base64(*bytes));
}

Result<Json> ReadMember(MessageReader& r, int16_t version, bool consumer) {
  Json m;
  DARUMA_ASSIGN_OR_RETURN(m["memberId"], r.String("memberId"));
  if (version >= 3) {
    DARUMA_ASSIGN_OR_RETURN(auto id, r.NullableString("groupInstanceId"));
    m["groupInstanceId"] = NullableText(id);
  }
  DARUMA_ASSIGN_OR_RETURN(m["clientId"], r.String("clientId"));
  DARUMA_ASSIGN_OR_RETURN(m["clientHost"], r.String("clientHost"));
  if (version >= 1) {
    DARUMA_ASSIGN_OR_RETURN(m["rebalanceTimeout"], r.Int32("rebalanceTimeout"));
  }
  DARUMA_ASSIGN_OR_RETURN(m["sessionTimeout"], r.Int32("sessionTimeout"));
  DARUMA_ASSIGN_OR_RETURN(auto subscription, r.NullableBytes("subscription"));
  DARUMA_ASSIGN_OR_RETURN(auto assignment, r.NullableBytes("assignment"));
  if (!subscription || !assignment) return Status::Corruption("member bytes field is null");
  m["subscription"] =
      consumer ? DecodeEmbedded(subscription, ReadSubscription) : NullableBase64(subscription);
  m["assignment"] =
      consumer ? DecodeEmbedded(assignment, ReadAssignment) : NullableBase64(assignment);
  DARUMA_RETURN_IF_ERROR(r.SkipTaggedFields("MemberMetadata tagged fields"));
  return m;
}

Result<Json> ReadGroupMetadataValue(MessageReader& r, int16_t version) {
  Json data;
  DARUMA_ASSIGN_OR_RETURN(std::string protocol_type, r.String("protocolType"));
  data["protocolType"] = protocol_type;
  DARUMA_ASSIGN_OR_RETURN(data["generation"], r.Int32("generation"));
  DARUMA_ASSIGN_OR_RETURN(auto protocol, r.NullableString("protocol"));
  data["protocol"] = NullableText(protocol);
  DARUMA_ASSIGN_OR_RETURN(auto leader, r.NullableString("leader"));
  data["leader"] = NullableText(leader);
  if (version >= 2) {
    DARUMA_ASSIGN_OR_RETURN(data["currentStateTimestamp"], r.Int64("currentStateTimestamp"));
  }
  DARUMA_ASSIGN_OR_RETURN(int32_t n, r.ArrayLength("members"));
  if (n < 0) return Status::Corruption("field members: null array");
  Json members = Json::array();
  for (int32_t i = 0; i < n; ++i) {
    DARUMA_ASSIGN_OR_RETURN(Json m, ReadMember(r, version, protocol_type == "consumer"));
    members.push_back(std::move(m));
  }
  data["members"] = std::move(members);
  DARUMA_RETURN_IF_ERROR(r.SkipTaggedFields("GroupMetadataValue tagged fields"));
  return data;
}

Result<std::string> ReadValue(const std::string& value, int16_t record_type) {
  MessageReader versions(value, false);
  auto version = versions.Int16("version");
  if (!version.ok()) return Status::Corruption("Could not read version from value's buffer.");
  const bool consumer_group = IsConsumerGroupRecordType(record_type);
  const char* name = consumer_group     ? ConsumerGroupValueName(record_type)
                     : record_type == 2 ? "GroupMetadataValue"
                                        : "OffsetCommitValue";
  // KIP-848's values exist at version 0 only, always flexible.
  const int16_t highest = consumer_group ? 0 : 4;
  if (*version < 0 || *version > highest) {
    return Status::Corruption(
        fmt::format("Could not read record with version {} from value's buffer due to: Can't "
                    "read version {} of {}.",
                    *version, *version, name));
  }
  MessageReader r(std::string_view(value).substr(2),
                  /*flexible=*/consumer_group || *version >= 4);
  auto data = consumer_group     ? ReadConsumerGroupValue(r, record_type)
              : record_type == 2 ? ReadGroupMetadataValue(r, *version)
                                 : ReadOffsetCommitValue(r, *version);
  if (!data.ok()) {
    return Status::Corruption(
        fmt::format("Could not read record with version {} from value's buffer due to: {}.",
                    *version, data.status().message()));
  }
  return Dump(Json{{"version", std::to_string(*version)}, {"data", std::move(*data)}});
}

}  // namespace

DecodedKeyValue DecodeOffsetsRecord(const Record& record) {
  if (!record.key) {
    // Kafka's parser throws here and the tool dies; Daruma prints the reason.
    return {fmt::format("Failed to decode message at offset {} using offset topic decoder "
                        "(message had a missing key)",
                        record.offset),
            std::nullopt};
  }
  auto error = [&](const std::string& why) {
    return DecodedKeyValue{fmt::format("Error at offset {}, skipping. {}", record.offset, why),
                           std::nullopt};
  };
  MessageReader r(*record.key, /*flexible=*/false);
  auto type = r.Int16("key version");
  if (!type.ok()) return error("Could not read version from key's buffer.");
  if (*type < 0 || *type > 8) {
    return {fmt::format("Unknown record type {} at offset {}, skipping.", *type, record.offset),
            std::nullopt};
  }
  auto key_data = IsConsumerGroupRecordType(*type) ? ReadConsumerGroupKey(r, *type)
                  : *type == 2                     ? ReadGroupMetadataKey(r)
                                                   : ReadOffsetCommitKey(r);
  if (!key_data.ok()) {
    return error(fmt::format("Could not read record with version {} from key's buffer due to: {}.",
                             *type, key_data.status().message()));
  }
  std::string key = Dump(Json{{"type", std::to_string(*type)}, {"data", std::move(*key_data)}});
  if (!record.value) return {std::move(key), std::string("<DELETE>")};
  auto value = ReadValue(*record.value, *type);
  if (!value.ok()) return error(value.status().message());
  return {std::move(key), std::move(*value)};
}

}  // namespace daruma::tools
