#include "common/bytes.h"

#include "common/varint.h"

namespace daruma {

bool ByteReader::ReadInt8(int8_t* v) {
  if (!Need(1)) return false;
  *v = int8_t(data_[pos_]);
  pos_ += 1;
  return true;
}
bool ByteReader::ReadInt16(int16_t* v) {
  if (!Need(2)) return false;
  *v = int16_t(LoadBe16(data_.data() + pos_));
  pos_ += 2;
  return true;
}
bool ByteReader::ReadInt32(int32_t* v) {
  if (!Need(4)) return false;
  *v = int32_t(LoadBe32(data_.data() + pos_));
  pos_ += 4;
  return true;
}
bool ByteReader::ReadUint32(uint32_t* v) {
  if (!Need(4)) return false;
  *v = LoadBe32(data_.data() + pos_);
  pos_ += 4;
  return true;
}
bool ByteReader::ReadInt64(int64_t* v) {
  if (!Need(8)) return false;
  *v = int64_t(LoadBe64(data_.data() + pos_));
  pos_ += 8;
  return true;
}
bool ByteReader::ReadUnsignedVarint(uint32_t* v) {
  if (!ok_) return false;
  size_t n = DecodeUnsignedVarint32(data_.data() + pos_, data_.data() + data_.size(), v);
  if (n == 0) {
    ok_ = false;
    return false;
  }
  pos_ += n;
  return true;
}
bool ByteReader::ReadVarint(int32_t* v) {
  uint32_t u;
  if (!ReadUnsignedVarint(&u)) return false;
  *v = ZigZagDecode32(u);
  return true;
}
bool ByteReader::ReadVarlong(int64_t* v) {
  if (!ok_) return false;
  uint64_t u;
  size_t n = DecodeUnsignedVarint64(data_.data() + pos_, data_.data() + data_.size(), &u);
  if (n == 0) {
    ok_ = false;
    return false;
  }
  pos_ += n;
  *v = ZigZagDecode64(u);
  return true;
}
bool ByteReader::ReadBytes(size_t n, ByteSpan* out) {
  if (!Need(n)) return false;
  *out = data_.subspan(pos_, n);
  pos_ += n;
  return true;
}
bool ByteReader::Skip(size_t n) {
  if (!Need(n)) return false;
  pos_ += n;
  return true;
}

void ByteWriter::WriteInt16(int16_t v) {
  uint8_t b[2];
  StoreBe16(b, uint16_t(v));
  out_->insert(out_->end(), b, b + 2);
}
void ByteWriter::WriteInt32(int32_t v) {
  uint8_t b[4];
  StoreBe32(b, uint32_t(v));
  out_->insert(out_->end(), b, b + 4);
}
void ByteWriter::WriteInt64(int64_t v) {
  uint8_t b[8];
  StoreBe64(b, uint64_t(v));
  out_->insert(out_->end(), b, b + 8);
}
void ByteWriter::WriteUnsignedVarint(uint32_t v) {
  uint8_t b[5];
  size_t n = EncodeUnsignedVarint32(v, b);
  out_->insert(out_->end(), b, b + n);
}
void ByteWriter::WriteVarint(int32_t v) {
  WriteUnsignedVarint(ZigZagEncode32(v));
}
void ByteWriter::WriteVarlong(int64_t v) {
  uint8_t b[10];
  size_t n = EncodeUnsignedVarint64(ZigZagEncode64(v), b);
  out_->insert(out_->end(), b, b + n);
}

}  // namespace daruma
