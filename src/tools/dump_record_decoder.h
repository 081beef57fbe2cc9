// The key/payload text that `daruma dump --print-data-log` prints for one
// record: kafka-dump-log's MessageParser contract. A null key prints no
// `key:` and a null payload no `payload:` (spec §12.2).
#pragma once

#include <optional>
#include <string>

#include "record/record_batch.h"

namespace daruma::tools {

struct DecodedKeyValue {
  std::optional<std::string> key;
  std::optional<std::string> payload;
};

// Kafka's default StringDecoder: the key and value bytes as UTF-8 text, each
// ill-formed sequence shown as U+FFFD (common/utf8.h), as Java decodes them.
DecodedKeyValue DecodeAsStrings(const Record& record);

using RecordDecoder = DecodedKeyValue (*)(const Record& record);

}  // namespace daruma::tools
