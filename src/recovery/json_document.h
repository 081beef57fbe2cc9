// Parsing the JSON files Daruma keeps beside Kafka's in a log dir
// (daruma-topic-configs.json, daruma-scrub-findings.json): a file that is not
// JSON is kCorruption naming the file and the byte position (from 0) where
// the parse failed.
#pragma once

#include <fmt/format.h>

#include <nlohmann/json.hpp>
#include <string>

#include "common/status.h"

namespace daruma {

template <typename Bytes>
Result<nlohmann::json> ParseJsonDocument(const std::string& path, const Bytes& bytes) {
  try {
    return nlohmann::json::parse(bytes.begin(), bytes.end());
  } catch (const nlohmann::json::parse_error& e) {
    // e.byte counts from 1; positions in Daruma's messages count from 0.
    return Status::Corruption(fmt::format("{}: not valid JSON at byte {}: {}", path,
                                          e.byte == 0 ? 0 : e.byte - 1, e.what()));
  }
}

}  // namespace daruma
