// ServeSettings: the process-level settings of `daruma serve`, read from
// ServerConfig::other (Kafka property names where Kafka has one):
//
//   listeners                            PLAINTEXT://host:port to bind
//                                        (Kafka's default PLAINTEXT://:9092)
//   advertised.listeners                 host:port given to clients in Metadata;
//                                        default: the bound listener (its host,
//                                        or this machine's name when it binds
//                                        every interface)
//   socket.request.max.bytes             largest request frame, default 104857600;
//                                        a larger size field closes the connection
//   queued.max.request.bytes             bytes of requests read or handled at once,
//                                        over all connections; connections stop
//                                        reading while it is used up; default -1,
//                                        any value <= 0 = unbounded (as Kafka)
//   connections.max.idle.ms              close a connection that sends no request
//                                        for this long, default 600000 (10 min);
//                                        negative = never (as Kafka)
//   num.io.threads                       request handler threads (Kafka's
//                                        KafkaRequestHandlerPool): requests run
//                                        there, off the network thread; default 8,
//                                        at least 1
//   daruma.http.listener                 /health and /metrics, default 127.0.0.1:9644
//   daruma.log.level                     DEBUG, INFO (default), WARN or ERROR: the
//                                        least severe request/connection line
//                                        written (event_log.h)
//   daruma.crash.loop.max.unclean.starts refuse to start after this many starts
//                                        without a clean shutdown, default 5
//                                        (0 = never refuse)
//   daruma.scrub.*                       the background scrubber (scrub_settings.h)
// kInvalidArgument naming the key and the value when one does not parse.
#pragma once

#include <cstdint>
#include <optional>

#include "broker/event_log.h"
#include "broker/listener_address.h"
#include "broker/scrub_settings.h"
#include "common/status.h"
#include "recovery/server_config.h"

namespace daruma::broker {

inline constexpr char kDefaultHttpListener[] = "127.0.0.1:9644";
inline constexpr int kDefaultMaxUncleanStarts = 5;
inline constexpr int kDefaultNumIoThreads = 8;

struct ServeSettings {
  ListenerAddress kafka_listener{"", 9092};
  std::optional<ListenerAddress> advertised_listener;
  ListenerAddress http_listener{"127.0.0.1", 9644};
  int32_t socket_request_max_bytes = 104857600;
  int64_t queued_max_request_bytes = -1;     // <= 0: unbounded
  int64_t connections_max_idle_ms = 600000;  // < 0: never close idle connections
  int max_unclean_starts = kDefaultMaxUncleanStarts;
  int num_io_threads = kDefaultNumIoThreads;
  LogLevel log_level = LogLevel::kInfo;
  ScrubSettings scrub;

  static Result<ServeSettings> FromConfig(const ServerConfig& config);
};

}  // namespace daruma::broker
