#include "broker/response_errors.h"

#include <fmt/format.h>

namespace daruma::broker {
namespace {

std::string TopicPartitionAt(std::string_view topic, int32_t partition) {
  return fmt::format("topic={} partition={}", topic, partition);
}

}  // namespace

void ResponseErrors::Note(ErrorCode code, std::string_view at,
                          const std::optional<std::string>& msg) {
  if (code == ErrorCode::kNone) return;
  if (count++ > 0) return;
  first = code;
  where = at;
  if (msg) message = *msg;
}

ResponseErrors ErrorsOf(const ApiVersionsResponse& r) {
  ResponseErrors e;
  e.Note(r.error_code, "");
  return e;
}

ResponseErrors ErrorsOf(const MetadataResponse& r) {
  ResponseErrors e;
  for (const auto& t : r.topics) {
    const std::string topic = t.name.value_or("");
    e.Note(t.error_code, "topic=" + topic);
    for (const auto& p : t.partitions)
      e.Note(p.error_code, TopicPartitionAt(topic, p.partition_index));
  }
  return e;
}

ResponseErrors ErrorsOf(const ProduceResponse& r) {
  ResponseErrors e;
  for (const auto& t : r.responses) {
    for (const auto& p : t.partition_responses) {
      e.Note(p.error_code, TopicPartitionAt(t.name, p.index), p.error_message);
    }
  }
  return e;
}

ResponseErrors ErrorsOf(const FetchResponse& r) {
  ResponseErrors e;
  e.Note(r.error_code, "");
  for (const auto& t : r.responses) {
    for (const auto& p : t.partitions) {
      e.Note(p.error_code, TopicPartitionAt(t.topic, p.partition_index));
    }
  }
  return e;
}

ResponseErrors ErrorsOf(const ListOffsetsResponse& r) {
  ResponseErrors e;
  for (const auto& t : r.topics) {
    for (const auto& p : t.partitions) {
      e.Note(p.error_code, TopicPartitionAt(t.name, p.partition_index));
    }
  }
  return e;
}

ResponseErrors ErrorsOf(const CreateTopicsResponse& r) {
  ResponseErrors e;
  for (const auto& t : r.topics) e.Note(t.error_code, "topic=" + t.name, t.error_message);
  return e;
}

ResponseErrors ErrorsOf(const DeleteTopicsResponse& r) {
  ResponseErrors e;
  for (const auto& t : r.responses) {
    e.Note(t.error_code, "topic=" + t.name.value_or(""), t.error_message);
  }
  return e;
}

ResponseErrors ErrorsOf(const DescribeConfigsResponse& r) {
  ResponseErrors e;
  for (const auto& res : r.results) {
    e.Note(res.error_code, "resource=" + res.resource_name, res.error_message);
  }
  return e;
}

ResponseErrors ErrorsOf(const FindCoordinatorResponse& r) {
  ResponseErrors e;
  e.Note(r.error_code, "", r.error_message);
  for (const auto& c : r.coordinators) e.Note(c.error_code, "key=" + c.key, c.error_message);
  return e;
}

ResponseErrors ErrorsOf(const DeleteRecordsResponse& r) {
  ResponseErrors e;
  for (const auto& t : r.topics) {
    for (const auto& p : t.partitions) {
      e.Note(p.error_code, TopicPartitionAt(t.name, p.partition_index));
    }
  }
  return e;
}

ResponseErrors ErrorsOf(const OffsetForLeaderEpochResponse& r) {
  ResponseErrors e;
  for (const auto& t : r.topics) {
    for (const auto& p : t.partitions) e.Note(p.error_code, TopicPartitionAt(t.topic, p.partition));
  }
  return e;
}

ResponseErrors ErrorsOf(const AlterConfigsResponse& r) {
  ResponseErrors e;
  for (const auto& res : r.responses) {
    e.Note(res.error_code, "resource=" + res.resource_name, res.error_message);
  }
  return e;
}

ResponseErrors ErrorsOf(const DescribeLogDirsResponse& r) {
  ResponseErrors e;
  e.Note(r.error_code, "");
  for (const auto& d : r.results) e.Note(d.error_code, "log_dir=" + d.log_dir);
  return e;
}

ResponseErrors ErrorsOf(const CreatePartitionsResponse& r) {
  ResponseErrors e;
  for (const auto& t : r.results) e.Note(t.error_code, "topic=" + t.name, t.error_message);
  return e;
}

ResponseErrors ErrorsOf(const ElectLeadersResponse& r) {
  ResponseErrors e;
  e.Note(r.error_code, "");
  for (const auto& t : r.replica_election_results) {
    for (const auto& p : t.partition_result) {
      e.Note(p.error_code, TopicPartitionAt(t.topic, p.partition_id), p.error_message);
    }
  }
  return e;
}

ResponseErrors ErrorsOf(const IncrementalAlterConfigsResponse& r) {
  ResponseErrors e;
  for (const auto& res : r.responses) {
    e.Note(res.error_code, "resource=" + res.resource_name, res.error_message);
  }
  return e;
}

ResponseErrors ErrorsOf(const AlterPartitionReassignmentsResponse& r) {
  ResponseErrors e;
  e.Note(r.error_code, "", r.error_message);
  for (const auto& t : r.responses) {
    for (const auto& p : t.partitions) {
      e.Note(p.error_code, TopicPartitionAt(t.name, p.partition_index), p.error_message);
    }
  }
  return e;
}

ResponseErrors ErrorsOf(const ListPartitionReassignmentsResponse& r) {
  ResponseErrors e;
  e.Note(r.error_code, "", r.error_message);
  return e;
}

ResponseErrors ErrorsOf(const InitProducerIdResponse& r) {
  ResponseErrors e;
  e.Note(r.error_code, "");
  return e;
}

ResponseErrors ErrorsOf(const DescribeClusterResponse& r) {
  ResponseErrors e;
  e.Note(r.error_code, "", r.error_message);
  return e;
}

ResponseErrors ErrorsOf(const DescribeProducersResponse& r) {
  ResponseErrors e;
  for (const auto& t : r.topics) {
    for (const auto& p : t.partitions) {
      e.Note(p.error_code, TopicPartitionAt(t.name, p.partition_index), p.error_message);
    }
  }
  return e;
}

ResponseErrors ErrorsOf(const JoinGroupResponse& r) {
  ResponseErrors e;
  e.Note(r.error_code, "member=" + r.member_id);
  return e;
}

ResponseErrors ErrorsOf(const SyncGroupResponse& r) {
  ResponseErrors e;
  e.Note(r.error_code, "");
  return e;
}

ResponseErrors ErrorsOf(const HeartbeatResponse& r) {
  ResponseErrors e;
  e.Note(r.error_code, "");
  return e;
}

ResponseErrors ErrorsOf(const LeaveGroupResponse& r) {
  ResponseErrors e;
  e.Note(r.error_code, "");
  for (const auto& m : r.members) e.Note(m.error_code, "member=" + m.member_id);
  return e;
}

ResponseErrors ErrorsOf(const OffsetCommitResponse& r) {
  ResponseErrors e;
  for (const auto& t : r.topics) {
    for (const auto& p : t.partitions)
      e.Note(p.error_code, TopicPartitionAt(t.name, p.partition_index));
  }
  return e;
}

ResponseErrors ErrorsOf(const OffsetFetchResponse& r) {
  ResponseErrors e;
  e.Note(r.error_code, "");
  for (const auto& t : r.topics) {
    for (const auto& p : t.partitions)
      e.Note(p.error_code, TopicPartitionAt(t.name, p.partition_index));
  }
  for (const auto& g : r.groups) {
    e.Note(g.error_code, "group=" + g.group_id);
    for (const auto& t : g.topics) {
      for (const auto& p : t.partitions)
        e.Note(p.error_code, TopicPartitionAt(t.name, p.partition_index));
    }
  }
  return e;
}

ResponseErrors ErrorsOf(const OffsetDeleteResponse& r) {
  ResponseErrors e;
  e.Note(r.error_code, "");
  for (const auto& t : r.topics) {
    for (const auto& p : t.partitions)
      e.Note(p.error_code, TopicPartitionAt(t.name, p.partition_index));
  }
  return e;
}

ResponseErrors ErrorsOf(const DescribeGroupsResponse& r) {
  ResponseErrors e;
  for (const auto& g : r.groups) e.Note(g.error_code, "group=" + g.group_id);
  return e;
}

ResponseErrors ErrorsOf(const ListGroupsResponse& r) {
  ResponseErrors e;
  e.Note(r.error_code, "");
  return e;
}

ResponseErrors ErrorsOf(const DeleteGroupsResponse& r) {
  ResponseErrors e;
  for (const auto& g : r.results) e.Note(g.error_code, "group=" + g.group_id);
  return e;
}

ResponseErrors ErrorsOf(const AddPartitionsToTxnResponse& r) {
  ResponseErrors e;
  e.Note(r.error_code, "");
  auto note = [&](const std::vector<AddPartitionsToTxnResponse::TopicResult>& topics,
                  const std::string& prefix) {
    for (const auto& t : topics) {
      for (const auto& p : t.results_by_partition) {
        e.Note(p.partition_error_code, prefix + TopicPartitionAt(t.name, p.partition_index));
      }
    }
  };
  note(r.results_by_topic_v3_and_below, "");
  for (const auto& txn : r.results_by_transaction) {
    note(txn.topic_results, "transactional_id=" + txn.transactional_id + " ");
  }
  return e;
}

ResponseErrors ErrorsOf(const AddOffsetsToTxnResponse& r) {
  ResponseErrors e;
  e.Note(r.error_code, "");
  return e;
}

ResponseErrors ErrorsOf(const EndTxnResponse& r) {
  ResponseErrors e;
  e.Note(r.error_code, "");
  return e;
}

ResponseErrors ErrorsOf(const TxnOffsetCommitResponse& r) {
  ResponseErrors e;
  for (const auto& t : r.topics) {
    for (const auto& p : t.partitions)
      e.Note(p.error_code, TopicPartitionAt(t.name, p.partition_index));
  }
  return e;
}

ResponseErrors ErrorsOf(const DescribeTransactionsResponse& r) {
  ResponseErrors e;
  for (const auto& s : r.transaction_states) {
    e.Note(s.error_code, "transactional_id=" + s.transactional_id);
  }
  return e;
}

ResponseErrors ErrorsOf(const ListTransactionsResponse& r) {
  ResponseErrors e;
  e.Note(r.error_code, "");
  return e;
}

}  // namespace daruma::broker
