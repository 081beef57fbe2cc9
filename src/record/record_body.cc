#include "record/record_body.h"

#include "record/nullable_bytes.h"

namespace daruma {

const char* ParseRecordBody(ByteSpan body, RecordBodyView* out) {
  ByteReader r(body);
  if (!r.ReadInt8(&out->attributes) || !r.ReadVarlong(&out->timestamp_delta) ||
      !r.ReadVarint(&out->offset_delta)) {
    return "truncated attributes/timestamp/offset delta";
  }
  if (!ReadNullableBytesView(r, &out->key)) return "bad key";
  if (!ReadNullableBytesView(r, &out->value)) return "bad value";
  if (!r.ReadVarint(&out->header_count) || out->header_count < 0 ||
      size_t(out->header_count) > r.remaining()) {
    return "invalid header count";
  }
  const size_t headers_start = r.position();
  for (int32_t h = 0; h < out->header_count; ++h) {
    int32_t key_len;
    ByteSpan key;
    if (!r.ReadVarint(&key_len) || key_len < 0 || !r.ReadBytes(size_t(key_len), &key)) {
      return "invalid header key";
    }
    std::optional<ByteSpan> value;
    if (!ReadNullableBytesView(r, &value)) return "invalid header value";
  }
  if (!r.AtEnd()) return "record length does not match its fields";
  out->headers = body.subspan(headers_start);
  return nullptr;
}

std::optional<RecordBodyView> OnlyRecordInPlace(const RecordBatchView& batch) {
  if (batch.compression() != CompressionType::kNone || batch.records_count() != 1) {
    return std::nullopt;
  }
  ByteReader region(batch.bytes().subspan(batch_layout::kRecords));
  int32_t len;
  ByteSpan body;
  if (!region.ReadVarint(&len) || len < 0 || !region.ReadBytes(size_t(len), &body) ||
      !region.AtEnd()) {
    return std::nullopt;
  }
  RecordBodyView view;
  if (ParseRecordBody(body, &view) != nullptr) return std::nullopt;
  return view;
}

}  // namespace daruma
