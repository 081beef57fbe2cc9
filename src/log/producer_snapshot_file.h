// Producer-state snapshot files `<offset>.snapshot` (spec §9.7).
//
// File name: the producer-state map end offset at snapshot time, 20-digit
// zero-padded, + ".snapshot" (log_file_names.h). The state reflects every
// batch below it.
//
// Layout (version 1, all big-endian; identical since Kafka 0.11):
//   0 version i16 (= 1) | 2 crc u32 (CRC-32C of [6, end of file)) | 6 count i32
//   10 count x 46-byte entries:
//      0 producerId i64 | 8 epoch i16 | 10 lastSequence i32
//     14 lastOffset i64 (-1: no cached batch) | 22 offsetDelta i32 (0 if none)
//     26 timestamp i64 | 34 coordinatorEpoch i32 (-1: never set)
//     38 currentTxnFirstOffset i64 (-1: no open transaction)
//
// Reading: a short file, a version other than 1, a CRC mismatch, a negative
// count or a count needing more bytes than the file holds make the snapshot
// corrupt (Status kCorruption naming the file, the byte position and the
// field). Bytes after the declared entries are covered by the CRC, so they
// normally surface as a CRC mismatch; with a matching CRC they are ignored,
// as Kafka's schema reader does.
//
// Writing: entries are written in the order given (Kafka writes its producer
// HashMap's iteration order; see producer_snapshot_order.h), in one go to the
// final name, then fsynced when asked. Unlike Kafka, a pre-existing longer file
// is truncated, so a rewrite can never leave stale trailing bytes behind.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "common/bytes.h"
#include "common/file_system.h"
#include "common/status.h"
#include "log/producer_state_entry.h"

namespace daruma {

namespace producer_snapshot_layout {
inline constexpr int16_t kVersion = 1;
inline constexpr size_t kVersionOffset = 0;
inline constexpr size_t kCrcOffset = 2;
inline constexpr size_t kCountOffset = 6;
inline constexpr size_t kEntriesOffset = 10;
inline constexpr size_t kEntrySize = 46;
}  // namespace producer_snapshot_layout

// One 46-byte entry exactly as stored.
struct ProducerSnapshotEntry {
  int64_t producer_id = -1;
  int16_t epoch = -1;
  int32_t last_sequence = -1;
  int64_t last_offset = -1;
  int32_t offset_delta = 0;
  int64_t timestamp = -1;
  int32_t coordinator_epoch = -1;
  int64_t current_txn_first_offset = -1;

  bool operator==(const ProducerSnapshotEntry&) const = default;
};

// Conversions between the stored form and the in-memory entry. An entry with
// last_offset >= 0 carries one cached batch; its first sequence is derived with
// wrap-around when needed.
ProducerSnapshotEntry ToSnapshotEntry(const ProducerStateEntry& entry);
ProducerStateEntry FromSnapshotEntry(const ProducerSnapshotEntry& entry);

Bytes EncodeProducerSnapshot(const std::vector<ProducerSnapshotEntry>& entries);
// `path` is only used in error messages.
Result<std::vector<ProducerSnapshotEntry>> DecodeProducerSnapshot(ByteSpan bytes,
                                                                  const std::string& path);

// Writes the snapshot to `path` (created or truncated), fsyncing it if `sync`.
Status WriteProducerSnapshot(FileSystem* fs, const std::string& path,
                             const std::vector<ProducerSnapshotEntry>& entries, bool sync = true);
Result<std::vector<ProducerSnapshotEntry>> ReadProducerSnapshot(FileSystem* fs,
                                                                const std::string& path);

}  // namespace daruma
