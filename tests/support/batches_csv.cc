#include "support/batches_csv.h"

#include <gtest/gtest.h>

#include <fstream>
#include <sstream>

namespace daruma::testing {

std::vector<BatchesCsvRow> ReadBatchesCsv(const std::string& path) {
  std::ifstream in(path);
  EXPECT_TRUE(in.good()) << "cannot open " << path;
  std::string line;
  std::getline(in, line);  // header
  std::vector<BatchesCsvRow> rows;
  while (std::getline(in, line)) {
    if (line.empty()) continue;
    // baseOffset,lastOffset,offsetCount,segmentBaseOffset,position,sizeInBytes,compression,
    // producerId,producerEpoch,baseSequence,isTransactional,isControl,partitionLeaderEpoch,
    // maxTimestamp
    std::vector<std::string> f;
    std::stringstream ss(line);
    for (std::string cell; std::getline(ss, cell, ',');) f.push_back(cell);
    EXPECT_EQ(f.size(), 14u) << path << ": " << line;
    if (f.size() != 14) continue;
    rows.push_back({std::stoll(f[0]), std::stoll(f[1]), std::stoll(f[2]), std::stoll(f[3]),
                    std::stoll(f[4]), std::stoll(f[5]), f[6], std::stoll(f[7]),
                    int16_t(std::stoi(f[8])), std::stoi(f[9]), f[10] == "true", f[11] == "true",
                    std::stoi(f[12]), std::stoll(f[13])});
  }
  return rows;
}

}  // namespace daruma::testing
