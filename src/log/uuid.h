// Uuid: Kafka's 16-byte identifier (topic ids, directory ids), rendered as
// URL-safe Base64 without padding: exactly 22 characters (spec §9.6, §9.8).
//
// Parsing accepts what Java's URL-safe Base64 decoder accepts for 16 bytes: 22
// characters, or 24 ending in "==". The all-zero id is Kafka's ZERO_UUID
// ("no id"); callers decide whether it is allowed.
#pragma once

#include <array>
#include <cstdint>
#include <string>
#include <string_view>

#include "common/status.h"

namespace daruma {

class Uuid {
 public:
  Uuid() = default;
  explicit Uuid(const std::array<uint8_t, 16>& bytes) : bytes_(bytes) {}

  static Uuid Zero() { return Uuid(); }
  // A random (version 4) id that is neither zero, nor Kafka's reserved
  // metadata-topic id (AAAAAAAAAAAAAAAAAAAAAQ), nor rendered with a leading '-'
  // (Kafka's Uuid.randomUuid rules).
  static Uuid Random();
  // kInvalidArgument naming the input when it is not 16 bytes of base64url.
  static Result<Uuid> FromString(std::string_view text);

  // 22-character base64url without padding.
  std::string ToString() const;
  // 32 lowercase hex digits (the form used in -delete/-future/-stray dir names).
  std::string ToHex() const;
  bool IsZero() const { return *this == Uuid(); }
  const std::array<uint8_t, 16>& bytes() const { return bytes_; }

  bool operator==(const Uuid&) const = default;
  auto operator<=>(const Uuid&) const = default;

 private:
  std::array<uint8_t, 16> bytes_{};
};

}  // namespace daruma
