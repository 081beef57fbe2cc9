// libFuzzer target: the input is the image of a partition's only segment. It
// is written as <scratch>/t-0/00000000000000000000.log (no indexes, no
// checkpoints) and the partition is loaded by LoadLog after an unclean
// shutdown, exactly as the broker does at start-up (spec §10).
//
// Invariants checked (a violation aborts, i.e. is a finding):
//  * LoadLog either fails with a Status or returns a log in which, segment by
//    segment, every entry of the .log validates (CRC and structure), the
//    entries tile the file to its end, and every offset-index entry points at
//    the start of an entry whose last offset it names;
//  * offsets increase across segments: each segment's entries lie in
//    [its base, the next segment's base);
//  * the log end offset is one past the active segment's last offset, or
//    that segment's base when it is empty. (After an offset-overflow split,
//    Kafka names a segment after each batch that does not fit the one
//    before, CRC-checked or not; when recovery then cuts such a segment's
//    first batch, the empty active segment keeps that base, above the last
//    kept batch, as in Kafka.)
//  * recovery is idempotent: after Close, loading again (unclean, then clean)
//    succeeds with the same log end offset and size.
#include <cstddef>
#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "common/clock.h"
#include "fuzz_support.h"
#include "log/log.h"
#include "log/log_segment.h"
#include "record/file_batch_reader.h"
#include "record/log_entry.h"
#include "recovery/log_loader.h"

namespace daruma::fuzz {
namespace {

Result<std::unique_ptr<Log>> Load(const std::string& root, bool clean) {
  static ManualClock clock(1'700'000'000'000);
  LoadLogParams p;
  p.fs = ScratchDir::fs();
  p.log_dir = root;
  p.partition_dir = root + "/t-0";
  p.tp = TopicPartition{"t", 0};
  p.clock = &clock;
  p.had_clean_shutdown = clean;
  return LoadLog(p, nullptr);
}

// Checks one segment; returns the last offset of its last entry (-1 if none).
int64_t CheckSegment(LogSegment* segment) {
  FileBatchReader reader(segment->log_file());
  std::map<int64_t, int64_t> last_offset_at;  // entry position -> last offset
  int64_t last = -1;
  while (auto entry = reader.Next()) {
    Check(entry->Validate().ok());
    last = entry->last_offset();
    Check(last >= segment->base_offset());
    last_offset_at[entry->position] = last;
  }
  auto size = segment->log_file()->Size();
  Check(size.ok());
  Check(reader.stop_reason() == StopReason::kEndOfFile && reader.position() == *size);
  auto index = segment->offset_index();
  Check(index.ok());
  for (size_t slot = 0; slot < (*index)->entries(); ++slot) {
    OffsetPosition e = (*index)->Entry(slot);
    auto it = last_offset_at.find(e.position);
    Check(it != last_offset_at.end() && it->second == e.offset);
  }
  return last;
}

void CheckLoaded(Log* log) {
  const std::vector<LogSegment*> segments = log->segments_for_inspection();
  Check(!segments.empty());
  int64_t last = -1;
  int64_t active_last = -1;
  for (size_t i = 0; i < segments.size(); ++i) {
    const int64_t segment_last = CheckSegment(segments[i]);
    if (segment_last < 0) continue;
    Check(segment_last > last);
    if (i + 1 < segments.size()) Check(segment_last < segments[i + 1]->base_offset());
    last = segment_last;
    if (i + 1 == segments.size()) active_last = segment_last;
  }
  const int64_t leo = log->log_end_offset();
  Check(leo == (active_last >= 0 ? active_last + 1 : segments.back()->base_offset()));
  Check(leo > last);
}

}  // namespace
}  // namespace daruma::fuzz

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace daruma;
  using namespace daruma::fuzz;
  const std::string& root = Scratch().Reset();
  Check(ScratchDir::fs()->CreateDir(root + "/t-0").ok());
  Scratch().Write("t-0/00000000000000000000.log", ByteSpan(data, size));
  auto log = Load(root, false);
  if (!log.ok()) {
    Check(!log.status().ok() && !log.status().message().empty());
    return 0;
  }
  CheckLoaded(log->get());
  const int64_t leo = (*log)->log_end_offset();
  const int64_t bytes = (*log)->size_in_bytes();
  Check((*log)->Close().ok());
  log->reset();
  for (bool clean : {false, true}) {
    auto again = Load(root, clean);
    Check(again.ok());
    Check((*again)->log_end_offset() == leo && (*again)->size_in_bytes() == bytes);
    Check((*again)->Close().ok());
  }
  return 0;
}
