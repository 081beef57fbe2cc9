#include "tools/kraft_control_record_decoder.h"

#include <nlohmann/json.hpp>

#include "tools/dump_message_reader.h"

namespace daruma::tools {
namespace {

using Json = nlohmann::ordered_json;

Result<Json> Endpoint(MessageReader& r) {
  Json j;
  DARUMA_ASSIGN_OR_RETURN(std::string name, r.String("Name"));
  DARUMA_ASSIGN_OR_RETURN(std::string host, r.String("Host"));
  DARUMA_ASSIGN_OR_RETURN(int16_t port, r.Int16("Port"));
  DARUMA_RETURN_IF_ERROR(r.SkipTaggedFields("Endpoint"));
  j["name"] = name;
  j["host"] = host;
  j["port"] = int32_t(uint16_t(port));
  return j;
}

Result<Json> Voter(MessageReader& r) {
  Json j;
  DARUMA_ASSIGN_OR_RETURN(int32_t id, r.Int32("VoterId"));
  j["voterId"] = id;
  DARUMA_ASSIGN_OR_RETURN(j["voterDirectoryId"], r.Uuid("VoterDirectoryId"));
  DARUMA_ASSIGN_OR_RETURN(int32_t endpoints, r.ArrayLength("Endpoints"));
  if (endpoints < 0) return Status::Corruption("field Endpoints: null array");
  j["endpoints"] = Json::array();
  for (int32_t i = 0; i < endpoints; ++i) {
    DARUMA_ASSIGN_OR_RETURN(Json e, Endpoint(r));
    j["endpoints"].push_back(std::move(e));
  }
  DARUMA_ASSIGN_OR_RETURN(int16_t min, r.Int16("MinSupportedVersion"));
  DARUMA_ASSIGN_OR_RETURN(int16_t max, r.Int16("MaxSupportedVersion"));
  DARUMA_RETURN_IF_ERROR(r.SkipTaggedFields("KRaftVersionFeature"));
  j["kRaftVersionFeature"] = Json{{"minSupportedVersion", min}, {"maxSupportedVersion", max}};
  DARUMA_RETURN_IF_ERROR(r.SkipTaggedFields("Voter"));
  return j;
}

Result<std::string> Describe(ControlRecordType type, MessageReader& r) {
  Json j;
  DARUMA_ASSIGN_OR_RETURN(int16_t version, r.Int16("Version"));
  j["version"] = version;
  const char* name = nullptr;
  switch (type) {
    case ControlRecordType::kSnapshotHeader: {
      name = "SnapshotHeader";
      DARUMA_ASSIGN_OR_RETURN(int64_t ts, r.Int64("LastContainedLogTimestamp"));
      j["lastContainedLogTimestamp"] = ts;
      break;
    }
    case ControlRecordType::kSnapshotFooter:
      name = "SnapshotFooter";
      break;
    case ControlRecordType::kKraftVersion: {
      name = "KRaftVersion";
      DARUMA_ASSIGN_OR_RETURN(int16_t kraft, r.Int16("KRaftVersion"));
      j["kRaftVersion"] = kraft;
      break;
    }
    case ControlRecordType::kKraftVoters: {
      name = "KRaftVoters";
      DARUMA_ASSIGN_OR_RETURN(int32_t voters, r.ArrayLength("Voters"));
      if (voters < 0) return Status::Corruption("field Voters: null array");
      j["voters"] = Json::array();
      for (int32_t i = 0; i < voters; ++i) {
        DARUMA_ASSIGN_OR_RETURN(Json v, Voter(r));
        j["voters"].push_back(std::move(v));
      }
      break;
    }
    default:
      return Status::InvalidArgument("not a KRaft control record");
  }
  DARUMA_RETURN_IF_ERROR(r.SkipTaggedFields(name));
  return std::string(name) + " " + j.dump(-1, ' ', false, Json::error_handler_t::replace);
}

}  // namespace

std::optional<std::string> DescribeKraftControlRecord(ControlRecordType type,
                                                      std::string_view value) {
  MessageReader reader(value, /*flexible=*/true);
  Result<std::string> described = Describe(type, reader);
  if (!described.ok()) return std::nullopt;
  return std::move(*described);
}

}  // namespace daruma::tools
