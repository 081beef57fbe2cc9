#include "broker/listener_address.h"

#include <fmt/format.h>

#include <charconv>
#include <vector>

namespace daruma::broker {
namespace {

std::string_view TrimAddress(std::string_view s) {
  while (!s.empty() && (s.front() == ' ' || s.front() == '\t')) s.remove_prefix(1);
  while (!s.empty() && (s.back() == ' ' || s.back() == '\t')) s.remove_suffix(1);
  return s;
}

Result<ListenerAddress> ParseHostPort(std::string_view key, std::string_view hp) {
  const size_t colon = hp.rfind(':');
  if (colon == std::string_view::npos) {
    return Status::InvalidArgument(
        fmt::format("{}: expected host:port, found '{}' (no port)", key, hp));
  }
  std::string_view host = hp.substr(0, colon);
  const std::string_view port_text = hp.substr(colon + 1);
  if (host.size() >= 2 && host.front() == '[' && host.back() == ']') {
    host = host.substr(1, host.size() - 2);
  }
  int port = -1;
  const auto [end, ec] =
      std::from_chars(port_text.data(), port_text.data() + port_text.size(), port);
  if (ec != std::errc() || end != port_text.data() + port_text.size() || port < 0 || port > 65535) {
    return Status::InvalidArgument(
        fmt::format("{}: expected a port 0..65535, found '{}' in '{}'", key, port_text, hp));
  }
  return ListenerAddress{std::string(host), uint16_t(port)};
}

}  // namespace

std::string ListenerAddress::ToString() const {
  if (host.find(':') != std::string::npos) return fmt::format("[{}]:{}", host, port);
  return fmt::format("{}:{}", host, port);
}

Result<ListenerAddress> ParseListener(std::string_view key, std::string_view value) {
  std::vector<std::string_view> plaintext;
  std::vector<std::string_view> bare;
  size_t start = 0;
  while (start <= value.size()) {
    size_t comma = value.find(',', start);
    if (comma == std::string_view::npos) comma = value.size();
    const std::string_view entry = TrimAddress(value.substr(start, comma - start));
    start = comma + 1;
    if (entry.empty()) continue;
    const size_t scheme = entry.find("://");
    if (scheme == std::string_view::npos) {
      bare.push_back(entry);
    } else if (entry.substr(0, scheme) == "PLAINTEXT") {
      plaintext.push_back(entry.substr(scheme + 3));
    }
  }
  if (plaintext.size() + bare.size() != 1) {
    return Status::InvalidArgument(fmt::format(
        "{}: expected exactly one PLAINTEXT://host:port listener, found '{}'", key, value));
  }
  return ParseHostPort(key, plaintext.empty() ? bare.front() : plaintext.front());
}

}  // namespace daruma::broker
