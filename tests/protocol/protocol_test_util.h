// Helpers for the protocol codec tests: hex byte literals and round trips.
#pragma once

#include <gtest/gtest.h>

#include <cstdint>
#include <string>
#include <string_view>

#include "common/bytes.h"
#include "protocol/protocol_reader.h"
#include "protocol/protocol_writer.h"

namespace daruma::testing {

// "00 12 ff" -> {0x00, 0x12, 0xff}; whitespace is ignored.
inline Bytes Hex(std::string_view text) {
  Bytes out;
  int nibble = -1;
  for (char c : text) {
    int v;
    if (c >= '0' && c <= '9') {
      v = c - '0';
    } else if (c >= 'a' && c <= 'f') {
      v = c - 'a' + 10;
    } else if (c >= 'A' && c <= 'F') {
      v = c - 'A' + 10;
    } else {
      continue;
    }
    if (nibble < 0) {
      nibble = v;
    } else {
      out.push_back(uint8_t(nibble << 4 | v));
      nibble = -1;
    }
  }
  return out;
}

// Hex of a string's bytes ("ab" -> "61 62").
inline std::string HexOf(std::string_view s) {
  static const char* kDigits = "0123456789abcdef";
  std::string out;
  for (unsigned char c : s) {
    if (!out.empty()) out += ' ';
    out += kDigits[c >> 4];
    out += kDigits[c & 15];
  }
  return out;
}

template <typename T, typename Encode>
Bytes EncodeToBytes(const T& value, int16_t version, Encode encode) {
  ProtocolWriter w;
  encode(value, version, w);
  return w.Release();
}

// Encodes `value` at `version`, decodes it back (must consume every byte and
// compare equal), and re-encodes the decoded value to the same bytes.
template <typename T, typename Encode, typename Decode>
void ExpectRoundTrip(const T& value, int16_t version, Encode encode, Decode decode) {
  Bytes bytes = EncodeToBytes(value, version, encode);
  ProtocolReader reader(bytes);
  auto decoded = decode(reader, version);
  ASSERT_TRUE(decoded.ok()) << "v" << version << ": " << decoded.status().ToString();
  EXPECT_TRUE(reader.AtEnd()) << "v" << version << ": " << reader.remaining() << " bytes left";
  EXPECT_TRUE(*decoded == value) << "v" << version << " decoded value differs";
  EXPECT_EQ(EncodeToBytes(*decoded, version, encode), bytes) << "v" << version;
}

}  // namespace daruma::testing
