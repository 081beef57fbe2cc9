// Damage shared by the recovery and tool tests of issue 25: Kafka's
// transactional fixture made unloadable the way the issue found it.
#pragma once

#include <gtest/gtest.h>

#include <cstdint>
#include <filesystem>
#include <map>
#include <string>
#include <vector>

#include "common/bytes.h"
#include "common/file_system.h"
#include "support/mem_file_system.h"
#include "support/test_support.h"

namespace daruma::testing {

// Every regular file at or below `root` (sub-directories included), path ->
// bytes: a digest of a partition dir that any change shows up in.
inline std::map<std::string, std::vector<uint8_t>> ReadTree(const std::string& root) {
  std::map<std::string, std::vector<uint8_t>> out;
  for (const auto& e : std::filesystem::recursive_directory_iterator(root)) {
    if (!e.is_regular_file()) continue;
    const std::string s = ReadFileToString(e.path().string());
    out[e.path().string()] = std::vector<uint8_t>(s.begin(), s.end());
  }
  return out;
}

// Writes a tree read by ReadTree into `fs` under the same paths (parent
// directories created as needed), for crash tests that run on a copy in memory.
inline void WriteTree(const std::map<std::string, std::vector<uint8_t>>& files, MemFileSystem* fs) {
  for (const auto& [path, bytes] : files) {
    ASSERT_TRUE(fs->CreateDir(ParentDir(path)).ok()) << path;
    auto f = fs->Open(path, OpenMode::kTruncate);
    ASSERT_TRUE(f.ok()) << f.status().ToString();
    ASSERT_TRUE((*f)->WriteAt(0, bytes).ok()) << path;
  }
}

// Segment 0 of `partition_dir` (a copy of the transactional fixture) with the
// batches of its last third given base offset 0 (the field is outside the
// CRC), and its offset index deleted: Kafka's pass 4 rebuilds the index and
// fails on the non-monotonic offset, so the partition cannot be loaded.
inline void MakeSegmentZeroUnloadable(const std::string& partition_dir) {
  const std::string log = partition_dir + "/00000000000000000000.log";
  std::string data = ReadFileToString(log);
  std::vector<size_t> positions;
  for (size_t pos = 0; pos + 12 <= data.size();) {
    positions.push_back(pos);
    pos += 12 + LoadBe32(reinterpret_cast<const uint8_t*>(data.data()) + pos + 8);
  }
  ASSERT_GT(positions.size(), 20u);
  for (size_t b = positions.size() * 2 / 3; b < positions.size(); ++b) {
    for (size_t i = 0; i < 8; ++i) data[positions[b] + i] = 0;
  }
  WriteStringToFile(log, data);
  std::filesystem::remove(partition_dir + "/00000000000000000000.index");
}

}  // namespace daruma::testing
