#include "broker/serve_settings.h"

#include <fmt/format.h>

#include <charconv>
#include <cstdint>
#include <string>

namespace daruma::broker {
namespace {

const std::string* Find(const ServerConfig& config, const std::string& key) {
  auto it = config.other.find(key);
  return it == config.other.end() ? nullptr : &it->second;
}

template <typename Int>
Status ReadInt(const ServerConfig& config, const std::string& key, Int min, Int* out) {
  const std::string* value = Find(config, key);
  if (value == nullptr) return Status::Ok();
  std::string_view v = *value;
  while (!v.empty() && (v.front() == ' ' || v.front() == '\t')) v.remove_prefix(1);
  while (!v.empty() && (v.back() == ' ' || v.back() == '\t')) v.remove_suffix(1);
  Int parsed = 0;
  const auto [end, ec] = std::from_chars(v.data(), v.data() + v.size(), parsed);
  if (ec != std::errc() || end != v.data() + v.size() || parsed < min) {
    return Status::InvalidArgument(fmt::format(
        "invalid value \"{}\" for {}: expected an integer of at least {}", *value, key, min));
  }
  *out = parsed;
  return Status::Ok();
}

}  // namespace

Result<ServeSettings> ServeSettings::FromConfig(const ServerConfig& config) {
  ServeSettings s;
  if (const std::string* v = Find(config, "listeners")) {
    DARUMA_ASSIGN_OR_RETURN(s.kafka_listener, ParseListener("listeners", *v));
  }
  if (const std::string* v = Find(config, "advertised.listeners")) {
    DARUMA_ASSIGN_OR_RETURN(s.advertised_listener, ParseListener("advertised.listeners", *v));
  }
  const std::string* http = Find(config, "daruma.http.listener");
  DARUMA_ASSIGN_OR_RETURN(
      s.http_listener,
      ParseListener("daruma.http.listener", http != nullptr ? *http : kDefaultHttpListener));
  DARUMA_RETURN_IF_ERROR(
      ReadInt<int32_t>(config, "socket.request.max.bytes", 1, &s.socket_request_max_bytes));
  DARUMA_RETURN_IF_ERROR(
      ReadInt<int64_t>(config, "queued.max.request.bytes", INT64_MIN, &s.queued_max_request_bytes));
  DARUMA_RETURN_IF_ERROR(
      ReadInt<int64_t>(config, "connections.max.idle.ms", INT64_MIN, &s.connections_max_idle_ms));
  int32_t max_starts = s.max_unclean_starts;
  DARUMA_RETURN_IF_ERROR(
      ReadInt<int32_t>(config, "daruma.crash.loop.max.unclean.starts", 0, &max_starts));
  s.max_unclean_starts = max_starts;
  int32_t io_threads = s.num_io_threads;
  DARUMA_RETURN_IF_ERROR(ReadInt<int32_t>(config, "num.io.threads", 1, &io_threads));
  s.num_io_threads = io_threads;
  if (const std::string* v = Find(config, "daruma.scrub.enable")) {
    if (*v != "true" && *v != "false") {
      return Status::InvalidArgument(
          fmt::format("invalid value \"{}\" for daruma.scrub.enable: expected true or false", *v));
    }
    s.scrub.enable = *v == "true";
  }
  DARUMA_RETURN_IF_ERROR(
      ReadInt<int64_t>(config, "daruma.scrub.bytes.per.second", 1, &s.scrub.bytes_per_second));
  DARUMA_RETURN_IF_ERROR(
      ReadInt<int64_t>(config, "daruma.scrub.interval.ms", 1, &s.scrub.interval_ms));
  DARUMA_RETURN_IF_ERROR(
      ReadInt<int64_t>(config, "daruma.scrub.initial.delay.ms", 0, &s.scrub.initial_delay_ms));
  if (const std::string* v = Find(config, "daruma.log.level")) {
    Result<LogLevel> level = ParseLogLevel(*v);
    if (!level.ok()) return level.status().WithContext("daruma.log.level");
    s.log_level = *level;
  }
  return s;
}

}  // namespace daruma::broker
