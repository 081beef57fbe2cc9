// Generates a small sample partition (sample-0) so that `daruma dump` has
// something to show on a fresh clone: plain, idempotent, transactional and
// compressed batches, and a commit marker.
#include <cstdio>
#include <string>

#include "common/file_system.h"
#include "record/record_batch_builder.h"

namespace {

using namespace daruma;

Result<Bytes> SampleBatch(int64_t base, CompressionType codec, int64_t pid, int32_t seq, bool txn,
                          int n) {
  BatchBuilderOptions o;
  o.base_offset = base;
  o.partition_leader_epoch = 0;
  o.compression = codec;
  o.producer_id = pid;
  o.producer_epoch = pid >= 0 ? 0 : -1;
  o.base_sequence = seq;
  o.is_transactional = txn;
  std::vector<RecordInput> records;
  for (int i = 0; i < n; ++i) {
    RecordInput r;
    r.timestamp = 1700000000000 + base + i;
    r.key = "key-" + std::to_string(base + i);
    r.value = "hello daruma, record " + std::to_string(base + i);
    if (i == 0) r.headers.push_back({"source", std::string("sample")});
    records.push_back(r);
  }
  return BuildRecordBatch(o, records);
}

Status Generate(const std::string& root) {
  FileSystem* fs = FileSystem::Default();
  DARUMA_RETURN_IF_ERROR(fs->CreateDir(root));
  const std::string dir = JoinPath(root, "sample-0");
  DARUMA_RETURN_IF_ERROR(fs->CreateDir(dir));
  Bytes log;
  int64_t next = 0;
  auto add = [&](Result<Bytes> batch) -> Status {
    if (!batch.ok()) return batch.status();
    RecordBatchView v(*batch);
    next = v.next_offset();
    log.insert(log.end(), batch->begin(), batch->end());
    return Status::Ok();
  };
  DARUMA_RETURN_IF_ERROR(add(SampleBatch(next, CompressionType::kNone, -1, -1, false, 3)));
  DARUMA_RETURN_IF_ERROR(add(SampleBatch(next, CompressionType::kNone, 1000, 0, false, 2)));
  DARUMA_RETURN_IF_ERROR(add(SampleBatch(next, CompressionType::kGzip, 1000, 2, false, 4)));
  DARUMA_RETURN_IF_ERROR(add(SampleBatch(next, CompressionType::kSnappy, 1000, 6, false, 4)));
  DARUMA_RETURN_IF_ERROR(add(SampleBatch(next, CompressionType::kLz4, 1000, 10, false, 4)));
  DARUMA_RETURN_IF_ERROR(add(SampleBatch(next, CompressionType::kZstd, 1000, 14, false, 4)));
  DARUMA_RETURN_IF_ERROR(add(SampleBatch(next, CompressionType::kNone, 2000, 0, true, 2)));
  DARUMA_RETURN_IF_ERROR(add(Result<Bytes>(
      BuildEndTxnMarkerBatch(next, 0, 2000, 0, ControlRecordType::kCommit, 5, 1700000000100))));
  DARUMA_ASSIGN_OR_RETURN(auto file,
                          fs->Open(JoinPath(dir, "00000000000000000000.log"), OpenMode::kTruncate));
  DARUMA_RETURN_IF_ERROR(file->WriteAt(0, log));
  return file->Sync();
}

}  // namespace

int main(int argc, char** argv) {
  if (argc != 2) {
    std::fprintf(stderr, "usage: %s OUTPUT_DIR\n", argv[0]);
    return 2;
  }
  Status st = Generate(argv[1]);
  if (!st.ok()) {
    std::fprintf(stderr, "daruma_make_sample: %s\n", st.ToString().c_str());
    return 1;
  }
  return 0;
}
