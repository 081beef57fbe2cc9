// Kafka's nullable bytes inside a v2 record (key, value, header value): a
// varint length, negative for null, then that many bytes.
#pragma once

#include <optional>

#include "common/bytes.h"

namespace daruma {

// Reads one as a view into the reader's data (nullopt for null); false if
// the field is cut short.
inline bool ReadNullableBytesView(ByteReader& r, std::optional<ByteSpan>* out) {
  int32_t len;
  if (!r.ReadVarint(&len)) return false;
  if (len < 0) {
    out->reset();
    return true;
  }
  ByteSpan bytes;
  if (!r.ReadBytes(size_t(len), &bytes)) return false;
  *out = bytes;
  return true;
}

}  // namespace daruma
