#include "log/uuid.h"

#include <random>

namespace daruma {
namespace {

constexpr char kAlphabet[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_";

int DecodeChar(char c) {
  if (c >= 'A' && c <= 'Z') return c - 'A';
  if (c >= 'a' && c <= 'z') return c - 'a' + 26;
  if (c >= '0' && c <= '9') return c - '0' + 52;
  if (c == '-') return 62;
  if (c == '_') return 63;
  return -1;
}

}  // namespace

Uuid Uuid::Random() {
  static thread_local std::mt19937_64 rng{std::random_device{}()};
  const Uuid metadata_topic_id = *FromString("AAAAAAAAAAAAAAAAAAAAAQ");
  for (;;) {
    std::array<uint8_t, 16> b;
    for (auto& byte : b) byte = uint8_t(rng());
    b[6] = uint8_t((b[6] & 0x0f) | 0x40);  // version 4
    b[8] = uint8_t((b[8] & 0x3f) | 0x80);  // IETF variant
    Uuid id(b);
    if (!id.IsZero() && id != metadata_topic_id && id.ToString()[0] != '-') return id;
  }
}

std::string Uuid::ToString() const {
  std::string out;
  uint32_t acc = 0;
  int bits = 0;
  for (uint8_t byte : bytes_) {
    acc = (acc << 8) | byte;
    bits += 8;
    while (bits >= 6) {
      bits -= 6;
      out.push_back(kAlphabet[(acc >> bits) & 0x3f]);
    }
  }
  if (bits > 0) out.push_back(kAlphabet[(acc << (6 - bits)) & 0x3f]);
  return out;
}

std::string Uuid::ToHex() const {
  static constexpr char kHex[] = "0123456789abcdef";
  std::string out;
  for (uint8_t byte : bytes_) {
    out.push_back(kHex[byte >> 4]);
    out.push_back(kHex[byte & 0xf]);
  }
  return out;
}

Result<Uuid> Uuid::FromString(std::string_view text) {
  std::string_view body = text;
  if (body.size() == 24 && body.substr(22) == "==") body = body.substr(0, 22);
  auto bad = [&](const std::string& why) {
    return Status::InvalidArgument("invalid uuid '" + std::string(text) + "': " + why);
  };
  if (body.size() != 22) {
    return bad("expected 22 base64url characters, found " + std::to_string(text.size()));
  }
  std::array<uint8_t, 16> bytes{};
  uint32_t acc = 0;
  int bits = 0;
  size_t n = 0;
  for (size_t i = 0; i < body.size(); ++i) {
    const int v = DecodeChar(body[i]);
    if (v < 0) return bad("character " + std::to_string(i) + " is not base64url");
    acc = (acc << 6) | uint32_t(v);
    bits += 6;
    if (bits >= 8) {
      bits -= 8;
      bytes[n++] = uint8_t(acc >> bits);
    }
  }
  return Uuid(bytes);
}

}  // namespace daruma
