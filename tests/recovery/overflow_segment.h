// A segment written the way pre-2.0 brokers could (KAFKA-6264): one `.log`
// at base 0 whose batches reach offsets above base + 2^31-1, built byte by
// byte, plus the segments Kafka's split (spec §10.5) must produce from it.
#pragma once

#include <gtest/gtest.h>

#include <cstdint>
#include <string>
#include <vector>

#include "common/bytes.h"
#include "record/record_batch_builder.h"

namespace daruma::testing {

struct OverflowBatch {
  int64_t base_offset;
  int records;
  int32_t epoch;
};

// Offsets 0-2 and 5-6 fit base 0; 2^31 .. 2^31+2 do not (2^31+1 - 0 >
// INT32_MAX) and open a segment at 2^31; 3 * 2^31 opens a third one.
constexpr int64_t kSplitBase1 = int64_t(1) << 31;
constexpr int64_t kSplitBase2 = int64_t(3) << 31;
inline const std::vector<OverflowBatch>& OverflowBatches() {
  static const std::vector<OverflowBatch> batches = {
      {0, 3, 0}, {5, 2, 0}, {kSplitBase1, 2, 1}, {kSplitBase1 + 2, 1, 1}, {kSplitBase2, 2, 2}};
  return batches;
}
constexpr int64_t kOverflowNextOffset = kSplitBase2 + 2;
constexpr int64_t kOverflowT0 = 1700000000000;

inline Bytes OverflowBatchBytes(size_t i) {
  const OverflowBatch& b = OverflowBatches()[i];
  BatchBuilderOptions o;
  o.base_offset = b.base_offset;
  o.partition_leader_epoch = b.epoch;
  std::vector<RecordInput> records;
  for (int r = 0; r < b.records; ++r) {
    records.push_back({kOverflowT0 + int64_t(i) * 10 + r,
                       "k" + std::to_string(r),
                       std::string(40, char('a' + i)),
                       {}});
  }
  auto bytes = BuildRecordBatch(o, records);
  EXPECT_TRUE(bytes.ok()) << bytes.status().ToString();
  return bytes.ok() ? *bytes : Bytes();
}

// Concatenated bytes of batches [from, to).
inline std::string OverflowBytes(size_t from, size_t to) {
  std::string out;
  for (size_t i = from; i < to; ++i) {
    Bytes b = OverflowBatchBytes(i);
    out.append(b.begin(), b.end());
  }
  return out;
}

// The whole overflowed segment, and each expected split segment's bytes.
inline std::string OverflowSegmentBytes() {
  return OverflowBytes(0, OverflowBatches().size());
}
struct ExpectedSplit {
  int64_t base;
  std::string bytes;
};
inline std::vector<ExpectedSplit> ExpectedSplitSegments() {
  return {{0, OverflowBytes(0, 2)},
          {kSplitBase1, OverflowBytes(2, 4)},
          {kSplitBase2, OverflowBytes(4, 5)}};
}

}  // namespace daruma::testing
