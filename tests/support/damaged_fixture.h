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

// `partition_dir` (a copy of the transactional fixture) made unloadable,
// with the offset indexes of its first and last segments deleted so that the
// load rebuilds segment 0 (changing files) before it fails: in the last
// segment, the batch before the last one gets bit 32 of its baseOffset set
// (outside the CRC), and the last batch's length now claims more bytes than
// the file holds. The first batch lies past the segment's relative range with
// nothing after it to contradict it, which Kafka and Daruma take for an old
// segment's offset overflow; the split then meets the torn batch, which it
// cannot copy, and the load is refused (SplitOverflowedSegment: "no whole
// batch at position ... to split from").
inline void MakeSegmentZeroUnloadable(const std::string& partition_dir) {
  std::string last_log;
  for (const auto& e : std::filesystem::directory_iterator(partition_dir)) {
    const std::string name = e.path().filename().string();
    if (name.size() == 24 && name.ends_with(".log") &&
        name > std::filesystem::path(last_log).filename().string()) {
      last_log = e.path().string();
    }
  }
  ASSERT_FALSE(last_log.empty());
  ASSERT_NE(std::filesystem::path(last_log).filename(), "00000000000000000000.log");
  std::string data = ReadFileToString(last_log);
  auto* bytes = reinterpret_cast<uint8_t*>(data.data());
  std::vector<size_t> positions;
  for (size_t pos = 0; pos + 12 <= data.size();) {
    positions.push_back(pos);
    pos += 12 + LoadBe32(bytes + pos + 8);
  }
  ASSERT_GE(positions.size(), 2u);
  const size_t victim = positions[positions.size() - 2];  // the last batch stays in range
  StoreBe64(bytes + victim, LoadBe64(bytes + victim) + (uint64_t(1) << 32));
  const size_t torn = positions.back();
  StoreBe32(bytes + torn + 8, uint32_t(data.size() - torn));  // 12 bytes past the end
  WriteStringToFile(last_log, data);
  std::filesystem::remove(partition_dir + "/00000000000000000000.index");
  std::string index = last_log;
  index.replace(index.size() - 4, 4, ".index");
  std::filesystem::remove(index);
}

}  // namespace daruma::testing
