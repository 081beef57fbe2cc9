// The property names a server.properties may hold: Daruma's own (the Kafka
// keys it reads and its daruma.* keys) and the rest of Apache Kafka's broker
// configuration, so that an unknown key can be told from a typo.
//
// Why both: a real Kafka server.properties carries dozens of keys Daruma does
// not use (zookeeper.connect, num.network.threads, ssl.*, ...). They must load
// without a word, while `log.segment.byte` or `daruma.max.open.file` must not
// be ignored in silence. LoadServerConfig warns about an unknown key in a
// file (as Kafka logs "supplied but isn't a known config") and refuses one
// given with --set, naming the nearest known key either way.
#pragma once

#include <string>
#include <string_view>

namespace daruma {

// True for a key Daruma reads, a key of Kafka's broker configuration, or a
// key under one of Kafka's open-ended prefixes (listener.name.<l>.*,
// config.providers.*, rsm.config.*, rlmm.config.*).
bool IsKnownConfigKey(std::string_view key);

// True for the keys Daruma itself reads (the rest are accepted and ignored).
bool IsDarumaConfigKey(std::string_view key);

// True for a key under one of Kafka's open-ended prefixes (listener.name.<l>.*,
// config.providers.*, rsm.config.*, rlmm.config.*): a plug-in's or a
// listener's setting, whose type Kafka does not know.
bool IsUnderKafkaPrefix(std::string_view key);

// The known key closest to `key` by edit distance (ties: the key Daruma
// reads, then the alphabetically first).
std::string NearestConfigKey(std::string_view key);

// The one wording for files and --set: `unknown key "k" (did you mean "n"?)`
// when the nearest key is a few edits away, else `unknown key "k": not a
// Daruma or Kafka broker setting (the nearest is "n")`.
std::string UnknownConfigKeyMessage(std::string_view key);

}  // namespace daruma
