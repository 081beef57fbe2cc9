#include "protocol/protocol_writer.h"

#include <cassert>
#include <limits>

#include "common/varint.h"

namespace daruma {

void ProtocolWriter::SpliceFile(FileSlice slice) {
  if (slice.length == 0) return;
  splices_.push_back({out_.size(), std::move(slice)});
}

Bytes ProtocolWriter::Release() {
  assert(splices_.empty());
  return std::move(out_);
}

ResponseFrame ProtocolWriter::ReleaseFrame() {
  ResponseFrame frame(std::move(out_));
  frame.splices = std::move(splices_);
  splices_.clear();
  return frame;
}

void ProtocolWriter::WriteInt16(int16_t v) {
  uint8_t b[2];
  StoreBe16(b, uint16_t(v));
  out_.insert(out_.end(), b, b + 2);
}

void ProtocolWriter::WriteInt32(int32_t v) {
  uint8_t b[4];
  StoreBe32(b, uint32_t(v));
  out_.insert(out_.end(), b, b + 4);
}

void ProtocolWriter::WriteInt64(int64_t v) {
  uint8_t b[8];
  StoreBe64(b, uint64_t(v));
  out_.insert(out_.end(), b, b + 8);
}

void ProtocolWriter::WriteUnsignedVarint(uint32_t v) {
  uint8_t b[5];
  size_t n = EncodeUnsignedVarint32(v, b);
  out_.insert(out_.end(), b, b + n);
}

void ProtocolWriter::WriteVarint(int32_t v) {
  WriteUnsignedVarint(ZigZagEncode32(v));
}

void ProtocolWriter::WriteVarlong(int64_t v) {
  uint8_t b[10];
  size_t n = EncodeUnsignedVarint64(ZigZagEncode64(v), b);
  out_.insert(out_.end(), b, b + n);
}

void ProtocolWriter::WriteString(std::string_view s, Encoding encoding) {
  if (encoding == Encoding::kCompact) {
    assert(s.size() < std::numeric_limits<uint32_t>::max());
    WriteUnsignedVarint(uint32_t(s.size() + 1));
  } else {
    assert(s.size() <= size_t(std::numeric_limits<int16_t>::max()));
    WriteInt16(int16_t(s.size()));
  }
  WriteRaw(AsBytes(s));
}

void ProtocolWriter::WriteNullableString(const std::optional<std::string>& s, Encoding encoding) {
  if (s) return WriteString(*s, encoding);
  if (encoding == Encoding::kCompact) return WriteUnsignedVarint(0);
  WriteInt16(-1);
}

void ProtocolWriter::WriteBytes(ByteSpan b, Encoding encoding) {
  WriteArrayCount(b.size(), encoding);  // same length prefix as an array
  WriteRaw(b);
}

void ProtocolWriter::WriteNullableBytes(std::optional<ByteSpan> b, Encoding encoding) {
  if (b) return WriteBytes(*b, encoding);
  WriteNullArray(encoding);
}

void ProtocolWriter::WriteArrayCount(size_t count, Encoding encoding) {
  if (encoding == Encoding::kCompact) {
    assert(count < std::numeric_limits<uint32_t>::max());
    return WriteUnsignedVarint(uint32_t(count + 1));
  }
  assert(count <= size_t(std::numeric_limits<int32_t>::max()));
  WriteInt32(int32_t(count));
}

void ProtocolWriter::WriteNullArray(Encoding encoding) {
  if (encoding == Encoding::kCompact) return WriteUnsignedVarint(0);
  WriteInt32(-1);
}

void ProtocolWriter::WriteInt32Array(const std::vector<int32_t>& items, Encoding encoding) {
  WriteArrayCount(items.size(), encoding);
  for (int32_t v : items) WriteInt32(v);
}

void ProtocolWriter::WriteStringArray(const std::vector<std::string>& items, Encoding encoding) {
  WriteArrayCount(items.size(), encoding);
  for (const std::string& s : items) WriteString(s, encoding);
}

void ProtocolWriter::WriteTaggedFields(std::span<const TaggedField> fields) {
  WriteUnsignedVarint(uint32_t(fields.size()));
  for (const TaggedField& f : fields) {
    WriteUnsignedVarint(f.tag);
    WriteUnsignedVarint(uint32_t(f.data.size()));
    WriteRaw(f.data);
  }
}

}  // namespace daruma
