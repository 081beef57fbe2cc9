// MetadataFile: KRaft metadata log segments and snapshots built batch by
// batch, for the tests that read them (kraft_topic_configs_test.cc,
// log_checker_test.cc).
#pragma once

#include <gtest/gtest.h>

#include <cstdint>
#include <fstream>
#include <optional>
#include <string>
#include <vector>

#include "common/bytes.h"
#include "record/control_record.h"
#include "record/record_batch_builder.h"
#include "support/test_support.h"

namespace daruma::testing {

// One batch per call, offsets following on.
class MetadataFile {
 public:
  explicit MetadataFile(int64_t base = 0) : next_(base) {}
  // A snapshot's first or last batch (SnapshotHeader, SnapshotFooter).
  MetadataFile& Control(ControlRecordType type) {
    BatchBuilderOptions o;
    o.base_offset = next_;
    o.is_control = true;
    const Bytes key = EncodeControlRecordKey(type);
    Result<Bytes> batch =
        BuildRecordBatch(o, {{kT0, std::string(AsStringView(key)), std::string("\0\0", 2), {}}});
    EXPECT_TRUE(batch.ok());
    bytes_.insert(bytes_.end(), batch->begin(), batch->end());
    next_ += 1;
    return *this;
  }
  MetadataFile& Batch(const std::vector<std::string>& values) {
    BatchBuilderOptions o;
    o.base_offset = next_;
    std::vector<RecordInput> records;
    for (const std::string& v : values) records.push_back({kT0, std::nullopt, v, {}});
    Result<Bytes> batch = BuildRecordBatch(o, records);
    EXPECT_TRUE(batch.ok());
    bytes_.insert(bytes_.end(), batch->begin(), batch->end());
    next_ += int64_t(values.size());
    return *this;
  }
  void WriteTo(const std::string& path) const {
    std::ofstream(path, std::ios::binary)
        .write(reinterpret_cast<const char*>(bytes_.data()), std::streamsize(bytes_.size()));
  }
  int64_t next() const { return next_; }
  Bytes& bytes() { return bytes_; }

 private:
  int64_t next_;
  Bytes bytes_;
};

}  // namespace daruma::testing
