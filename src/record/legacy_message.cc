#include "record/legacy_message.h"

#include <fmt/format.h>

#include "common/crc32.h"
#include "common/damage_kind.h"

namespace daruma {

namespace {

using legacy_layout::kAttributes;
using legacy_layout::kCrc;
using legacy_layout::kKeyLengthV0;
using legacy_layout::kKeyLengthV1;
using legacy_layout::kMagic;
using legacy_layout::kMessageSize;
using legacy_layout::kOffset;
using legacy_layout::kTimestampV1;

// Byte position of the keyLength field for a magic (0 or 1).
size_t KeyLengthPos(int8_t magic) {
  return magic == 0 ? kKeyLengthV0 : kKeyLengthV1;
}

std::string Describe(const LegacyMessageView& m) {
  return fmt::format("legacy message at offset {} (magic {})", m.offset(), m.magic());
}

// Checks one length-prefixed field (keyLength or valueLength) at `pos`; on
// success stores the position after the field's data in *end. `reserve` is the
// number of bytes that must remain after the data (4 for the valueLength that
// follows a key).
Status CheckLengthField(const LegacyMessageView& m, const char* name, size_t pos, size_t reserve,
                        size_t* end) {
  ByteSpan b = m.bytes();
  if (pos + 4 + reserve > b.size()) {
    return Status::Corruption(fmt::format("{}: field {} at byte {}: expected 4 bytes, found {}",
                                          Describe(m), name, pos,
                                          b.size() > pos ? b.size() - pos : 0));
  }
  int32_t len = int32_t(LoadBe32(b.data() + pos));
  size_t available = b.size() - pos - 4 - reserve;
  if (len < -1 || (len > 0 && size_t(len) > available)) {
    return Status::Corruption(fmt::format(
        "{}: field {} at byte {}: expected -1..{} (bytes left in the message), found {}",
        Describe(m), name, pos, available, len));
  }
  *end = pos + 4 + (len > 0 ? size_t(len) : 0);
  return Status::Ok();
}

std::optional<ByteSpan> LengthPrefixed(ByteSpan b, size_t pos) {
  int32_t len = int32_t(LoadBe32(b.data() + pos));
  if (len < 0) return std::nullopt;
  return b.subspan(pos + 4, size_t(len));
}

std::optional<std::string> ToString(const std::optional<ByteSpan>& s) {
  if (!s) return std::nullopt;
  return std::string(AsStringView(*s));
}

int32_t SizeOf(const std::optional<ByteSpan>& s) {
  return s ? int32_t(s->size()) : -1;
}

// The message as a deep record with its own offset, timestamp and type.
LegacyDeepRecord ToDeepRecord(const LegacyMessageView& m, int64_t offset, int64_t timestamp,
                              TimestampType type, int8_t attributes) {
  LegacyDeepRecord d;
  d.record.offset = offset;
  d.record.timestamp = timestamp;
  d.record.sequence = kNoSequence;
  d.record.attributes = attributes;
  std::optional<ByteSpan> key = m.key();
  std::optional<ByteSpan> value = m.value();
  d.record.key = ToString(key);
  d.record.value = ToString(value);
  d.magic = m.magic();
  d.timestamp_type = type;
  d.crc = m.stored_crc();
  d.crc_valid = m.crc_valid();
  d.key_size = SizeOf(key);
  d.value_size = SizeOf(value);
  return d;
}

// Splits a decompressed wrapper value into inner messages (spec §3.2): each is
// a complete entry (offset, size, uncompressed message). The stream must be
// consumed exactly.
Result<std::vector<LegacyMessageView>> SplitInner(const LegacyMessageView& wrapper, ByteSpan data) {
  std::vector<LegacyMessageView> inner;
  size_t pos = 0;
  while (pos < data.size()) {
    std::string where =
        fmt::format("{}: inner entry {} at byte {} of the decompressed value ({} bytes)",
                    Describe(wrapper), inner.size(), pos, data.size());
    size_t left = data.size() - pos;
    if (left < size_t(kLogOverhead)) {
      return Status::Corruption(fmt::format(
          "{}: expected at least 12 bytes (offset and messageSize), found {}", where, left));
    }
    int32_t size = int32_t(LoadBe32(data.data() + pos + kMessageSize));
    if (size < kLegacyMinMessageSizeV0 || size_t(size) > left - kLogOverhead) {
      return Status::Corruption(fmt::format("{}: field messageSize: expected {}..{}, found {}",
                                            where, kLegacyMinMessageSizeV0, left - kLogOverhead,
                                            size));
    }
    auto parsed = LegacyMessageView::Parse(data.subspan(pos, kLogOverhead + size_t(size)));
    if (!parsed.ok()) return parsed.status().WithContext(where);
    if (parsed->compression_id() != 0) {
      return Status::InvalidRecord(fmt::format(
          "{}: field attributes: expected compression codec none (inner messages must not be "
          "compressed), found codec id {}",
          where, parsed->compression_id()));
    }
    inner.push_back(*parsed);
    pos += kLogOverhead + size_t(size);
  }
  if (inner.empty()) {
    return Status::InvalidRecord(fmt::format(
        "{}: compressed wrapper holds zero inner messages (decompressed value is empty)",
        Describe(wrapper)));
  }
  return inner;
}

// Absolute offset of inner message 0 minus its Offset field: 0 for v0 (inner
// offsets are absolute) and for a v1 wrapper at offset 0 (old clients), else
// wrapperOffset - lastInnerRelativeOffset (spec §3.2).
Result<int64_t> InnerOffsetBase(const LegacyMessageView& wrapper,
                                const std::vector<LegacyMessageView>& inner) {
  if (wrapper.magic() == 0 || wrapper.offset() == 0) return int64_t{0};
  int64_t last_relative = inner.back().offset();
  if (wrapper.offset() < last_relative) {
    return Status::InvalidRecord(fmt::format(
        "{}: field offset at byte 0: expected a wrapper offset >= the last inner relative offset "
        "{} (or 0), found {}",
        Describe(wrapper), last_relative, wrapper.offset()));
  }
  return wrapper.offset() - last_relative;
}

Status CheckWrapperCodec(const LegacyMessageView& wrapper) {
  int id = wrapper.compression_id();
  if (id == int(CompressionType::kZstd) || !CompressionFromId(id)) {
    return Status::InvalidRecord(fmt::format(
        "{}: field attributes at byte {}: expected compression codec gzip, snappy or lz4 for a "
        "magic {} wrapper, found {}",
        Describe(wrapper), kAttributes, wrapper.magic(),
        id == int(CompressionType::kZstd) ? std::string("zstd (4)")
                                          : fmt::format("unknown codec id {}", id)));
  }
  if (!wrapper.value()) {
    return Status::InvalidRecord(fmt::format(
        "{}: field valueLength: expected the compressed inner messages, found null (-1)",
        Describe(wrapper)));
  }
  return Status::Ok();
}

Result<std::vector<LegacyDeepRecord>> DecodeWrapper(const LegacyMessageView& wrapper,
                                                    size_t max_decompressed) {
  DARUMA_RETURN_IF_ERROR(CheckWrapperCodec(wrapper));
  CompressionType codec = CompressionType(wrapper.compression_id());
  auto decompressed = Decompress(codec, *wrapper.value(), max_decompressed, wrapper.magic());
  if (!decompressed.ok()) {
    return decompressed.status().WithContext(
        fmt::format("{}: decompressing the {} value", Describe(wrapper), CompressionName(codec)));
  }
  const Bytes& data = *decompressed;
  DARUMA_ASSIGN_OR_RETURN(std::vector<LegacyMessageView> inner, SplitInner(wrapper, data));
  DARUMA_ASSIGN_OR_RETURN(int64_t base, InnerOffsetBase(wrapper, inner));

  bool log_append_time =
      wrapper.magic() > 0 && wrapper.timestamp_type() == TimestampType::kLogAppendTime;
  std::vector<LegacyDeepRecord> out;
  out.reserve(inner.size());
  for (const LegacyMessageView& m : inner) {
    int64_t timestamp = log_append_time ? wrapper.timestamp() : m.timestamp();
    TimestampType type = log_append_time ? TimestampType::kLogAppendTime : m.timestamp_type();
    // The wrapper's timestamp type governs the inner messages (spec §3.2).
    int8_t attributes = m.attributes();
    if (wrapper.magic() > 0) {
      attributes = int8_t((uint8_t(attributes) & ~legacy_attributes::kLogAppendTime) |
                          (uint8_t(wrapper.attributes()) & legacy_attributes::kLogAppendTime));
    }
    out.push_back(ToDeepRecord(m, base + m.offset(), timestamp, type, attributes));
  }
  return out;
}

}  // namespace

Result<LegacyMessageView> LegacyMessageView::Parse(ByteSpan bytes) {
  if (bytes.size() < size_t(kLogOverhead)) {
    return Status::Corruption(
        fmt::format("legacy entry: expected at least 12 bytes (offset and messageSize), found {}",
                    bytes.size()));
  }
  LegacyMessageView m(bytes);
  int32_t size = m.message_size();
  if (size < kLegacyMinMessageSizeV0) {
    return Status::Corruption(
        fmt::format("legacy entry at offset {}: field messageSize at byte {}: expected >= {}, "
                    "found {}",
                    m.offset(), kMessageSize, kLegacyMinMessageSizeV0, size));
  }
  if (int64_t(size) + kLogOverhead != int64_t(bytes.size())) {
    return Status::Corruption(
        fmt::format("legacy entry at offset {}: field messageSize at byte {}: expected {} "
                    "(entry bytes - 12), found {}",
                    m.offset(), kMessageSize, bytes.size() - kLogOverhead, size));
  }
  if (m.magic() != 0 && m.magic() != 1) {
    return Status::Corruption(
        fmt::format("legacy entry at offset {}: field magic at byte {}: expected 0 or 1, found {}",
                    m.offset(), kMagic, m.magic()));
  }
  if (m.magic() == 1 && size < kLegacyMinMessageSizeV1) {
    return Status::Corruption(
        fmt::format("{}: field messageSize at byte {}: expected >= {}, found {}", Describe(m),
                    kMessageSize, kLegacyMinMessageSizeV1, size));
  }
  size_t after_key = 0;
  size_t after_value = 0;
  DARUMA_RETURN_IF_ERROR(CheckLengthField(m, "keyLength", KeyLengthPos(m.magic()), 4, &after_key));
  DARUMA_RETURN_IF_ERROR(CheckLengthField(m, "valueLength", after_key, 0, &after_value));
  return m;
}

int64_t LegacyMessageView::offset() const {
  return int64_t(LoadBe64(bytes_.data() + kOffset));
}

int32_t LegacyMessageView::message_size() const {
  return int32_t(LoadBe32(bytes_.data() + kMessageSize));
}

uint32_t LegacyMessageView::stored_crc() const {
  return LoadBe32(bytes_.data() + kCrc);
}

uint32_t LegacyMessageView::ComputeCrc() const {
  return Crc32(bytes_.data() + kMagic, bytes_.size() - kMagic);
}

int8_t LegacyMessageView::magic() const {
  return int8_t(bytes_[kMagic]);
}

int8_t LegacyMessageView::attributes() const {
  return int8_t(bytes_[kAttributes]);
}

TimestampType LegacyMessageView::timestamp_type() const {
  if (magic() == 0) return TimestampType::kNoTimestamp;
  return (uint8_t(attributes()) & legacy_attributes::kLogAppendTime) ? TimestampType::kLogAppendTime
                                                                     : TimestampType::kCreateTime;
}

int64_t LegacyMessageView::timestamp() const {
  if (magic() == 0) return kNoTimestamp;
  return int64_t(LoadBe64(bytes_.data() + kTimestampV1));
}

std::optional<ByteSpan> LegacyMessageView::key() const {
  return LengthPrefixed(bytes_, KeyLengthPos(magic()));
}

std::optional<ByteSpan> LegacyMessageView::value() const {
  size_t key_pos = KeyLengthPos(magic());
  int32_t key_len = int32_t(LoadBe32(bytes_.data() + key_pos));
  return LengthPrefixed(bytes_, key_pos + 4 + (key_len > 0 ? size_t(key_len) : 0));
}

Status LegacyMessageView::Validate() const {
  if (bytes_.size() < size_t(kLogOverhead)) {
    return WithDamageKind(
        Status::Corruption(fmt::format(
            "legacy entry: expected at least 12 bytes (offset and messageSize), found {}",
            bytes_.size())),
        DamageKind::kBadSize);
  }
  int32_t size = message_size();
  if (size < kLegacyMinMessageSizeV0) {
    return WithDamageKind(
        Status::Corruption(
            fmt::format("legacy entry at offset {}: field messageSize at byte {}: expected >= {}, "
                        "found {}",
                        offset(), kMessageSize, kLegacyMinMessageSizeV0, size)),
        DamageKind::kBadSize);
  }
  if (int64_t(size) + kLogOverhead != int64_t(bytes_.size())) {
    return WithDamageKind(
        Status::Corruption(
            fmt::format("legacy entry at offset {}: field messageSize at byte {}: expected {} "
                        "(entry bytes - 12), found {}",
                        offset(), kMessageSize, bytes_.size() - kLogOverhead, size)),
        DamageKind::kBadSize);
  }
  uint32_t computed = ComputeCrc();
  if (computed != stored_crc()) {
    return WithDamageKind(
        Status::Corruption(
            fmt::format("{}: field crc at byte {}: expected 0x{:08x} (computed), found 0x{:08x}",
                        Describe(*this), kCrc, computed, stored_crc())),
        DamageKind::kBadCrc);
  }
  return Status::Ok();
}

Result<std::vector<LegacyDeepRecord>> LegacyMessageView::DecodeDeep(size_t max_decompressed) const {
  if (compression_id() != 0) return DecodeWrapper(*this, max_decompressed);
  std::vector<LegacyDeepRecord> out;
  out.push_back(ToDeepRecord(*this, offset(), timestamp(), timestamp_type(), attributes()));
  return out;
}

Result<std::vector<Record>> LegacyMessageView::DecodeRecords(size_t max_decompressed) const {
  DARUMA_ASSIGN_OR_RETURN(std::vector<LegacyDeepRecord> deep, DecodeDeep(max_decompressed));
  std::vector<Record> out;
  out.reserve(deep.size());
  for (LegacyDeepRecord& d : deep) out.push_back(std::move(d.record));
  return out;
}

Bytes BuildLegacyMessage(int8_t magic, int64_t offset, int64_t timestamp,
                         const std::optional<std::string>& key,
                         const std::optional<std::string>& value, int8_t attributes) {
  Bytes out;
  ByteWriter w(&out);
  w.WriteInt64(offset);
  w.WriteInt32(0);   // messageSize, patched below
  w.WriteUint32(0);  // crc, patched below
  w.WriteInt8(magic);
  w.WriteInt8(attributes);
  if (magic > 0) w.WriteInt64(timestamp);
  for (const std::optional<std::string>* field : {&key, &value}) {
    if (*field) {
      w.WriteInt32(int32_t((*field)->size()));
      w.WriteBytes(AsBytes(**field));
    } else {
      w.WriteInt32(-1);
    }
  }
  StoreBe32(out.data() + kMessageSize, uint32_t(out.size() - kLogOverhead));
  StoreBe32(out.data() + kCrc, Crc32(out.data() + kMagic, out.size() - kMagic));
  return out;
}

Result<Bytes> BuildLegacyWrapper(int8_t magic, int64_t offset, int64_t timestamp,
                                 CompressionType codec, ByteSpan inner_entries,
                                 bool log_append_time) {
  DARUMA_ASSIGN_OR_RETURN(Bytes compressed, Compress(codec, inner_entries, magic));
  uint8_t attributes = uint8_t(codec);
  if (log_append_time) attributes |= legacy_attributes::kLogAppendTime;
  return BuildLegacyMessage(magic, offset, timestamp, std::nullopt,
                            std::string(AsStringView(compressed)), int8_t(attributes));
}

}  // namespace daruma
