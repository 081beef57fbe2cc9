// The daruma.scrub.* settings (broker/scrub_settings.h) as `daruma serve`
// reads them: defaults, values, and a bad value named with its key.
#include "broker/scrub_settings.h"

#include <gtest/gtest.h>

#include "broker/serve_settings.h"
#include "recovery/config_keys.h"

namespace daruma::broker {
namespace {

TEST(ScrubSettingsTest, Defaults) {
  auto s = ServeSettings::FromConfig(ServerConfig{});
  ASSERT_TRUE(s.ok()) << s.status().ToString();
  EXPECT_TRUE(s->scrub.enable);
  EXPECT_EQ(s->scrub.bytes_per_second, 50 << 20);
  EXPECT_EQ(s->scrub.interval_ms, 86400000);
  EXPECT_EQ(s->scrub.initial_delay_ms, 300000);
}

TEST(ScrubSettingsTest, ValuesAreRead) {
  ServerConfig config;
  config.other = {{"daruma.scrub.enable", "false"},
                  {"daruma.scrub.bytes.per.second", "1048576"},
                  {"daruma.scrub.interval.ms", "3600000"},
                  {"daruma.scrub.initial.delay.ms", "0"}};
  auto s = ServeSettings::FromConfig(config);
  ASSERT_TRUE(s.ok()) << s.status().ToString();
  EXPECT_FALSE(s->scrub.enable);
  EXPECT_EQ(s->scrub.bytes_per_second, 1048576);
  EXPECT_EQ(s->scrub.interval_ms, 3600000);
  EXPECT_EQ(s->scrub.initial_delay_ms, 0);
}

TEST(ScrubSettingsTest, BadValuesNameTheKey) {
  const std::pair<const char*, const char*> bad[] = {
      {"daruma.scrub.enable", "yes"},
      {"daruma.scrub.bytes.per.second", "0"},
      {"daruma.scrub.interval.ms", "soon"},
      {"daruma.scrub.initial.delay.ms", "-1"},
  };
  for (const auto& [key, value] : bad) {
    ServerConfig config;
    config.other = {{key, value}};
    auto s = ServeSettings::FromConfig(config);
    ASSERT_FALSE(s.ok()) << key;
    EXPECT_EQ(s.status().code(), StatusCode::kInvalidArgument);
    EXPECT_NE(s.status().message().find(key), std::string::npos) << s.status().ToString();
  }
}

TEST(ScrubSettingsTest, EveryKeyIsKnownToTheConfigLoader) {
  for (const char* key : {"daruma.scrub.enable", "daruma.scrub.bytes.per.second",
                          "daruma.scrub.interval.ms", "daruma.scrub.initial.delay.ms"}) {
    EXPECT_TRUE(IsDarumaConfigKey(key)) << key;
  }
}

}  // namespace
}  // namespace daruma::broker
