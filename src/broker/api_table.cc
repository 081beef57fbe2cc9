// The handler table: the one place an API is switched on (api_handlers.h).
#include <algorithm>
#include <array>

#include "broker/api_handlers.h"
#include "protocol/messages.h"

namespace daruma::broker {
namespace {

// Sorted by key. Adding a row advertises the API with every version its
// codec reads (protocol/api_keys.cc); a codec alone switches nothing on.
constexpr std::array<ApiHandlerRow, 37> kHandlers = {{
    {ApiKey::kProduce, HandleProduce},
    {ApiKey::kFetch, HandleFetch},
    {ApiKey::kListOffsets, HandleListOffsets},
    {ApiKey::kMetadata, HandleMetadata},
    {ApiKey::kOffsetCommit, HandleOffsetCommit},
    {ApiKey::kOffsetFetch, HandleOffsetFetch},
    {ApiKey::kFindCoordinator, HandleFindCoordinator},
    {ApiKey::kJoinGroup, HandleJoinGroup},
    {ApiKey::kHeartbeat, HandleHeartbeat},
    {ApiKey::kLeaveGroup, HandleLeaveGroup},
    {ApiKey::kSyncGroup, HandleSyncGroup},
    {ApiKey::kDescribeGroups, HandleDescribeGroups},
    {ApiKey::kListGroups, HandleListGroups},
    {ApiKey::kApiVersions, HandleApiVersions},
    {ApiKey::kCreateTopics, HandleCreateTopics},
    {ApiKey::kDeleteTopics, HandleDeleteTopics},
    {ApiKey::kDeleteRecords, HandleDeleteRecords},
    {ApiKey::kInitProducerId, HandleInitProducerId},
    {ApiKey::kOffsetForLeaderEpoch, HandleOffsetForLeaderEpoch},
    {ApiKey::kAddPartitionsToTxn, HandleAddPartitionsToTxn},
    {ApiKey::kAddOffsetsToTxn, HandleAddOffsetsToTxn},
    {ApiKey::kEndTxn, HandleEndTxn},
    {ApiKey::kTxnOffsetCommit, HandleTxnOffsetCommit},
    {ApiKey::kDescribeConfigs, HandleDescribeConfigs},
    {ApiKey::kAlterConfigs, HandleAlterConfigs},
    {ApiKey::kDescribeLogDirs, HandleDescribeLogDirs},
    {ApiKey::kCreatePartitions, HandleCreatePartitions},
    {ApiKey::kDeleteGroups, HandleDeleteGroups},
    {ApiKey::kElectLeaders, HandleElectLeaders},
    {ApiKey::kIncrementalAlterConfigs, HandleIncrementalAlterConfigs},
    {ApiKey::kAlterPartitionReassignments, HandleAlterPartitionReassignments},
    {ApiKey::kListPartitionReassignments, HandleListPartitionReassignments},
    {ApiKey::kOffsetDelete, HandleOffsetDelete},
    {ApiKey::kDescribeCluster, HandleDescribeCluster},
    {ApiKey::kDescribeProducers, HandleDescribeProducers},
    {ApiKey::kDescribeTransactions, HandleDescribeTransactions},
    {ApiKey::kListTransactions, HandleListTransactions},
}};

}  // namespace

std::span<const ApiHandlerRow> ApiHandlerTable() {
  return kHandlers;
}

const ApiHandlerRow* FindApiHandler(ApiKey key) {
  for (const ApiHandlerRow& row : kHandlers) {
    if (row.key == key) return &row;
  }
  return nullptr;
}

const ApiVersionRange* HandledVersions(ApiKey key) {
  return FindApiHandler(key) != nullptr ? FindAdvertisedApi(key) : nullptr;
}

std::vector<ApiVersionsResponse::Key> HandledApiKeys() {
  std::vector<ApiVersionsResponse::Key> keys;
  for (const ApiHandlerRow& row : kHandlers) {
    const ApiVersionRange* range = FindAdvertisedApi(row.key);
    if (range == nullptr) continue;  // no codec: the HandlerTable test fails
    ApiVersionsResponse::Key key;
    key.api_key = row.key;
    key.min_version = range->min;
    key.max_version = range->max;
    keys.push_back(std::move(key));
  }
  std::sort(keys.begin(), keys.end(),
            [](const auto& a, const auto& b) { return int16_t(a.api_key) < int16_t(b.api_key); });
  return keys;
}

void CloseMalformed(const HandlerEnv& env, const RequestHeader& header, const Status& why,
                    const Respond& respond) {
  LogRejectedRequest(env.ctx.log, &header, int16_t(header.api_key), header.api_version,
                     RejectKind::kMalformedBody, why.ToString(), "close");
  respond(std::nullopt, true);
}

}  // namespace daruma::broker
