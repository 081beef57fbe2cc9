// ProducerSnapshotCheck: `daruma check`'s proof that every producer snapshot
// file (`<offset>.snapshot`, spec §9.7) agrees with the log it summarises.
//
// The log's valid batches are fed in offset order to a fresh
// ProducerStateManager (replication semantics, as recovery applies them);
// when the replay reaches a snapshot's offset S (every batch below S
// applied), the file's entries are compared, producer by producer, with the
// replayed state. Kafka writes its HashMap's order, so order is ignored.
//
// Invariants and tolerances (each a way a healthy dir differs from a replay):
//  * No snapshot file at all while the log has producer batches is a problem
//    of its own (reported by the caller, see saw_producer_batches()).
//  * Snapshots below the first batch or above the last offset replayed are
//    not compared (recovery deletes them as stray; the plan covers that).
//  * Kafka expires producers idle longer than producer.id.expiration.ms
//    (never one with an open transaction) before it snapshots. A replayed
//    producer missing from a file is accepted only when it could have
//    expired by the time the file was written (its last timestamp +
//    expiration < the file's mtime).
//  * When the log does not start at offset 0 (retention, deletes), earlier
//    producers are unknown to the replay: producers only in the file are
//    accepted, and a coordinator epoch the replay never saw is not compared.
//  * Compaction removes batches after the snapshots were written (Kafka's
//    cleaner never rewrites them; it keeps only each producer's last batch
//    of the whole log), so a file may be ahead of the replay: an entry
//    whose last offset is above the replayed one, and a producer only in
//    the file, are accepted when that last offset lies in a range of offsets
//    missing from the log (the batch it names was cleaned away); an entry
//    behind the replay is not (the log has a batch the file missed). A
//    batch the cleaner kept with fewer records gets the largest timestamp of
//    those it kept, so a file's timestamp above the replay's is accepted
//    for it.
// One problem per file: the first producer that disagrees, with the byte
// position of its 46-byte entry (-1 when the entry is missing), the producer
// id and both values ("expected X (replay), found Y (file)").
// Read-only: the replay's manager runs on an overlay, so it can never write.
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "common/file_system.h"
#include "common/overlay_file_system.h"
#include "common/status.h"
#include "log/producer_snapshot_file.h"
#include "log/producer_state_manager.h"
#include "record/log_entry.h"

namespace daruma {

struct SnapshotProblem {
  std::string file;
  int64_t position = -1;  // of the producer's entry in the file; -1 when missing
  int64_t offset = 0;     // the snapshot's offset
  std::string what;
};

class ProducerSnapshotCheck {
 public:
  // `snapshot_offsets` maps each snapshot offset to its file. `drop_cache`
  // drops the pages of the files read.
  // `rebuilt_from`: after a crash, the offset from which the start rebuilds
  // the producer state (the first rescanned segment's base). It reads the
  // snapshot there, and deletes one a crash cut short for an older one, as
  // Kafka's loader does; it deletes those above and writes them again. So
  // snapshots above it are not compared, and one at it that cannot be read
  // is no problem.
  ProducerSnapshotCheck(FileSystem* fs, std::string partition_dir, std::string partition_name,
                        std::map<int64_t, std::string> snapshot_files,
                        int64_t producer_id_expiration_ms, bool drop_cache,
                        std::optional<int64_t> rebuilt_from = std::nullopt);

  // Feeds one valid batch; batches come in offset order across segments.
  void OnBatch(const LogEntry& entry);
  // The replay reached `end_offset` (the end of the valid data): compares the
  // snapshots at or below it that were not compared yet. Returns the problems.
  std::vector<SnapshotProblem> Finish(int64_t end_offset);
  // Whether any batch fed carried a producer id. Without any snapshot file,
  // Kafka's clean start takes its upgrade path (empty snapshots, no scan) and
  // forgets those producers: open transactions, sequence numbers.
  bool saw_producer_batches() const { return saw_producer_batches_; }

 private:
  void CompareUpTo(int64_t offset);
  Result<std::vector<ProducerSnapshotEntry>> Read(const std::string& path);
  void Compare(int64_t offset, const std::string& path);
  std::optional<std::string> Difference(const ProducerSnapshotEntry& replayed,
                                        const ProducerSnapshotEntry& stored,
                                        int64_t snapshot_offset) const;

  FileSystem* fs_;
  OverlayFileSystem overlay_;
  std::map<int64_t, std::string> pending_;
  int64_t expiration_ms_;
  bool drop_cache_;
  std::unique_ptr<ProducerStateManager> replay_;
  std::optional<int64_t> first_offset_;  // of the first batch fed
  std::optional<int64_t> rebuilt_from_;
  std::optional<int64_t> next_offset_;  // after the last batch fed
  // Offsets missing between batches fed, [from, to), in order.
  std::vector<std::pair<int64_t, int64_t>> gaps_;
  // Last offsets of producer batches with fewer records than offsets (the
  // cleaner removed some).
  std::set<int64_t> thinned_batches_;
  bool InGap(int64_t offset) const;
  bool stopped_ = false;  // the replay failed: nothing more is compared
  bool saw_producer_batches_ = false;
  std::vector<SnapshotProblem> problems_;
};

}  // namespace daruma
