// ParseListener and ServeSettings: Kafka's listener syntax and Daruma's keys.
#include <gtest/gtest.h>

#include "broker/listener_address.h"
#include "broker/serve_settings.h"

namespace daruma::broker {
namespace {

TEST(ServerListenerTest, ParsesKafkaAndPlainForms) {
  auto a = ParseListener("listeners", "PLAINTEXT://127.0.0.1:9092");
  ASSERT_TRUE(a.ok());
  EXPECT_EQ(a->host, "127.0.0.1");
  EXPECT_EQ(a->port, 9092);
  auto all = ParseListener("listeners", "PLAINTEXT://:9093");
  ASSERT_TRUE(all.ok());
  EXPECT_EQ(all->host, "");
  EXPECT_EQ(all->port, 9093);
  auto v6 = ParseListener("listeners", "PLAINTEXT://[::1]:0");
  ASSERT_TRUE(v6.ok());
  EXPECT_EQ(v6->host, "::1");
  EXPECT_EQ(v6->ToString(), "[::1]:0");
  auto plain = ParseListener("daruma.http.listener", " 127.0.0.1:9644 ");
  ASSERT_TRUE(plain.ok());
  EXPECT_EQ(plain->ToString(), "127.0.0.1:9644");
  auto mixed = ParseListener("listeners", "SSL://h:1,PLAINTEXT://h:2");
  ASSERT_TRUE(mixed.ok());
  EXPECT_EQ(mixed->port, 2);
}

TEST(ServerListenerTest, RejectsWithKeyAndValue) {
  auto no_port = ParseListener("listeners", "PLAINTEXT://localhost");
  ASSERT_FALSE(no_port.ok());
  EXPECT_EQ(no_port.status().message(),
            "listeners: expected host:port, found 'localhost' (no port)");
  auto bad_port = ParseListener("listeners", "PLAINTEXT://h:70000");
  ASSERT_FALSE(bad_port.ok());
  EXPECT_EQ(bad_port.status().message(),
            "listeners: expected a port 0..65535, found '70000' in 'h:70000'");
  auto two = ParseListener("listeners", "PLAINTEXT://a:1,PLAINTEXT://b:2");
  ASSERT_FALSE(two.ok());
  EXPECT_NE(two.status().message().find("exactly one PLAINTEXT://host:port"), std::string::npos);
  EXPECT_FALSE(ParseListener("listeners", "SSL://a:1").ok());
}

TEST(ServerListenerTest, SettingsDefaults) {
  ServerConfig config;
  auto s = ServeSettings::FromConfig(config);
  ASSERT_TRUE(s.ok());
  EXPECT_EQ(s->kafka_listener.ToString(), ":9092");
  EXPECT_EQ(s->http_listener.ToString(), "127.0.0.1:9644");
  EXPECT_EQ(s->socket_request_max_bytes, 104857600);
  EXPECT_EQ(s->max_unclean_starts, 5);
  EXPECT_EQ(s->connections_max_idle_ms, 600000);
  EXPECT_EQ(s->num_io_threads, 8);             // Kafka's num.io.threads default
  EXPECT_EQ(s->queued_max_request_bytes, -1);  // Kafka's default: unbounded
  EXPECT_EQ(s->log_level, LogLevel::kInfo);
  EXPECT_FALSE(s->advertised_listener.has_value());
}

TEST(ServerListenerTest, SettingsFromProperties) {
  ServerConfig config;
  config.other = {{"listeners", "PLAINTEXT://127.0.0.1:19092"},
                  {"advertised.listeners", "PLAINTEXT://broker1:29092"},
                  {"daruma.http.listener", "0.0.0.0:8080"},
                  {"socket.request.max.bytes", "1024"},
                  {"daruma.crash.loop.max.unclean.starts", "0"},
                  {"connections.max.idle.ms", " 1500 "},
                  {"num.io.threads", "3"},
                  {"queued.max.request.bytes", "1048576"},
                  {"daruma.log.level", "debug"}};
  auto s = ServeSettings::FromConfig(config);
  ASSERT_TRUE(s.ok()) << s.status().ToString();
  EXPECT_EQ(s->kafka_listener.ToString(), "127.0.0.1:19092");
  EXPECT_EQ(s->advertised_listener->ToString(), "broker1:29092");
  EXPECT_EQ(s->http_listener.ToString(), "0.0.0.0:8080");
  EXPECT_EQ(s->socket_request_max_bytes, 1024);
  EXPECT_EQ(s->max_unclean_starts, 0);
  EXPECT_EQ(s->connections_max_idle_ms, 1500);
  EXPECT_EQ(s->num_io_threads, 3);
  EXPECT_EQ(s->queued_max_request_bytes, 1048576);
  EXPECT_EQ(s->log_level, LogLevel::kDebug);
  config.other = {{"connections.max.idle.ms", "-1"}};
  EXPECT_EQ(ServeSettings::FromConfig(config)->connections_max_idle_ms, -1);
}

TEST(ServerListenerTest, SettingsRejectBadNumbers) {
  ServerConfig config;
  config.other = {{"socket.request.max.bytes", "0"}};
  auto s = ServeSettings::FromConfig(config);
  ASSERT_FALSE(s.ok());
  EXPECT_EQ(s.status().message(),
            "invalid value \"0\" for socket.request.max.bytes: expected an integer of at least 1");
  config.other = {{"daruma.crash.loop.max.unclean.starts", "five"}};
  EXPECT_FALSE(ServeSettings::FromConfig(config).ok());
  config.other = {{"connections.max.idle.ms", "10m"}};
  s = ServeSettings::FromConfig(config);
  ASSERT_FALSE(s.ok());
  EXPECT_NE(s.status().message().find("\"10m\" for connections.max.idle.ms"), std::string::npos);
  config.other = {{"daruma.log.level", "chatty"}};
  s = ServeSettings::FromConfig(config);
  ASSERT_FALSE(s.ok());
  EXPECT_NE(s.status().ToString().find("daruma.log.level"), std::string::npos)
      << s.status().ToString();
  config.other = {{"num.io.threads", "0"}};
  s = ServeSettings::FromConfig(config);
  ASSERT_FALSE(s.ok());
  EXPECT_EQ(s.status().message(),
            "invalid value \"0\" for num.io.threads: expected an integer of at least 1");
}

}  // namespace
}  // namespace daruma::broker
