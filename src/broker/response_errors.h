// ResponseErrors: what went wrong in one response, for the log line every
// error response gets (request_log.h). One ErrorsOf() per response type walks
// its error codes (top level, per topic, per partition) and keeps the first
// error, where it was, its message if the response carries one, and how many
// entries failed. Only the struct is read; nothing is decoded again.
#pragma once

#include <optional>
#include <string>
#include <string_view>

#include "protocol/error_codes.h"
#include "protocol/messages.h"

namespace daruma::broker {

struct ResponseErrors {
  ErrorCode first = ErrorCode::kNone;
  int count = 0;        // entries with an error (top level, topics, partitions)
  std::string where;    // of the first: "topic=t partition=3", "resource=..."
  std::string message;  // of the first, when the response has one

  bool any() const { return count > 0; }
  void Note(ErrorCode code, std::string_view at, const std::optional<std::string>& msg = {});
};

ResponseErrors ErrorsOf(const ApiVersionsResponse& r);
ResponseErrors ErrorsOf(const MetadataResponse& r);
ResponseErrors ErrorsOf(const ProduceResponse& r);
ResponseErrors ErrorsOf(const FetchResponse& r);
ResponseErrors ErrorsOf(const ListOffsetsResponse& r);
ResponseErrors ErrorsOf(const CreateTopicsResponse& r);
ResponseErrors ErrorsOf(const DeleteTopicsResponse& r);
ResponseErrors ErrorsOf(const DescribeConfigsResponse& r);
ResponseErrors ErrorsOf(const FindCoordinatorResponse& r);
ResponseErrors ErrorsOf(const DeleteRecordsResponse& r);
ResponseErrors ErrorsOf(const OffsetForLeaderEpochResponse& r);
ResponseErrors ErrorsOf(const AlterConfigsResponse& r);
ResponseErrors ErrorsOf(const DescribeLogDirsResponse& r);
ResponseErrors ErrorsOf(const CreatePartitionsResponse& r);
ResponseErrors ErrorsOf(const ElectLeadersResponse& r);
ResponseErrors ErrorsOf(const IncrementalAlterConfigsResponse& r);
ResponseErrors ErrorsOf(const AlterPartitionReassignmentsResponse& r);
ResponseErrors ErrorsOf(const ListPartitionReassignmentsResponse& r);
ResponseErrors ErrorsOf(const DescribeClusterResponse& r);
ResponseErrors ErrorsOf(const DescribeProducersResponse& r);
ResponseErrors ErrorsOf(const InitProducerIdResponse& r);
ResponseErrors ErrorsOf(const JoinGroupResponse& r);
ResponseErrors ErrorsOf(const SyncGroupResponse& r);
ResponseErrors ErrorsOf(const HeartbeatResponse& r);
ResponseErrors ErrorsOf(const LeaveGroupResponse& r);
ResponseErrors ErrorsOf(const OffsetCommitResponse& r);
ResponseErrors ErrorsOf(const OffsetFetchResponse& r);
ResponseErrors ErrorsOf(const OffsetDeleteResponse& r);
ResponseErrors ErrorsOf(const DescribeGroupsResponse& r);
ResponseErrors ErrorsOf(const ListGroupsResponse& r);
ResponseErrors ErrorsOf(const DeleteGroupsResponse& r);
ResponseErrors ErrorsOf(const AddPartitionsToTxnResponse& r);
ResponseErrors ErrorsOf(const AddOffsetsToTxnResponse& r);
ResponseErrors ErrorsOf(const EndTxnResponse& r);
ResponseErrors ErrorsOf(const TxnOffsetCommitResponse& r);
ResponseErrors ErrorsOf(const DescribeTransactionsResponse& r);
ResponseErrors ErrorsOf(const ListTransactionsResponse& r);

}  // namespace daruma::broker
