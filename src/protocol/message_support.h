// The field-level helpers the generated message code calls (generate.py):
// one overload per (wire type, C++ member type), so the generator only decides
// the field's path, encoding and whether the version makes it nullable.
//
// C++ member types:
// - a field nullable in SOME version is std::optional<T>; in a version where
//   it is not nullable, reading never yields nullopt and writing nullopt
//   writes the empty value (Kafka's Metadata v0 says "all topics" that way).
// - `records` in a request are views into the request frame (zero copy; the
//   frame must outlive the struct). In a response they are owned bytes plus
//   file ranges spliced in after them (response_frame.h, sendfile).
// - bytes are owned; tagged fields the schema does not know are owned too, so
//   a decoded struct never points into a frame except through records views.
#pragma once

#include <algorithm>
#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "common/bytes.h"
#include "protocol/protocol_reader.h"
#include "protocol/protocol_writer.h"
#include "protocol/response_frame.h"

namespace daruma {

// A tagged field kept as read (or built to be written): tag and payload.
struct UnknownTaggedField {
  uint32_t tag = 0;
  Bytes data;
  bool operator==(const UnknownTaggedField&) const = default;
};

inline Bytes ToBytes(ByteSpan b) {
  return Bytes(b.begin(), b.end());
}

// ----------------------------------------------------------------- reading

inline void ReadStringField(ProtocolReader& r, std::string_view field, Encoding e, bool,
                            std::string& out) {
  out = r.ReadString(field, e);
}
inline void ReadStringField(ProtocolReader& r, std::string_view field, Encoding e, bool nullable,
                            std::optional<std::string>& out) {
  if (nullable) {
    out = r.ReadNullableString(field, e);
  } else {
    out = r.ReadString(field, e);
  }
}

inline void ReadOwnedBytesField(ProtocolReader& r, std::string_view field, Encoding e, bool,
                                Bytes& out) {
  out = ToBytes(r.ReadBytes(field, e));
}
inline void ReadOwnedBytesField(ProtocolReader& r, std::string_view field, Encoding e,
                                bool nullable, std::optional<Bytes>& out) {
  if (!nullable) {
    out = ToBytes(r.ReadBytes(field, e));
    return;
  }
  std::optional<ByteSpan> b = r.ReadNullableBytes(field, e);
  if (b) {
    out = ToBytes(*b);
  } else {
    out = std::nullopt;
  }
}

inline void ReadBytesViewField(ProtocolReader& r, std::string_view field, Encoding e, bool,
                               ByteSpan& out) {
  out = r.ReadBytes(field, e);
}
inline void ReadBytesViewField(ProtocolReader& r, std::string_view field, Encoding e, bool nullable,
                               std::optional<ByteSpan>& out) {
  if (nullable) {
    out = r.ReadNullableBytes(field, e);
  } else {
    out = r.ReadBytes(field, e);
  }
}

template <typename T, typename ReadOne>
void ReadArrayField(ProtocolReader& r, std::string_view field, Encoding e, bool,
                    std::vector<T>& out, ReadOne read_one) {
  out = r.ReadArray<T>(field, e, read_one);
}
template <typename T, typename ReadOne>
void ReadArrayField(ProtocolReader& r, std::string_view field, Encoding e, bool nullable,
                    std::optional<std::vector<T>>& out, ReadOne read_one) {
  if (nullable) {
    out = r.ReadNullableArray<T>(field, e, read_one);
  } else {
    out = r.ReadArray<T>(field, e, read_one);
  }
}

// ----------------------------------------------------------------- writing

inline void WriteStringField(ProtocolWriter& w, Encoding e, bool, const std::string& v) {
  w.WriteString(v, e);
}
inline void WriteStringField(ProtocolWriter& w, Encoding e, bool nullable,
                             const std::optional<std::string>& v) {
  if (nullable) return w.WriteNullableString(v, e);
  w.WriteString(v ? std::string_view(*v) : std::string_view(), e);
}

inline void WriteBytesField(ProtocolWriter& w, Encoding e, bool, ByteSpan v) {
  w.WriteBytes(v, e);
}
template <typename B>
void WriteBytesField(ProtocolWriter& w, Encoding e, bool nullable, const std::optional<B>& v) {
  if (!v) {
    if (nullable) return w.WriteNullableBytes(std::nullopt, e);
    return w.WriteBytes(ByteSpan(), e);
  }
  w.WriteBytes(ByteSpan(*v), e);
}

// A response's record set: `records` then `slices`, which the writer splices
// in unread (a frame with splices is taken with ReleaseFrame).
inline void WriteRecordsField(ProtocolWriter& w, Encoding e, bool nullable,
                              const std::optional<Bytes>& records,
                              const std::vector<FileSlice>& slices) {
  if (slices.empty()) return WriteBytesField(w, e, nullable, records);
  uint64_t total = records ? records->size() : 0;
  for (const FileSlice& s : slices) total += s.length;
  w.WriteArrayCount(size_t(total), e);  // same length prefix as bytes
  if (records) w.WriteRaw(*records);
  for (const FileSlice& s : slices) w.SpliceFile(s);
}

template <typename T, typename WriteOne>
void WriteArrayField(ProtocolWriter& w, Encoding e, bool, const std::vector<T>& v,
                     WriteOne write_one) {
  w.WriteArray(v, e, write_one);
}
template <typename T, typename WriteOne>
void WriteArrayField(ProtocolWriter& w, Encoding e, bool nullable,
                     const std::optional<std::vector<T>>& v, WriteOne write_one) {
  if (!v) {
    if (nullable) return w.WriteNullArray(e);
    return w.WriteArrayCount(0, e);
  }
  w.WriteArray(*v, e, write_one);
}

// The tagged-field section: `known` (built by the generated code in ascending
// tag order, only fields that differ from their defaults) merged into
// `unknown`. Unknown fields keep the order they were read in, so decoding
// what was encoded gives back the same struct even when a peer broke the
// ascending-tag rule; from our own structs the section is ascending.
inline void WriteTaggedSection(ProtocolWriter& w, const std::vector<UnknownTaggedField>& known,
                               const std::vector<UnknownTaggedField>& unknown) {
  w.WriteUnsignedVarint(uint32_t(known.size() + unknown.size()));
  auto write_one = [&w](const UnknownTaggedField& f) {
    w.WriteUnsignedVarint(f.tag);
    w.WriteUnsignedVarint(uint32_t(f.data.size()));
    w.WriteRaw(f.data);
  };
  size_t k = 0;
  for (const UnknownTaggedField& u : unknown) {
    while (k < known.size() && known[k].tag < u.tag) write_one(known[k++]);
    write_one(u);
  }
  while (k < known.size()) write_one(known[k++]);
}

// ----------------------------------------------------------------- equality

template <typename T>
bool FieldEquals(const T& a, const T& b) {
  return a == b;
}
inline bool FieldEquals(const ByteSpan& a, const ByteSpan& b) {
  return std::ranges::equal(a, b);
}
inline bool FieldEquals(const std::optional<ByteSpan>& a, const std::optional<ByteSpan>& b) {
  if (a.has_value() != b.has_value()) return false;
  return !a || std::ranges::equal(*a, *b);
}

}  // namespace daruma
