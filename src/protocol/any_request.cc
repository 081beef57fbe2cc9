#include "protocol/any_request.h"

#include <utility>

#include "protocol/codec_util.h"

namespace daruma {
namespace {

template <typename T>
Result<AnyRequest> Wrap(Result<T> decoded) {
  if (!decoded.ok()) return decoded.status();
  return AnyRequest(std::move(decoded).value());
}

}  // namespace

Result<AnyRequest> DecodeAnyRequest(ProtocolReader& reader, ApiKey key, int16_t version) {
  switch (key) {
    case ApiKey::kProduce:
      return Wrap(DecodeProduceRequest(reader, version));
    case ApiKey::kFetch:
      return Wrap(DecodeFetchRequest(reader, version));
    case ApiKey::kListOffsets:
      return Wrap(DecodeListOffsetsRequest(reader, version));
    case ApiKey::kMetadata:
      return Wrap(DecodeMetadataRequest(reader, version));
    case ApiKey::kApiVersions:
      return Wrap(DecodeApiVersionsRequest(reader, version));
    case ApiKey::kCreateTopics:
      return Wrap(DecodeCreateTopicsRequest(reader, version));
    case ApiKey::kDeleteTopics:
      return Wrap(DecodeDeleteTopicsRequest(reader, version));
    case ApiKey::kDescribeConfigs:
      return Wrap(DecodeDescribeConfigsRequest(reader, version));
    case ApiKey::kFindCoordinator:
      return Wrap(DecodeFindCoordinatorRequest(reader, version));
    case ApiKey::kDeleteRecords:
      return Wrap(DecodeDeleteRecordsRequest(reader, version));
    case ApiKey::kOffsetForLeaderEpoch:
      return Wrap(DecodeOffsetForLeaderEpochRequest(reader, version));
    case ApiKey::kAlterConfigs:
      return Wrap(DecodeAlterConfigsRequest(reader, version));
    case ApiKey::kDescribeLogDirs:
      return Wrap(DecodeDescribeLogDirsRequest(reader, version));
    case ApiKey::kCreatePartitions:
      return Wrap(DecodeCreatePartitionsRequest(reader, version));
    case ApiKey::kElectLeaders:
      return Wrap(DecodeElectLeadersRequest(reader, version));
    case ApiKey::kIncrementalAlterConfigs:
      return Wrap(DecodeIncrementalAlterConfigsRequest(reader, version));
    case ApiKey::kAlterPartitionReassignments:
      return Wrap(DecodeAlterPartitionReassignmentsRequest(reader, version));
    case ApiKey::kListPartitionReassignments:
      return Wrap(DecodeListPartitionReassignmentsRequest(reader, version));
    case ApiKey::kDescribeCluster:
      return Wrap(DecodeDescribeClusterRequest(reader, version));
    case ApiKey::kDescribeProducers:
      return Wrap(DecodeDescribeProducersRequest(reader, version));
    default: {
      Status unsupported = CheckSupportedVersion(key, version);
      if (!unsupported.ok()) return unsupported;
      return Status::Unsupported(fmt::format("{} has no AnyRequest codec", ApiKeyName(key)));
    }
  }
}

void EncodeAnyRequest(const AnyRequest& request, int16_t version, ProtocolWriter& writer) {
  struct Encoder {
    int16_t version;
    ProtocolWriter& w;
    void operator()(const ProduceRequest& r) { EncodeProduceRequest(r, version, w); }
    void operator()(const FetchRequest& r) { EncodeFetchRequest(r, version, w); }
    void operator()(const ListOffsetsRequest& r) { EncodeListOffsetsRequest(r, version, w); }
    void operator()(const MetadataRequest& r) { EncodeMetadataRequest(r, version, w); }
    void operator()(const ApiVersionsRequest& r) { EncodeApiVersionsRequest(r, version, w); }
    void operator()(const CreateTopicsRequest& r) { EncodeCreateTopicsRequest(r, version, w); }
    void operator()(const DeleteTopicsRequest& r) { EncodeDeleteTopicsRequest(r, version, w); }
    void operator()(const DescribeConfigsRequest& r) {
      EncodeDescribeConfigsRequest(r, version, w);
    }
    void operator()(const FindCoordinatorRequest& r) {
      EncodeFindCoordinatorRequest(r, version, w);
    }
    void operator()(const DeleteRecordsRequest& r) { EncodeDeleteRecordsRequest(r, version, w); }
    void operator()(const OffsetForLeaderEpochRequest& r) {
      EncodeOffsetForLeaderEpochRequest(r, version, w);
    }
    void operator()(const AlterConfigsRequest& r) { EncodeAlterConfigsRequest(r, version, w); }
    void operator()(const DescribeLogDirsRequest& r) {
      EncodeDescribeLogDirsRequest(r, version, w);
    }
    void operator()(const CreatePartitionsRequest& r) {
      EncodeCreatePartitionsRequest(r, version, w);
    }
    void operator()(const ElectLeadersRequest& r) { EncodeElectLeadersRequest(r, version, w); }
    void operator()(const IncrementalAlterConfigsRequest& r) {
      EncodeIncrementalAlterConfigsRequest(r, version, w);
    }
    void operator()(const AlterPartitionReassignmentsRequest& r) {
      EncodeAlterPartitionReassignmentsRequest(r, version, w);
    }
    void operator()(const ListPartitionReassignmentsRequest& r) {
      EncodeListPartitionReassignmentsRequest(r, version, w);
    }
    void operator()(const DescribeClusterRequest& r) {
      EncodeDescribeClusterRequest(r, version, w);
    }
    void operator()(const DescribeProducersRequest& r) {
      EncodeDescribeProducersRequest(r, version, w);
    }
  };
  std::visit(Encoder{version, writer}, request);
}

}  // namespace daruma
