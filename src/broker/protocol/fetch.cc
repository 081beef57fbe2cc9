#include "broker/protocol/fetch.h"

#include "broker/protocol/codec_util.h"

namespace daruma::broker {
namespace {

constexpr ApiKey kKey = ApiKey::kFetch;

FetchRequest::Partition ReadRequestPartition(ProtocolReader& r, int16_t version) {
  FetchRequest::Partition p;
  p.partition = r.ReadInt32("Topics.Partitions.Partition");
  if (version >= 9) p.current_leader_epoch = r.ReadInt32("Topics.Partitions.CurrentLeaderEpoch");
  p.fetch_offset = r.ReadInt64("Topics.Partitions.FetchOffset");
  if (version >= 5) p.log_start_offset = r.ReadInt64("Topics.Partitions.LogStartOffset");
  p.partition_max_bytes = r.ReadInt32("Topics.Partitions.PartitionMaxBytes");
  return p;
}

void WriteRequestPartition(const FetchRequest::Partition& p, int16_t version, ProtocolWriter& w) {
  w.WriteInt32(p.partition);
  if (version >= 9) w.WriteInt32(p.current_leader_epoch);
  w.WriteInt64(p.fetch_offset);
  if (version >= 5) w.WriteInt64(p.log_start_offset);
  w.WriteInt32(p.partition_max_bytes);
}

FetchResponse::AbortedTransaction ReadAborted(ProtocolReader& r) {
  FetchResponse::AbortedTransaction a;
  a.producer_id = r.ReadInt64("Responses.Partitions.AbortedTransactions.ProducerId");
  a.first_offset = r.ReadInt64("Responses.Partitions.AbortedTransactions.FirstOffset");
  return a;
}

FetchResponse::Partition ReadResponsePartition(ProtocolReader& r, int16_t version) {
  FetchResponse::Partition p;
  p.partition_index = r.ReadInt32("Responses.Partitions.PartitionIndex");
  p.error_code = ErrorCode(r.ReadInt16("Responses.Partitions.ErrorCode"));
  p.high_watermark = r.ReadInt64("Responses.Partitions.HighWatermark");
  p.last_stable_offset = r.ReadInt64("Responses.Partitions.LastStableOffset");
  if (version >= 5) p.log_start_offset = r.ReadInt64("Responses.Partitions.LogStartOffset");
  p.aborted_transactions = r.ReadNullableArray<FetchResponse::AbortedTransaction>(
      "Responses.Partitions.AbortedTransactions", kClassic, ReadAborted);
  if (version >= 11) {
    p.preferred_read_replica = r.ReadInt32("Responses.Partitions.PreferredReadReplica");
  }
  std::optional<ByteSpan> records = r.ReadNullableBytes("Responses.Partitions.Records", kClassic);
  if (records) {
    p.records = Bytes(records->begin(), records->end());
  } else {
    p.records = std::nullopt;
  }
  return p;
}

void WriteResponsePartition(const FetchResponse::Partition& p, int16_t version, ProtocolWriter& w) {
  w.WriteInt32(p.partition_index);
  w.WriteInt16(int16_t(p.error_code));
  w.WriteInt64(p.high_watermark);
  w.WriteInt64(p.last_stable_offset);
  if (version >= 5) w.WriteInt64(p.log_start_offset);
  w.WriteNullableArray(p.aborted_transactions, kClassic,
                       [](const FetchResponse::AbortedTransaction& a, ProtocolWriter& w) {
                         w.WriteInt64(a.producer_id);
                         w.WriteInt64(a.first_offset);
                       });
  if (version >= 11) w.WriteInt32(p.preferred_read_replica);
  if (!p.file_records.empty()) {
    // The record set is `records` then the file ranges, spliced in unread.
    uint64_t total = p.records ? p.records->size() : 0;
    for (const FileSlice& s : p.file_records) total += s.length;
    w.WriteInt32(int32_t(total));
    if (p.records) w.WriteRaw(*p.records);
    for (const FileSlice& s : p.file_records) w.SpliceFile(s);
  } else if (p.records) {
    w.WriteBytes(*p.records, kClassic);
  } else {
    w.WriteNullableBytes(std::nullopt, kClassic);
  }
}

}  // namespace

Result<FetchRequest> DecodeFetchRequest(ProtocolReader& r, int16_t version) {
  DARUMA_RETURN_IF_ERROR(CheckDecodeVersion(kKey, version, "request"));
  FetchRequest req;
  req.replica_id = r.ReadInt32("ReplicaId");
  req.max_wait_ms = r.ReadInt32("MaxWaitMs");
  req.min_bytes = r.ReadInt32("MinBytes");
  req.max_bytes = r.ReadInt32("MaxBytes");
  req.isolation_level = r.ReadInt8("IsolationLevel");
  if (version >= 7) {
    req.session_id = r.ReadInt32("SessionId");
    req.session_epoch = r.ReadInt32("SessionEpoch");
  }
  req.topics = r.ReadArray<FetchRequest::Topic>("Topics", kClassic, [version](ProtocolReader& r) {
    FetchRequest::Topic t;
    t.topic = r.ReadString("Topics.Topic", kClassic);
    t.partitions = r.ReadArray<FetchRequest::Partition>(
        "Topics.Partitions", kClassic,
        [version](ProtocolReader& r) { return ReadRequestPartition(r, version); });
    return t;
  });
  if (version >= 7) {
    req.forgotten_topics_data = r.ReadArray<FetchRequest::ForgottenTopic>(
        "ForgottenTopicsData", kClassic, [](ProtocolReader& r) {
          FetchRequest::ForgottenTopic t;
          t.topic = r.ReadString("ForgottenTopicsData.Topic", kClassic);
          t.partitions = r.ReadInt32Array("ForgottenTopicsData.Partitions", kClassic);
          return t;
        });
  }
  if (version >= 11) req.rack_id = r.ReadString("RackId", kClassic);
  return FinishDecode(r, std::move(req), kKey, version, "request");
}

void EncodeFetchRequest(const FetchRequest& req, int16_t version, ProtocolWriter& w) {
  w.WriteInt32(req.replica_id);
  w.WriteInt32(req.max_wait_ms);
  w.WriteInt32(req.min_bytes);
  w.WriteInt32(req.max_bytes);
  w.WriteInt8(req.isolation_level);
  if (version >= 7) {
    w.WriteInt32(req.session_id);
    w.WriteInt32(req.session_epoch);
  }
  w.WriteArray(req.topics, kClassic, [version](const FetchRequest::Topic& t, ProtocolWriter& w) {
    w.WriteString(t.topic, kClassic);
    w.WriteArray(t.partitions, kClassic,
                 [version](const FetchRequest::Partition& p, ProtocolWriter& w) {
                   WriteRequestPartition(p, version, w);
                 });
  });
  if (version >= 7) {
    w.WriteArray(req.forgotten_topics_data, kClassic,
                 [](const FetchRequest::ForgottenTopic& t, ProtocolWriter& w) {
                   w.WriteString(t.topic, kClassic);
                   w.WriteInt32Array(t.partitions, kClassic);
                 });
  }
  if (version >= 11) w.WriteString(req.rack_id, kClassic);
}

void EncodeFetchResponse(const FetchResponse& resp, int16_t version, ProtocolWriter& w) {
  w.WriteInt32(resp.throttle_time_ms);
  if (version >= 7) {
    w.WriteInt16(int16_t(resp.error_code));
    w.WriteInt32(resp.session_id);
  }
  w.WriteArray(resp.responses, kClassic,
               [version](const FetchResponse::Topic& t, ProtocolWriter& w) {
                 w.WriteString(t.topic, kClassic);
                 w.WriteArray(t.partitions, kClassic,
                              [version](const FetchResponse::Partition& p, ProtocolWriter& w) {
                                WriteResponsePartition(p, version, w);
                              });
               });
}

Result<FetchResponse> DecodeFetchResponse(ProtocolReader& r, int16_t version) {
  DARUMA_RETURN_IF_ERROR(CheckDecodeVersion(kKey, version, "response"));
  FetchResponse resp;
  resp.throttle_time_ms = r.ReadInt32("ThrottleTimeMs");
  if (version >= 7) {
    resp.error_code = ErrorCode(r.ReadInt16("ErrorCode"));
    resp.session_id = r.ReadInt32("SessionId");
  }
  resp.responses =
      r.ReadArray<FetchResponse::Topic>("Responses", kClassic, [version](ProtocolReader& r) {
        FetchResponse::Topic t;
        t.topic = r.ReadString("Responses.Topic", kClassic);
        t.partitions = r.ReadArray<FetchResponse::Partition>(
            "Responses.Partitions", kClassic,
            [version](ProtocolReader& r) { return ReadResponsePartition(r, version); });
        return t;
      });
  return FinishDecode(r, std::move(resp), kKey, version, "response");
}

}  // namespace daruma::broker
