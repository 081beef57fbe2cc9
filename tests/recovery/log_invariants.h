// Invariant checks on a recovered Log, shared by the crash and corruption
// matrices. Each check returns human-readable problems (empty = holds):
//  * ScanLog: reads every batch from the log start to the LEO through
//    Log::Read; every batch must parse, pass its CRC and decode, offsets must
//    be contiguous and end at the LEO. It also derives the producer state
//    and aborted transactions a full re-scan implies.
//  * CheckIndexes: every offset-index entry of every segment points at a
//    valid batch whose base offset is at or below the entry's offset.
//  * CheckProducerState: the log's producers and aborted transactions equal
//    the re-scan's (epoch, last sequence, last data offset, open txn start).
#pragma once

#include <algorithm>
#include <array>
#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "common/bytes.h"
#include "log/log.h"
#include "record/control_record.h"
#include "record/record_batch.h"

namespace daruma::testing {

struct ScannedRecord {
  int64_t offset = 0;
  bool control = false;
  std::optional<std::string> value;
};

struct ExpectedProducer {
  int16_t epoch = -1;
  int32_t last_seq = -1;
  int64_t last_data_offset = -1;
  std::optional<int64_t> open_txn_first;
};

struct LogScan {
  std::vector<ScannedRecord> records;
  std::vector<std::string> invalid;  // invalid batches served, gaps
  std::map<int64_t, ExpectedProducer> producers;
  std::vector<AbortedTxn> aborted;  // last_stable_offset left 0
};

inline void ApplyToExpectedState(const RecordBatchView& batch, const std::vector<Record>& records,
                                 LogScan* scan) {
  if (!batch.has_producer_id()) return;
  ExpectedProducer& p = scan->producers[batch.producer_id()];
  if (batch.producer_epoch() != p.epoch) {
    p.epoch = batch.producer_epoch();
    if (!batch.is_control()) p.last_seq = -1;
  }
  if (batch.is_control()) {
    if (!records.empty() && records[0].key) {
      const std::string& k = *records[0].key;
      auto type =
          ParseControlRecordKey(ByteSpan(reinterpret_cast<const uint8_t*>(k.data()), k.size()));
      if (type.ok() && *type == ControlRecordType::kAbort && p.open_txn_first) {
        scan->aborted.push_back({batch.producer_id(), *p.open_txn_first, batch.last_offset(), 0});
      }
    }
    p.open_txn_first.reset();
    return;
  }
  p.last_seq = batch.last_sequence();
  p.last_data_offset = batch.last_offset();
  if (batch.is_transactional() && !p.open_txn_first) p.open_txn_first = batch.base_offset();
}

inline LogScan ScanLog(Log* log) {
  LogScan scan;
  int64_t next = log->log_start_offset();
  const int64_t first = next;
  const int64_t leo = log->log_end_offset();
  while (next < leo) {
    auto fetched = log->Read(next, 1 << 20, FetchIsolation::kLogEnd, true);
    if (!fetched.ok()) {
      scan.invalid.push_back("read at " + std::to_string(next) +
                             " failed: " + fetched.status().ToString());
      return scan;
    }
    const Bytes& bytes = fetched->records;
    if (bytes.empty()) {
      scan.invalid.push_back("no data at offset " + std::to_string(next) + " below LEO " +
                             std::to_string(leo));
      return scan;
    }
    size_t pos = 0;
    while (pos < bytes.size()) {
      const std::string where = "batch at fetch offset " + std::to_string(next);
      if (bytes.size() - pos < 12) {
        scan.invalid.push_back(where + ": partial batch header");
        return scan;
      }
      const size_t size = 12 + LoadBe32(bytes.data() + pos + 8);
      if (size > bytes.size() - pos) {
        scan.invalid.push_back(where + ": partial batch");
        return scan;
      }
      auto batch = RecordBatchView::Parse(ByteSpan(bytes).subspan(pos, size));
      if (!batch.ok() || !batch->Validate().ok()) {
        scan.invalid.push_back(where + ": invalid batch served");
        return scan;
      }
      auto records = batch->DecodeRecords();
      if (!records.ok()) {
        scan.invalid.push_back(where + ": undecodable: " + records.status().ToString());
        return scan;
      }
      if (batch->last_offset() < next) {  // below the fetch offset: skip
        pos += size;
        continue;
      }
      // The log start offset may lie inside the first batch (retention or
      // DeleteRecords move it to any offset); its records below it are not
      // part of the log any more. Anywhere else a batch must start at `next`.
      const bool holds_log_start = batch->base_offset() < next && next == first;
      if (batch->base_offset() != next && !holds_log_start) {
        scan.invalid.push_back(where + ": gap, batch starts at " +
                               std::to_string(batch->base_offset()));
        return scan;
      }
      for (const Record& r : *records) {
        if (r.offset >= next) scan.records.push_back({r.offset, batch->is_control(), r.value});
      }
      ApplyToExpectedState(*batch, *records, &scan);
      next = batch->next_offset();
      pos += size;
    }
  }
  if (next != leo) {
    scan.invalid.push_back("last batch ends at " + std::to_string(next) + ", LEO is " +
                           std::to_string(leo));
  }
  return scan;
}

inline std::vector<std::string> CheckIndexes(Log* log) {
  std::vector<std::string> problems;
  for (LogSegment* segment : log->segments_for_inspection()) {
    auto index = segment->offset_index();
    if (!index.ok()) {
      problems.push_back(segment->log_path() + ": index unavailable: " + index.status().ToString());
      continue;
    }
    int64_t last = -1;
    for (size_t slot = 0; slot < (*index)->entries(); ++slot) {
      const OffsetPosition e = (*index)->Entry(slot);
      const std::string where = (*index)->path() + " slot " + std::to_string(slot);
      if (e.offset <= last) problems.push_back(where + ": offsets not increasing");
      last = e.offset;
      uint8_t header[61];
      auto n = segment->log_file()->ReadAt(uint64_t(e.position), header);
      if (!n.ok() || *n < sizeof(header)) {
        problems.push_back(where + ": position " + std::to_string(e.position) + " past the log");
        continue;
      }
      const size_t size = 12 + LoadBe32(header + 8);
      Bytes batch_bytes(size);
      auto m = segment->log_file()->ReadAt(uint64_t(e.position), batch_bytes);
      if (!m.ok() || *m < size) {
        problems.push_back(where + ": batch at " + std::to_string(e.position) + " is partial");
        continue;
      }
      auto batch = RecordBatchView::Parse(batch_bytes);
      if (!batch.ok() || !batch->Validate().ok()) {
        problems.push_back(where + ": no valid batch at position " + std::to_string(e.position));
        continue;
      }
      if (batch->base_offset() > e.offset || e.offset >= log->log_end_offset()) {
        problems.push_back(where + ": entry offset " + std::to_string(e.offset) +
                           " but batch at position " + std::to_string(e.position) + " is " +
                           std::to_string(batch->base_offset()) + ".." +
                           std::to_string(batch->last_offset()));
      }
    }
  }
  return problems;
}

inline std::vector<std::string> CheckProducerState(Log* log, const LogScan& scan) {
  std::vector<std::string> problems;
  const auto& actual = log->producer_state().ActiveProducers();
  for (const auto& [pid, want] : scan.producers) {
    auto it = actual.find(pid);
    if (it == actual.end()) {
      problems.push_back("producer " + std::to_string(pid) + " missing after recovery");
      continue;
    }
    const ProducerStateEntry& got = it->second;
    if (got.producer_epoch() != want.epoch || got.LastSeq() != want.last_seq ||
        got.LastDataOffset() != want.last_data_offset ||
        got.current_txn_first_offset() != want.open_txn_first) {
      problems.push_back(
          "producer " + std::to_string(pid) + ": recovered epoch/lastSeq/" +
          "lastOffset/txnFirst " + std::to_string(got.producer_epoch()) + "/" +
          std::to_string(got.LastSeq()) + "/" + std::to_string(got.LastDataOffset()) + "/" +
          std::to_string(got.current_txn_first_offset().value_or(-1)) + ", scan says " +
          std::to_string(want.epoch) + "/" + std::to_string(want.last_seq) + "/" +
          std::to_string(want.last_data_offset) + "/" +
          std::to_string(want.open_txn_first.value_or(-1)));
    }
  }
  for (const auto& [pid, entry] : actual) {
    if (!scan.producers.count(pid)) {
      problems.push_back("producer " + std::to_string(pid) + " recovered but not in the log");
    }
  }
  std::vector<std::array<int64_t, 3>> got, want;
  for (const AbortedTxn& t : log->AllAbortedTransactions()) {
    got.push_back({t.producer_id, t.first_offset, t.last_offset});
  }
  for (const AbortedTxn& t : scan.aborted)
    want.push_back({t.producer_id, t.first_offset, t.last_offset});
  std::sort(got.begin(), got.end());
  std::sort(want.begin(), want.end());
  if (got != want) {
    problems.push_back("aborted transactions: recovered " + std::to_string(got.size()) +
                       ", scan says " + std::to_string(want.size()));
  }
  return problems;
}

}  // namespace daruma::testing
