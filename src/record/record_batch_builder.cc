#include "record/record_batch_builder.h"

#include <algorithm>

#include "common/crc32c.h"
#include "common/varint.h"

namespace daruma {
namespace {

void WriteNullable(ByteWriter& w, const std::optional<std::string>& s) {
  if (!s) {
    w.WriteVarint(-1);
    return;
  }
  w.WriteVarint(int32_t(s->size()));
  w.WriteBytes(AsBytes(*s));
}

void AppendRecord(Bytes* out, const RecordInput& rec, int64_t timestamp_delta,
                  int32_t offset_delta) {
  Bytes body;
  ByteWriter w(&body);
  w.WriteInt8(0);
  w.WriteVarlong(timestamp_delta);
  w.WriteVarint(offset_delta);
  WriteNullable(w, rec.key);
  WriteNullable(w, rec.value);
  w.WriteVarint(int32_t(rec.headers.size()));
  for (const auto& h : rec.headers) {
    w.WriteVarint(int32_t(h.key.size()));
    w.WriteBytes(AsBytes(h.key));
    WriteNullable(w, h.value);
  }
  ByteWriter(out).WriteVarint(int32_t(body.size()));
  out->insert(out->end(), body.begin(), body.end());
}

uint8_t AttributeByte(const BatchBuilderOptions& o) {
  uint8_t a = uint8_t(o.compression) & batch_attributes::kCompressionMask;
  if (o.timestamp_type == TimestampType::kLogAppendTime) a |= batch_attributes::kLogAppendTime;
  if (o.is_transactional) a |= batch_attributes::kTransactional;
  if (o.is_control) a |= batch_attributes::kControl;
  if (o.delete_horizon_ms) a |= batch_attributes::kDeleteHorizon;
  return a;
}

}  // namespace

Result<Bytes> BuildRecordBatch(const BatchBuilderOptions& o,
                               const std::vector<RecordInput>& records) {
  if (records.empty()) return Status::InvalidArgument("cannot build a batch with no records");
  const bool append_time = o.timestamp_type == TimestampType::kLogAppendTime;
  auto timestamp_of = [&](const RecordInput& r) {
    return append_time ? o.log_append_time : r.timestamp;
  };

  int64_t base_timestamp = o.delete_horizon_ms ? *o.delete_horizon_ms : timestamp_of(records[0]);
  int64_t max_timestamp = kNoTimestamp;
  Bytes region;
  int32_t next_delta = 0;
  int32_t last_delta = 0;
  for (const auto& rec : records) {
    int32_t delta = rec.offset_delta >= 0 ? rec.offset_delta : next_delta;
    int64_t ts = timestamp_of(rec);
    max_timestamp = std::max(max_timestamp, ts);
    AppendRecord(&region, rec, ts - base_timestamp, delta);
    last_delta = delta;
    next_delta = delta + 1;
  }
  if (append_time) max_timestamp = o.log_append_time;

  if (o.compression != CompressionType::kNone) {
    DARUMA_ASSIGN_OR_RETURN(region, Compress(o.compression, region, kMagicV2, o.compression_level));
  }

  Bytes out(kRecordBatchOverhead);
  uint8_t* p = out.data();
  namespace L = batch_layout;
  StoreBe64(p + L::kBaseOffset, uint64_t(o.base_offset));
  StoreBe32(p + L::kLength, uint32_t(kRecordBatchOverhead - kLogOverhead + region.size()));
  StoreBe32(p + L::kPartitionLeaderEpoch, uint32_t(o.partition_leader_epoch));
  p[L::kMagic] = kMagicV2;
  StoreBe16(p + L::kAttributes, AttributeByte(o));
  StoreBe32(p + L::kLastOffsetDelta, uint32_t(last_delta));
  StoreBe64(p + L::kBaseTimestamp, uint64_t(base_timestamp));
  StoreBe64(p + L::kMaxTimestamp, uint64_t(max_timestamp));
  StoreBe64(p + L::kProducerId, uint64_t(o.producer_id));
  StoreBe16(p + L::kProducerEpoch, uint16_t(o.producer_epoch));
  StoreBe32(p + L::kBaseSequence, uint32_t(o.base_sequence));
  StoreBe32(p + L::kRecordsCount, uint32_t(records.size()));
  out.insert(out.end(), region.begin(), region.end());
  RewriteBatchCrc(out);
  return out;
}

Result<Bytes> RecompressRecordBatch(const RecordBatchView& batch, CompressionType target, int level,
                                    size_t max_decompressed) {
  DARUMA_ASSIGN_OR_RETURN(std::vector<Record> records, batch.DecodeRecords(max_decompressed));
  BatchBuilderOptions o;
  o.base_offset = batch.base_offset();
  o.partition_leader_epoch = batch.partition_leader_epoch();
  o.compression = target;
  o.compression_level = level;
  o.timestamp_type = batch.timestamp_type();
  if (o.timestamp_type == TimestampType::kLogAppendTime) o.log_append_time = batch.max_timestamp();
  o.producer_id = batch.producer_id();
  o.producer_epoch = batch.producer_epoch();
  o.base_sequence = batch.base_sequence();
  o.is_transactional = batch.is_transactional();
  o.is_control = batch.is_control();
  std::vector<RecordInput> inputs;
  inputs.reserve(records.size());
  for (Record& r : records) {
    RecordInput in;
    in.timestamp = r.timestamp;
    in.key = std::move(r.key);
    in.value = std::move(r.value);
    in.headers = std::move(r.headers);
    in.offset_delta = int32_t(r.offset - batch.base_offset());
    inputs.push_back(std::move(in));
  }
  if (inputs.empty()) return Status::InvalidRecord("a batch with no records to recompress");
  return BuildRecordBatch(o, inputs);
}

Bytes BuildEndTxnMarkerBatch(int64_t base_offset, int32_t partition_leader_epoch,
                             int64_t producer_id, int16_t producer_epoch, ControlRecordType type,
                             int32_t coordinator_epoch, int64_t timestamp) {
  BatchBuilderOptions o;
  o.base_offset = base_offset;
  o.partition_leader_epoch = partition_leader_epoch;
  o.producer_id = producer_id;
  o.producer_epoch = producer_epoch;
  o.is_transactional = true;
  o.is_control = true;
  Bytes key = EncodeControlRecordKey(type);
  Bytes value = EncodeEndTxnMarkerValue(coordinator_epoch);
  RecordInput rec;
  rec.timestamp = timestamp;
  rec.key = std::string(key.begin(), key.end());
  rec.value = std::string(value.begin(), value.end());
  // Cannot fail: one record, no compression.
  return std::move(BuildRecordBatch(o, {rec})).value();
}

void RewriteBatchCrc(std::span<uint8_t> batch) {
  uint32_t crc =
      Crc32c(batch.data() + batch_layout::kAttributes, batch.size() - batch_layout::kAttributes);
  StoreBe32(batch.data() + batch_layout::kCrc, crc);
}

void SetBatchBaseOffset(std::span<uint8_t> batch, int64_t base_offset) {
  StoreBe64(batch.data() + batch_layout::kBaseOffset, uint64_t(base_offset));
}

void SetBatchPartitionLeaderEpoch(std::span<uint8_t> batch, int32_t epoch) {
  StoreBe32(batch.data() + batch_layout::kPartitionLeaderEpoch, uint32_t(epoch));
}

}  // namespace daruma
