// AnyRequest: the decoded body of any advertised request, for code that
// handles requests generically (the request-decoder fuzzer, codec tests, a
// test client). Handlers normally call the per-API Decode*Request directly.
//
// Contract: DecodeAnyRequest(reader, key, version) == the per-API decoder for
// `key`; kUnsupported for a key/version outside AdvertisedApis(). The variant
// holds the same views into the frame as the per-API structs (ProduceRequest
// records), so the frame must outlive it.
#pragma once

#include <cstdint>
#include <variant>

#include "common/status.h"
#include "protocol/api_keys.h"
#include "protocol/messages.h"
#include "protocol/protocol_reader.h"
#include "protocol/protocol_writer.h"

namespace daruma {

using AnyRequest =
    std::variant<ProduceRequest, FetchRequest, ListOffsetsRequest, MetadataRequest,
                 ApiVersionsRequest, CreateTopicsRequest, DeleteTopicsRequest,
                 DescribeConfigsRequest, FindCoordinatorRequest, DeleteRecordsRequest,
                 OffsetForLeaderEpochRequest, AlterConfigsRequest, DescribeLogDirsRequest,
                 CreatePartitionsRequest, ElectLeadersRequest, IncrementalAlterConfigsRequest,
                 AlterPartitionReassignmentsRequest, ListPartitionReassignmentsRequest,
                 DescribeClusterRequest, DescribeProducersRequest>;

Result<AnyRequest> DecodeAnyRequest(ProtocolReader& reader, ApiKey key, int16_t version);
// Encodes the alternative held by `request` at `version` (which must be
// advertised for that API).
void EncodeAnyRequest(const AnyRequest& request, int16_t version, ProtocolWriter& writer);

}  // namespace daruma
