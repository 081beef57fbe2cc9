#include "record/record_batch.h"

#include <fmt/format.h>

#include <algorithm>
#include <limits>

#include "common/crc32c.h"
#include "common/damage_kind.h"
#include "record/nullable_bytes.h"
#include "record/record_body.h"

namespace daruma {

const char* TimestampTypeName(TimestampType t) {
  switch (t) {
    case TimestampType::kNoTimestamp:
      return "NoTimestampType";
    case TimestampType::kCreateTime:
      return "CreateTime";
    case TimestampType::kLogAppendTime:
      return "LogAppendTime";
  }
  return "NoTimestampType";
}

int32_t IncrementSequence(int32_t sequence, int32_t delta) {
  if (sequence == kNoSequence) return kNoSequence;
  // Java's int arithmetic wraps; do the same in unsigned arithmetic so a
  // hostile (negative) delta cannot cause signed overflow.
  constexpr uint32_t kMax = uint32_t(std::numeric_limits<int32_t>::max());
  const uint32_t seq = uint32_t(sequence), d = uint32_t(delta);
  if (sequence > int32_t(kMax - d)) return int32_t(d - (kMax - seq) - 1u);
  return int32_t(seq + d);
}

Result<RecordBatchView> RecordBatchView::Parse(ByteSpan bytes) {
  if (bytes.size() < size_t(kRecordBatchOverhead)) {
    return WithDamageKind(Status::Corruption(fmt::format(
                              "record batch size {} is smaller than the minimum batch size {}",
                              bytes.size(), kRecordBatchOverhead)),
                          DamageKind::kBadSize);
  }
  RecordBatchView view(bytes);
  if (view.magic() != kMagicV2) {
    return WithDamageKind(Status::Corruption(fmt::format(
                              "record batch field magic: expected 2, found {}", view.magic())),
                          DamageKind::kBadMagic);
  }
  if (int64_t(view.length()) + kLogOverhead != int64_t(bytes.size())) {
    return WithDamageKind(Status::Corruption(fmt::format(
                              "record batch field length: expected {} (batch bytes - 12), found {}",
                              bytes.size() - kLogOverhead, view.length())),
                          DamageKind::kBadSize);
  }
  return view;
}

uint32_t RecordBatchView::ComputeCrc() const {
  return Crc32c(p() + batch_layout::kAttributes, size() - batch_layout::kAttributes);
}

Status RecordBatchView::Validate() const {
  if (size() < size_t(kRecordBatchOverhead)) {
    return WithDamageKind(
        Status::Corruption(fmt::format(
            "record batch at base offset {}: field size: expected >= 61 bytes (the minimum batch "
            "size), found {}",
            size() >= 8 ? base_offset() : -1, size())),
        DamageKind::kBadSize);
  }
  uint32_t computed = ComputeCrc();
  if (computed != stored_crc()) {
    return WithDamageKind(
        Status::Corruption(fmt::format("record batch at base offset {}: field crc: expected "
                                       "0x{:08x} (computed), found 0x{:08x}",
                                       base_offset(), computed, stored_crc())),
        DamageKind::kBadCrc);
  }
  return Status::Ok();
}

namespace {

Status RecordError(const RecordBatchView& batch, int32_t index, size_t pos, const char* what) {
  return Status::InvalidRecord(
      fmt::format("record batch at base offset {}: record {} at byte {} of the records region: {}",
                  batch.base_offset(), index, pos, what));
}

// Decodes one record whose Length varint has been read; `body` is exactly its
// Length bytes.
Status DecodeRecordBody(ByteSpan body, const RecordBatchView& batch, int32_t index, size_t pos,
                        Record* rec) {
  RecordBodyView view;
  if (const char* wrong = ParseRecordBody(body, &view)) {
    return RecordError(batch, index, pos, wrong);
  }
  auto owned = [](const std::optional<ByteSpan>& bytes) -> std::optional<std::string> {
    if (!bytes) return std::nullopt;
    return std::string(AsStringView(*bytes));
  };
  rec->attributes = view.attributes;
  rec->key = owned(view.key);
  rec->value = owned(view.value);
  // The headers were checked by ParseRecordBody: these reads cannot fail.
  ByteReader r(view.headers);
  rec->headers.reserve(size_t(view.header_count));
  for (int32_t h = 0; h < view.header_count; ++h) {
    int32_t key_len = 0;
    ByteSpan key;
    std::optional<ByteSpan> value;
    r.ReadVarint(&key_len);
    r.ReadBytes(size_t(key_len), &key);
    ReadNullableBytesView(r, &value);
    rec->headers.push_back(RecordHeader{std::string(AsStringView(key)), owned(value)});
  }
  rec->offset = batch.base_offset() + view.offset_delta;
  rec->timestamp = view.Timestamp(batch);
  rec->sequence = batch.base_sequence() == kNoSequence
                      ? kNoSequence
                      : IncrementSequence(batch.base_sequence(), view.offset_delta);
  return Status::Ok();
}

}  // namespace

Status DecodeRecordsRegion(ByteSpan region, const RecordBatchView& batch, int32_t count,
                           std::vector<Record>* out) {
  ByteReader r(region);
  // recordsCount is not trusted for an allocation: a record takes at least
  // kMinRecordBytes of the region (length, attributes, timestamp delta, offset
  // delta, key and value lengths, header count: one varint byte each), so a
  // small damaged batch claiming millions of records reserves little.
  constexpr size_t kMinRecordBytes = 7;
  out->reserve(out->size() + std::min<size_t>({size_t(std::max(count, 0)), size_t(1) << 16,
                                               region.size() / kMinRecordBytes}));
  for (int32_t i = 0; i < count; ++i) {
    size_t pos = r.position();
    int32_t len;
    ByteSpan body;
    if (!r.ReadVarint(&len)) return RecordError(batch, i, pos, "premature EOF reading length");
    if (len < 0 || !r.ReadBytes(size_t(len), &body)) {
      return RecordError(batch, i, pos, "premature EOF: record length exceeds remaining bytes");
    }
    Record rec;
    DARUMA_RETURN_IF_ERROR(DecodeRecordBody(body, batch, i, pos, &rec));
    out->push_back(std::move(rec));
  }
  if (!r.AtEnd()) {
    return Status::InvalidRecord(
        fmt::format("record batch at base offset {}: {} bytes still remaining after {} records",
                    batch.base_offset(), r.remaining(), count));
  }
  return Status::Ok();
}

Result<std::vector<Record>> RecordBatchView::DecodeRecords(size_t max_decompressed) const {
  if (records_count() < 0) {
    return Status::InvalidRecord(
        fmt::format("record batch at base offset {}: field recordsCount: expected >= 0, found {}",
                    base_offset(), records_count()));
  }
  std::vector<Record> records;
  ByteSpan region = bytes_.subspan(batch_layout::kRecords);
  if (compression() == CompressionType::kNone) {
    DARUMA_RETURN_IF_ERROR(DecodeRecordsRegion(region, *this, records_count(), &records));
    return records;
  }
  if (!CompressionFromId(compression_id())) {
    return Status::Corruption(fmt::format(
        "record batch at base offset {}: field attributes: unknown compression codec id {}",
        base_offset(), compression_id()));
  }
  auto decompressed = Decompress(compression(), region, max_decompressed, magic());
  if (!decompressed.ok()) {
    return decompressed.status().WithContext(
        fmt::format("record batch at base offset {}", base_offset()));
  }
  DARUMA_RETURN_IF_ERROR(DecodeRecordsRegion(*decompressed, *this, records_count(), &records));
  return records;
}

}  // namespace daruma
