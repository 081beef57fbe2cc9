// ListenerAddress: a host and port to bind or advertise, parsed from Kafka's
// `listeners` / `advertised.listeners` syntax or a plain `host:port`.
//
//   "PLAINTEXT://127.0.0.1:9092"   -> {127.0.0.1, 9092}
//   "PLAINTEXT://:9092"            -> {"", 9092}  (all interfaces)
//   "127.0.0.1:9644"               -> {127.0.0.1, 9644}
//   "PLAINTEXT://[::1]:9092"       -> {::1, 9092}
// A comma-separated list is accepted when exactly one entry is PLAINTEXT
// (Daruma has no TLS/SASL listeners); port 0 binds an ephemeral port.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

#include "common/status.h"

namespace daruma::broker {

struct ListenerAddress {
  std::string host;  // empty = every interface (0.0.0.0)
  uint16_t port = 0;

  // "host:port" ("[v6]:port" for IPv6).
  std::string ToString() const;
};

// `key` names the property in error messages.
Result<ListenerAddress> ParseListener(std::string_view key, std::string_view value);

}  // namespace daruma::broker
