// Batched syncs at start-up (issue 23, LogManagerOptions::batch_syncs): an
// unclean start of several crashed partitions writes every load's undo
// records ahead, makes them durable with one SyncFileSystem, defers the
// loads' own fsyncs to one SyncFileSystem per dir, and removes the undo logs
// only after it. Proven here by crashing that start at every operation,
// after a power loss (only what was synced survives) and after a kill (the
// page cache survives):
//  * each partition is then found, once an interrupted load is rolled back,
//    byte for byte as before the start or as an uninterrupted start left
//    it, never a mix;
//  * the next start loads every partition to the same log end as the
//    uninterrupted one.
// And the batched start pays a small fraction of the per-file fsyncs. A
// start whose loads only rebuild derived files (indexes, snapshots) syncs
// none of them: its recovery points stay at or below where it found them,
// so whatever a power loss takes of those files the next start rebuilds.
#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <filesystem>
#include <map>
#include <mutex>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "common/clock.h"
#include "common/forwarding_file_system.h"
#include "log/clean_shutdown_file.h"
#include "log/log.h"
#include "log/log_file_names.h"
#include "log/offset_checkpoint_file.h"
#include "record/record_batch_builder.h"
#include "recovery/load_transaction.h"
#include "recovery/load_undo_pack.h"
#include "recovery/log_manager.h"
#include "support/fault_injection_file_system.h"
#include "support/mem_file_system.h"
#include "support/test_support.h"

namespace daruma::testing {
namespace {

using Image = std::map<std::string, std::vector<uint8_t>>;

constexpr int kPartitions = 3;

LogConfig SmallSegments() {
  LogConfig config;
  config.segment_bytes = 2048;
  config.segment_index_bytes = 4096;
  config.index_interval_bytes = 256;
  return config;
}

Bytes IdempotentBatch(int64_t producer_id, int32_t sequence) {
  BatchBuilderOptions options;
  options.producer_id = producer_id;
  options.producer_epoch = 0;
  options.base_sequence = sequence;
  RecordInput record;
  record.timestamp = kT0 + sequence;
  record.key = "k" + std::to_string(sequence);
  record.value = std::string(120, char('a' + sequence % 26));
  auto batch = BuildRecordBatch(options, {record});
  EXPECT_TRUE(batch.ok());
  return batch.ok() ? *batch : Bytes{};
}

std::string PartitionDir(const std::string& log_dir, int p) {
  return JoinPath(log_dir, LogDirName({"batched", p}));
}

// Three partitions of a few segments each, as a killed broker leaves them: no
// clean-shutdown marker, recovery points in the first segment (partition 0),
// at 0 (partition 1, which also has a torn tail) and at the active segment
// (partition 2). Without `torn_tail`, partition 1's tail is whole too, and
// every load only rebuilds indexes and snapshots. With `damage` kMissing,
// partition 2 has lost the .index and .timeindex of every segment from its
// second up to its active one, all below its recovery point; with
// kMissingOffsetIndex, only their .index, so that the load rewrites their
// .timeindex in place; with kMissingSecond, only the second segment loses
// both. With `clean`, the broker had shut down cleanly instead: the
// marker is there and every recovery point is at its log end.
enum class IndexDamage { kNone, kMissing, kMissingOffsetIndex, kMissingSecond };

void Seed(MemFileSystem* mem, const std::string& log_dir, bool torn_tail = true,
          IndexDamage damage = IndexDamage::kNone, bool clean = false) {
  ASSERT_TRUE(mem->CreateDir(log_dir).ok());
  ManualClock clock(kT0);
  OffsetMap recovery_points;
  for (int p = 0; p < kPartitions; ++p) {
    const TopicPartition tp{"batched", p};
    auto log = Log::CreateEmpty(mem, PartitionDir(log_dir, p), tp, SmallSegments(), &clock);
    ASSERT_TRUE(log.ok()) << log.status().ToString();
    for (int32_t i = 0; i < 40; ++i) {
      auto info = (*log)->AppendAsLeader(IdempotentBatch(1000 + i % 2, i / 2), 0);
      ASSERT_TRUE(info.ok()) << info.status().ToString();
    }
    const int64_t active_base = (*log)->segments_for_inspection().back()->base_offset();
    ASSERT_GT(active_base, 0);
    const std::vector<int64_t> bases = (*log)->segment_base_offsets();
    const int64_t log_end = (*log)->log_end_offset();
    ASSERT_TRUE((*log)->Close().ok());
    if (p == 2 && damage != IndexDamage::kNone) {
      ASSERT_GE(bases.size(), 3u);
      const size_t last_damaged = damage == IndexDamage::kMissingSecond ? 1 : bases.size() - 2;
      for (size_t s = 1; s <= last_damaged; ++s) {
        const std::string dir = PartitionDir(log_dir, p);
        ASSERT_TRUE(mem->Remove(OffsetIndexFileName(dir, bases[s])).ok());
        if (damage != IndexDamage::kMissingOffsetIndex) {
          ASSERT_TRUE(mem->Remove(TimeIndexFileName(dir, bases[s])).ok());
        }
      }
    }
    recovery_points[tp] = clean ? log_end : p == 0 ? 5 : p == 1 ? 0 : active_base;
    if (p == 1 && torn_tail) {
      auto file =
          mem->Open(LogFileName(PartitionDir(log_dir, p), active_base), OpenMode::kReadWrite);
      ASSERT_TRUE(file.ok());
      auto size = (*file)->Size();
      ASSERT_TRUE(size.ok());
      const std::vector<uint8_t> torn = {0, 0, 0, 0, 0, 0, 0, 42, 0, 0, 1, 7, 0xff};
      ASSERT_TRUE((*file)->WriteAt(*size, torn).ok());
    }
  }
  auto cp = OffsetCheckpointFile::Open(JoinPath(log_dir, kRecoveryPointCheckpointFile), mem);
  ASSERT_TRUE(cp.ok());
  ASSERT_TRUE(cp->Write(recovery_points).ok());
  if (clean) {
    ASSERT_TRUE(CleanShutdownFile(log_dir, mem).Write(1).ok());
  }
}

LogManagerOptions Options(FileSystem* fs, Clock* clock, bool batch) {
  LogManagerOptions options;
  options.fs = fs;
  options.clock = clock;
  options.batch_syncs = batch;
  return options;
}

struct Reference {
  std::vector<Image> before;
  std::vector<Image> after;
  std::vector<Image> closed;  // after a shutdown following the start
  std::vector<int64_t> log_end;
  OffsetMap recovery_points;  // the checkpoint the start wrote
  uint64_t ops = 0;
  int64_t file_syncs = 0;
  int64_t fs_syncs = 0;
  int64_t pack_writes = 0;    // operations that create the dir's pack
  uint64_t pack_removal = 0;  // the number of the operation that removes it
  int64_t journals = 0;       // partition journal files created
};

class BatchedSyncCrashTest : public ::testing::Test {
 protected:
  void SetUp() override {
    // DirLock uses the real file system: the log dir must exist on disk too.
    log_dir_ = tmp_.Join("logs");
    std::filesystem::create_directories(log_dir_);
  }

  // An uninterrupted start through the fault layer (counting only).
  Reference Run(bool batch, bool torn_tail = true, IndexDamage damage = IndexDamage::kNone,
                bool clean = false) {
    Reference ref;
    MemFileSystem mem;
    Seed(&mem, log_dir_, torn_tail, damage, clean);
    for (int p = 0; p < kPartitions; ++p)
      ref.before.push_back(mem.Files(PartitionDir(log_dir_, p)));
    FaultInjectionFileSystem fault(&mem);
    ManualClock clock(kT0 + 1000);
    LogManager manager(Options(&fault, &clock, batch));
    Status st = manager.Startup({log_dir_}, SmallSegments(), 1);
    EXPECT_TRUE(st.ok()) << st.ToString();
    EXPECT_FALSE(manager.HasFailures()) << manager.ReportJson().dump();
    ref.ops = fault.op_count();
    const std::vector<std::string> op_log = fault.op_log();
    for (size_t i = 0; i < op_log.size(); ++i) {
      const std::string& op = op_log[i];
      if (op.find(" remove ") != std::string::npos &&
          op.find(kLoadUndoPackFileName) != std::string::npos) {
        ref.pack_removal = i + 1;
      }
      if (op.find(" sync ") != std::string::npos) ++ref.file_syncs;
      if (op.find(" sync-fs ") != std::string::npos) ++ref.fs_syncs;
      if (op.find(" create ") != std::string::npos &&
          op.find(kLoadUndoPackFileName) != std::string::npos)
        ++ref.pack_writes;
      if (op.find(" create ") != std::string::npos &&
          op.find(kLoadJournalFileName) != std::string::npos)
        ++ref.journals;
    }
    for (int p = 0; p < kPartitions; ++p) {
      ref.after.push_back(mem.Files(PartitionDir(log_dir_, p)));
      Log* log = manager.GetLog({"batched", p});
      EXPECT_NE(log, nullptr);
      ref.log_end.push_back(log != nullptr ? log->log_end_offset() : -1);
    }
    auto points =
        OffsetCheckpointFile::Open(JoinPath(log_dir_, kRecoveryPointCheckpointFile), &mem)->Read();
    EXPECT_TRUE(points.ok());
    if (points.ok()) ref.recovery_points = *points;
    st = manager.Shutdown();
    EXPECT_TRUE(st.ok()) << st.ToString();
    for (int p = 0; p < kPartitions; ++p)
      ref.closed.push_back(mem.Files(PartitionDir(log_dir_, p)));
    return ref;
  }

  void CrashAtEveryStep(bool torn_tail, IndexDamage damage = IndexDamage::kNone);

  // A start on `mem` that crashes at operation n. After a power loss
  // (kPower, kTorn: the last unsynced write torn) *image receives what
  // survives; after a kill, `mem` is what is left.
  void CrashStartAt(uint64_t n, CrashMode mode, bool batch, MemFileSystem* mem,
                    MemFileSystem* image) {
    FaultInjectionFileSystem fault(mem, n);
    fault.CrashAt(n);
    ManualClock clock(kT0 + 1000);
    {
      LogManager manager(Options(&fault, &clock, batch));
      (void)manager.Startup({log_dir_}, SmallSegments(), 1);
    }
    if (mode != CrashMode::kKill) {
      ASSERT_TRUE(fault.MaterializeDurableState(image, log_dir_, mode == CrashMode::kTorn).ok());
    }
  }

  // An uninterrupted start whose loads only rebuild derived files, with
  // partition 2's `damage`: it syncs nothing after the presave and lowers
  // partition 2's recovery point to the lowest segment it damaged
  // (*damaged: their bases).
  Reference RunExpectingThePointLowered(IndexDamage damage, std::vector<int64_t>* damaged);

  TempDir tmp_;
  std::string log_dir_;
};

TEST_F(BatchedSyncCrashTest, BatchedStartPaysAFractionOfTheFsyncs) {
  const Reference batched = Run(true);
  const Reference unbatched = Run(false);
  EXPECT_EQ(batched.log_end, unbatched.log_end);
  EXPECT_EQ(batched.after, unbatched.after);
  EXPECT_EQ(unbatched.fs_syncs, 0);
  // The probe (LogManager::CanBatchSyncs), the presave's, the loads' and the
  // one after the undo logs go. What is left: the undo records of the changes
  // no presave foresees (the torn tail's: the quarantine dir, its copy and
  // manifest, the truncation) and the three checkpoints.
  EXPECT_EQ(batched.fs_syncs, 4);
  // The presave wrote one pack for the dir, and only the partition with the
  // torn tail (whose truncation no presave foresees) a journal of its own.
  EXPECT_EQ(batched.pack_writes, 1);
  EXPECT_EQ(batched.journals, 1);
  std::printf("file fsyncs: %lld batched, %lld per file\n", (long long)batched.file_syncs,
              (long long)unbatched.file_syncs);
  EXPECT_EQ(batched.file_syncs, 7);
  EXPECT_LE(batched.file_syncs * 8, unbatched.file_syncs)
      << batched.file_syncs << " vs " << unbatched.file_syncs;
}

// Counts the listings of each dir.
class ListingCounter : public ForwardingFileSystem {
 public:
  using ForwardingFileSystem::ForwardingFileSystem;
  Result<std::vector<DirEntry>> ListDir(const std::string& path) override {
    ++listings[path];
    return ForwardingFileSystem::ListDir(path);
  }
  std::map<std::string, int> listings;
};

// A listing costs an open, an fstat, two getdents and a close; at 1,000
// crashed partitions the loads' three listings per partition were a sixth
// of their system calls. The presave lists every dir; the load starts from
// that listing and keeps it up to date (load_dir_listing.h).
TEST_F(BatchedSyncCrashTest, ACrashedPartitionIsListedByThePresaveOnly) {
  MemFileSystem mem;
  Seed(&mem, log_dir_);
  ListingCounter counter(&mem);
  ManualClock clock(kT0 + 1000);
  LogManager manager(Options(&counter, &clock, true));
  ASSERT_TRUE(manager.Startup({log_dir_}, SmallSegments(), 1).ok());
  EXPECT_FALSE(manager.HasFailures()) << manager.ReportJson().dump();
  // Partition 2 recovers only its active segment and writes a snapshot:
  // pass 6 takes the snapshot names from the load's own listing.
  EXPECT_EQ(counter.listings[PartitionDir(log_dir_, 2)], 1);
}

// Holds the start's first SyncFileSystem (the probe that decides whether to
// batch) until a partition dir has been listed, for up to 10 s, and records
// what changes the file system from then on, before and after it answered.
class ProbeGate : public ForwardingFileSystem {
 public:
  ProbeGate(FileSystem* base, std::string log_dir)
      : ForwardingFileSystem(base), log_dir_(std::move(log_dir)) {}
  Status SyncFileSystem(const std::string& path) override {
    if (syncs_++ == 0) {
      std::unique_lock<std::mutex> lock(mu_);
      probing_ = true;
      listed_while_probing =
          cv_.wait_for(lock, std::chrono::seconds(10), [this] { return partition_listings_ > 0; });
      Status st = ForwardingFileSystem::SyncFileSystem(path);
      answered_ = true;
      return st;
    }
    return ForwardingFileSystem::SyncFileSystem(path);
  }
  Result<std::vector<DirEntry>> ListDir(const std::string& path) override {
    if (path != log_dir_) {
      std::lock_guard<std::mutex> lock(mu_);
      ++partition_listings_;
      cv_.notify_all();
    }
    return ForwardingFileSystem::ListDir(path);
  }
  Result<std::unique_ptr<File>> Open(const std::string& path, OpenMode mode) override {
    if (mode != OpenMode::kRead) Changed(path);
    return ForwardingFileSystem::Open(path, mode);
  }
  Status Rename(const std::string& from, const std::string& to) override {
    Changed(to);
    return ForwardingFileSystem::Rename(from, to);
  }
  Status Remove(const std::string& path) override {
    Changed(path);
    return ForwardingFileSystem::Remove(path);
  }
  Status CreateDir(const std::string& path) override {
    Changed(path);
    return ForwardingFileSystem::CreateDir(path);
  }

  bool listed_while_probing = false;
  std::vector<std::string> changed_before_answer;
  std::vector<std::string> changed_after_answer;

 private:
  void Changed(const std::string& path) {
    std::lock_guard<std::mutex> lock(mu_);
    if (probing_) (answered_ ? changed_after_answer : changed_before_answer).push_back(path);
  }

  const std::string log_dir_;
  std::atomic<int> syncs_{0};
  std::mutex mu_;
  std::condition_variable cv_;
  int partition_listings_ = 0;
  bool probing_ = false;
  bool answered_ = false;
};

// The probe's syncfs costs a device flush (14-20 ms on the benchmark VM, a
// tenth of a crashed start of 1,000 partitions), and after a crash it
// writes back what the killed broker left in the page cache: the presave
// lists the partitions meanwhile, and writes nothing before the answer.
TEST_F(BatchedSyncCrashTest, ThePresaveListsWhileTheProbeSyncsAndWritesOnlyAfterIt) {
  MemFileSystem mem;
  Seed(&mem, log_dir_);
  ProbeGate gate(&mem, log_dir_);
  ManualClock clock(kT0 + 1000);
  LogManager manager(Options(&gate, &clock, true));
  ASSERT_TRUE(manager.Startup({log_dir_}, SmallSegments(), 2).ok());
  EXPECT_FALSE(manager.HasFailures()) << manager.ReportJson().dump();
  EXPECT_TRUE(gate.listed_while_probing);
  EXPECT_TRUE(gate.changed_before_answer.empty())
      << gate.changed_before_answer.size() << " changes, the first "
      << gate.changed_before_answer.front();
  // And the start batched: it wrote the dir's pack (and removed it).
  const std::string pack = JoinPath(log_dir_, kLoadUndoPackFileName);
  EXPECT_NE(std::find(gate.changed_after_answer.begin(), gate.changed_after_answer.end(), pack),
            gate.changed_after_answer.end());
  EXPECT_FALSE(mem.Exists(pack));
}

// Crashes the start at every operation, after a power loss and after a
// kill. Without `torn_tail` (every load derived-only), the recovery-point
// checkpoint found afterwards also never exceeds the seeded one: the start
// did not sync what it rebuilt, so it must not vouch for it; and the next
// start rebuilds every index of the segments below the active one as the
// uninterrupted start did (as its shutdown writes them), whatever the power
// loss took of them.
void BatchedSyncCrashTest::CrashAtEveryStep(bool torn_tail, IndexDamage damage) {
  const std::string& log_dir = log_dir_;
  MemFileSystem seeded;
  Seed(&seeded, log_dir, torn_tail, damage);
  auto seeded_points =
      OffsetCheckpointFile::Open(JoinPath(log_dir, kRecoveryPointCheckpointFile), &seeded)->Read();
  ASSERT_TRUE(seeded_points.ok());
  const Reference ref = Run(true, torn_tail, damage);
  ASSERT_GT(ref.ops, 20u);
  ASSERT_GT(ref.pack_removal, 0u);
  for (uint64_t n = 1; n <= ref.ops; ++n) {
    for (int kill = 0; kill < 2; ++kill) {
      SCOPED_TRACE("crash at op " + std::to_string(n) + (kill ? " (kill)" : " (power loss)"));
      MemFileSystem mem;
      Seed(&mem, log_dir, torn_tail, damage);
      MemFileSystem image;
      CrashStartAt(n, kill ? CrashMode::kKill : CrashMode::kPower, /*batch=*/true, &mem, &image);
      MemFileSystem& after = kill ? mem : image;
      // A partition found as loaded with no pack left to roll it back has a
      // checkpointed point no higher than the uninterrupted start's: a point
      // a load lowered is durable before the pack's removal is. A partition
      // whose load changes no file (its indexes left deferred) looks loaded
      // from the first operation on: it is known to be only once the start
      // has removed the pack.
      if (!torn_tail && !after.Exists(JoinPath(log_dir, kLoadUndoPackFileName))) {
        auto points =
            OffsetCheckpointFile::Open(JoinPath(log_dir, kRecoveryPointCheckpointFile), &after)
                ->Read();
        ASSERT_TRUE(points.ok()) << points.status().ToString();
        for (int p = 0; p < kPartitions; ++p) {
          const TopicPartition tp{"batched", p};
          const Image found = after.Files(PartitionDir(log_dir, p));
          if (found != ref.after[size_t(p)]) continue;
          if (found == ref.before[size_t(p)] && n <= ref.pack_removal) continue;
          ASSERT_TRUE(points->count(tp) && ref.recovery_points.count(tp)) << tp.ToString();
          EXPECT_LE(points->at(tp), ref.recovery_points.at(tp)) << tp.ToString();
        }
      }
      ASSERT_TRUE(RollBackLoadUndoPack(&after, log_dir).ok());
      EXPECT_FALSE(after.Exists(JoinPath(log_dir, kLoadUndoPackFileName)));
      for (int p = 0; p < kPartitions; ++p) {
        const std::string dir = PartitionDir(log_dir, p);
        auto rolled = LoadTransaction::RollBackInterrupted(&after, dir);
        ASSERT_TRUE(rolled.ok()) << rolled.status().ToString();
        const Image now = after.Files(dir);
        EXPECT_TRUE(now == ref.before[size_t(p)] || now == ref.after[size_t(p)])
            << "partition " << p << " is neither as found nor as loaded";
      }
      if (!torn_tail) {
        auto points =
            OffsetCheckpointFile::Open(JoinPath(log_dir, kRecoveryPointCheckpointFile), &after)
                ->Read();
        ASSERT_TRUE(points.ok()) << points.status().ToString();
        for (const auto& [tp, point] : *points) {
          EXPECT_LE(point, seeded_points->at(tp)) << tp.ToString();
        }
      }
      ManualClock clock(kT0 + 2000);
      LogManager next(Options(&after, &clock, true));
      ASSERT_TRUE(next.Startup({log_dir}, SmallSegments(), 1).ok());
      EXPECT_FALSE(next.HasFailures()) << next.ReportJson().dump();
      std::vector<std::vector<int64_t>> bases(kPartitions);
      for (int p = 0; p < kPartitions; ++p) {
        Log* log = next.GetLog({"batched", p});
        ASSERT_NE(log, nullptr);
        EXPECT_EQ(log->log_end_offset(), ref.log_end[size_t(p)]) << "partition " << p;
        bases[size_t(p)] = log->segment_base_offsets();
      }
      if (torn_tail) continue;
      ASSERT_TRUE(next.Shutdown().ok());
      for (int p = 0; p < kPartitions; ++p) {
        const Image now = after.Files(PartitionDir(log_dir, p));
        const Image& closed = ref.closed[size_t(p)];
        for (size_t s = 0; s + 1 < bases[size_t(p)].size(); ++s) {
          const int64_t base = bases[size_t(p)][s];
          for (const std::string& index : {OffsetIndexFileName(PartitionDir(log_dir, p), base),
                                           TimeIndexFileName(PartitionDir(log_dir, p), base)}) {
            auto found = now.find(index);
            auto loaded = closed.find(index);
            ASSERT_TRUE(found != now.end() && loaded != closed.end()) << index;
            EXPECT_EQ(found->second, loaded->second) << index;
          }
        }
      }
    }
  }
}

TEST_F(BatchedSyncCrashTest, CrashAtEveryStepLeavesEachPartitionOldOrNew) {
  CrashAtEveryStep(/*torn_tail=*/true);
}

// Loads that only rebuild indexes and snapshots: the presave's syncfs is
// the start's only one (the pack's removal is
// made durable by an fsync of the log dir), and crashing anywhere still leaves each partition as
// found or as loaded, with recovery points that vouch for nothing unsynced.
TEST_F(BatchedSyncCrashTest, AStartThatOnlyRebuildsDerivedFilesSyncsNoneOfThem) {
  const Reference ref = Run(true, /*torn_tail=*/false);
  // The probe's (LogManager::CanBatchSyncs) and the presave's.
  EXPECT_EQ(ref.fs_syncs, 2);
  EXPECT_EQ(ref.journals, 0);
  // Each recovery point stays where Kafka's loader leaves it: the seeded
  // one, all below the log end.
  MemFileSystem seeded;
  Seed(&seeded, log_dir_, /*torn_tail=*/false);
  auto points =
      OffsetCheckpointFile::Open(JoinPath(log_dir_, kRecoveryPointCheckpointFile), &seeded)->Read();
  ASSERT_TRUE(points.ok());
  EXPECT_EQ(ref.recovery_points, *points);
  CrashAtEveryStep(/*torn_tail=*/false);
}

// After a start whose loads only rebuilt derived files, nothing is synced
// once the presave's syncfs has run: the pack goes without an fsync of the
// log dir, and the checkpoints, which would say what they say, stay as
// found (made durable by the probe's syncfs, after they were read). The
// first checkpoint written afterwards (here once every log is flushed,
// which raises every recovery point) fsyncs the log dir first, so that a
// power loss cannot bring back the pack under it.
TEST_F(BatchedSyncCrashTest, ADerivedOnlyStartSyncsNothingAfterItsPresave) {
  MemFileSystem mem;
  Seed(&mem, log_dir_, /*torn_tail=*/false);
  // The other two checkpoints as the killed broker left them.
  OffsetMap high_watermarks;
  for (int p = 0; p < kPartitions; ++p) high_watermarks[{"batched", p}] = 0;
  for (const auto& [name, offsets] :
       {std::pair{kLogStartOffsetCheckpointFile, OffsetMap{}},
        std::pair{kReplicationOffsetCheckpointFile, high_watermarks}}) {
    auto cp = OffsetCheckpointFile::Open(JoinPath(log_dir_, name), &mem);
    ASSERT_TRUE(cp.ok());
    ASSERT_TRUE(cp->Write(offsets).ok());
  }
  FaultInjectionFileSystem fault(&mem);
  ManualClock clock(kT0 + 1000);
  LogManager manager(Options(&fault, &clock, true));
  ASSERT_TRUE(manager.Startup({log_dir_}, SmallSegments(), 1).ok());
  ASSERT_FALSE(manager.HasFailures()) << manager.ReportJson().dump();
  const std::vector<std::string> start = fault.op_log();
  size_t presave_sync = 0;
  for (size_t i = 0; i < start.size(); ++i) {
    if (start[i].find(" sync-fs ") != std::string::npos) presave_sync = i;
  }
  ASSERT_GT(presave_sync, 0u);
  int pack_removals = 0;
  for (size_t i = presave_sync + 1; i < start.size(); ++i) {
    const std::string& op = start[i];
    EXPECT_EQ(op.find(" sync"), std::string::npos) << op;
    EXPECT_EQ(op.find("checkpoint"), std::string::npos) << op;
    if (op.find(" remove ") != std::string::npos &&
        op.find(kLoadUndoPackFileName) != std::string::npos)
      ++pack_removals;
  }
  EXPECT_EQ(pack_removals, 1);

  // A flush is the first thing after the start to rely on its state: the
  // log dir's fsync (the pack's removal) comes before the flush's first.
  for (int p = 0; p < kPartitions; ++p)
    ASSERT_TRUE(manager.GetLog({"batched", p})->FlushAll().ok());
  ASSERT_TRUE(manager.CheckpointRecoveryPoints(/*all=*/true).ok());
  const std::vector<std::string> after = fault.op_log();
  auto syncs_log_dir = [this](const std::string& op) {
    const std::string dir_sync = " sync-dir " + log_dir_;
    return op.size() >= dir_sync.size() &&
           op.compare(op.size() - dir_sync.size(), dir_sync.size(), dir_sync) == 0;
  };
  size_t first_sync = after.size();
  for (size_t i = start.size(); i < after.size() && first_sync == after.size(); ++i) {
    if (after[i].find(" sync") != std::string::npos) first_sync = i;
  }
  ASSERT_LT(first_sync, after.size());
  EXPECT_TRUE(syncs_log_dir(after[first_sync]))
      << "a flush synced before the pack's removal was durable: " << after[first_sync];
  EXPECT_EQ(std::count_if(after.begin() + std::ptrdiff_t(start.size()), after.end(), syncs_log_dir),
            2)
      << "the barrier's, then the checkpoint's own";
}

// The bases of partition 2's segments from its second up to its active one
// (exclusive): those Seed damages.
std::vector<int64_t> DamagedBases(const Reference& ref, int64_t active_base) {
  std::vector<int64_t> bases;
  for (const auto& [path, bytes] : ref.before[2]) {
    Result<int64_t> base = OffsetFromFileName(BaseName(path));
    if (HasSuffix(path, kLogFileSuffix) && base.ok() && *base > 0 && *base < active_base) {
      bases.push_back(*base);
    }
  }
  return bases;
}

Reference BatchedSyncCrashTest::RunExpectingThePointLowered(IndexDamage damage,
                                                            std::vector<int64_t>* damaged) {
  const Reference ref = Run(true, /*torn_tail=*/false, damage);
  EXPECT_EQ(ref.fs_syncs, 2);
  EXPECT_EQ(ref.journals, 0);
  MemFileSystem seeded;
  Seed(&seeded, log_dir_, /*torn_tail=*/false, damage);
  auto points =
      OffsetCheckpointFile::Open(JoinPath(log_dir_, kRecoveryPointCheckpointFile), &seeded)->Read();
  EXPECT_TRUE(points.ok());
  if (!points.ok()) return ref;
  const TopicPartition two{"batched", 2};
  *damaged = DamagedBases(ref, points->at(two));
  EXPECT_FALSE(damaged->empty());
  if (damaged->empty()) return ref;
  OffsetMap expected = *points;
  expected[two] = *std::min_element(damaged->begin(), damaged->end());
  EXPECT_EQ(ref.recovery_points, expected);
  return ref;
}

// Indexes missing below a recovery point (partition 2's, from its second
// segment up to the active one): the load rebuilds them in memory and
// creates no file for them (IndexFile's deferred files), and instead of a
// sync it lowers the point to the lowest of their segments, so that no
// checkpoint vouches for them until a flush has created and synced them.
// Should they never reach the disk, the next start rebuilds them as this
// one did. The shutdown writes them. Crashing anywhere leaves each
// partition as found or as loaded, and the next start's shutdown writes
// every index.
TEST_F(BatchedSyncCrashTest, IndexesMissingBelowARecoveryPointStayInMemoryAndLowerIt) {
  std::vector<int64_t> damaged;
  const Reference ref = RunExpectingThePointLowered(IndexDamage::kMissing, &damaged);
  for (int64_t base : damaged) {
    for (const std::string& index : {OffsetIndexFileName(PartitionDir(log_dir_, 2), base),
                                     TimeIndexFileName(PartitionDir(log_dir_, 2), base)}) {
      EXPECT_EQ(ref.after[2].count(index), 0u) << index << " was created by the start";
      ASSERT_EQ(ref.closed[2].count(index), 1u) << index << " was not created by the shutdown";
      EXPECT_FALSE(ref.closed[2].at(index).empty()) << index;
    }
  }
  CrashAtEveryStep(/*torn_tail=*/false, IndexDamage::kMissing);
}

// Every index file of a segment wholly below the recovery point
// checkpointed in `after` (of every segment but the last once the
// clean-shutdown marker is there) is as an uninterrupted shutdown writes it
// (ref.closed), and its .timeindex is there whenever its .index is: a
// missing .index is rebuilt, a missing .timeindex alone would be created
// empty, and an index below the point is trusted as found.
void ExpectNoHalfWrittenIndexBelowThePoint(MemFileSystem& after, const std::string& log_dir,
                                           const Reference& ref) {
  auto points =
      OffsetCheckpointFile::Open(JoinPath(log_dir, kRecoveryPointCheckpointFile), &after)->Read();
  ASSERT_TRUE(points.ok()) << points.status().ToString();
  const bool clean = after.Exists(JoinPath(log_dir, kCleanShutdownFileName));
  for (int p = 0; p < kPartitions; ++p) {
    const std::string dir = PartitionDir(log_dir, p);
    const Image now = after.Files(dir);
    std::vector<int64_t> bases;
    for (const auto& [path, bytes] : now) {
      Result<int64_t> base = OffsetFromFileName(BaseName(path));
      if (HasSuffix(path, kLogFileSuffix) && base.ok()) bases.push_back(*base);
    }
    std::sort(bases.begin(), bases.end());
    const int64_t point = points->at({"batched", p});
    for (size_t s = 0; s + 1 < bases.size(); ++s) {
      if (!clean && bases[s + 1] > point) break;  // rebuilt by the next load
      const std::string index = OffsetIndexFileName(dir, bases[s]);
      if (!now.count(index)) continue;  // rebuilt by the next load
      for (const std::string& path : {index, TimeIndexFileName(dir, bases[s])}) {
        ASSERT_TRUE(now.count(path)) << path;
        EXPECT_EQ(now.at(path), ref.closed[size_t(p)].at(path)) << path;
      }
    }
  }
}

// The next start on `after` and its shutdown leave every .index and
// .timeindex as the uninterrupted start's shutdown did (ref.closed).
void ExpectTheNextStartAndShutdownWriteEveryIndex(MemFileSystem& after, const std::string& log_dir,
                                                  const Reference& ref) {
  ManualClock clock(kT0 + 2000);
  {
    LogManager next(Options(&after, &clock, true));
    ASSERT_TRUE(next.Startup({log_dir}, SmallSegments(), 1).ok());
    EXPECT_FALSE(next.HasFailures()) << next.ReportJson().dump();
    ASSERT_TRUE(next.Shutdown().ok());
  }
  for (int p = 0; p < kPartitions; ++p) {
    const Image found = after.Files(PartitionDir(log_dir, p));
    for (const auto& [path, bytes] : ref.closed[size_t(p)]) {
      if (!HasSuffix(path, kIndexFileSuffix) && !HasSuffix(path, kTimeIndexFileSuffix)) continue;
      ASSERT_TRUE(found.count(path)) << path;
      EXPECT_EQ(found.at(path), bytes) << path;
    }
  }
}

// The shutdown after such a start creates the deferred indexes. Crashed at
// every operation (after a kill, a power loss, and a power loss that tears
// the last write): every index file of a segment wholly below the
// checkpointed recovery point is as an uninterrupted shutdown writes it,
// and its .timeindex is there whenever its .index is (a missing .index is
// rebuilt, a missing .timeindex alone would be created empty), so no load
// ever trusts an index the crash left empty or half written. The next
// start and its shutdown then write every index.
TEST_F(BatchedSyncCrashTest, AShutdownCrashedAnywhereLeavesNoIndexBelowThePointHalfWritten) {
  const Reference ref = Run(true, /*torn_tail=*/false, IndexDamage::kMissing);
  uint64_t start_ops = 0, total_ops = 0;
  {
    MemFileSystem mem;
    Seed(&mem, log_dir_, /*torn_tail=*/false, IndexDamage::kMissing);
    FaultInjectionFileSystem fault(&mem);
    ManualClock clock(kT0 + 1000);
    LogManager manager(Options(&fault, &clock, true));
    ASSERT_TRUE(manager.Startup({log_dir_}, SmallSegments(), 1).ok());
    start_ops = fault.op_count();
    ASSERT_TRUE(manager.Shutdown().ok());
    total_ops = fault.op_count();
  }
  ASSERT_GT(total_ops, start_ops + 10);
  for (uint64_t n = start_ops + 1; n <= total_ops; ++n) {
    for (CrashMode mode : {CrashMode::kKill, CrashMode::kPower, CrashMode::kTorn}) {
      SCOPED_TRACE("crash at shutdown op " + std::to_string(n) + " (" + CrashModeName(mode) + ")");
      MemFileSystem mem;
      Seed(&mem, log_dir_, /*torn_tail=*/false, IndexDamage::kMissing);
      MemFileSystem image;
      {
        FaultInjectionFileSystem fault(&mem, n);
        ManualClock clock(kT0 + 1000);
        LogManager manager(Options(&fault, &clock, true));
        ASSERT_TRUE(manager.Startup({log_dir_}, SmallSegments(), 1).ok());
        fault.CrashAt(n);
        (void)manager.Shutdown();
        if (mode != CrashMode::kKill) {
          ASSERT_TRUE(
              fault.MaterializeDurableState(&image, log_dir_, mode == CrashMode::kTorn).ok());
        }
      }
      MemFileSystem& after = mode == CrashMode::kKill ? mem : image;
      ExpectNoHalfWrittenIndexBelowThePoint(after, log_dir_, ref);
      ExpectTheNextStartAndShutdownWriteEveryIndex(after, log_dir_, ref);
    }
  }
}

// A start that cannot lower the recovery point below the indexes it
// rebuilt because they were missing (partition 2 lost only its second
// segment's; the segments after it keep theirs), after a crash or after a
// clean shutdown (every point at its log end), with batched syncs or
// without (each load then commits its own undo log): it creates their files
// while the load's transaction still records, so that crashing anywhere in
// the start leaves no index below the recovery point empty or half written
// (rolled back instead). The next start and its shutdown write every index.
TEST_F(BatchedSyncCrashTest,
       AStartThatCannotLowerThePointCreatesTheRebuiltIndexesInItsTransaction) {
  for (auto [batch, clean] : {std::pair{true, false}, std::pair{true, true},
                              std::pair{false, false}, std::pair{false, true}}) {
    SCOPED_TRACE(std::string(clean ? "clean" : "crashed") + (batch ? ", batched" : ""));
    const Reference ref = Run(batch, /*torn_tail=*/false, IndexDamage::kMissingSecond, clean);
    const std::vector<int64_t> damaged = DamagedBases(ref, INT64_MAX);
    ASSERT_FALSE(damaged.empty());
    const int64_t second = *std::min_element(damaged.begin(), damaged.end());
    const std::string index = OffsetIndexFileName(PartitionDir(log_dir_, 2), second);
    EXPECT_EQ(ref.before[2].count(index), 0u);
    EXPECT_EQ(ref.after[2].count(index), 1u) << "created by the start";
    for (uint64_t n = 1; n <= ref.ops; ++n) {
      for (CrashMode mode : {CrashMode::kKill, CrashMode::kPower, CrashMode::kTorn}) {
        SCOPED_TRACE("crash at op " + std::to_string(n) + " (" + CrashModeName(mode) + ")");
        MemFileSystem mem;
        Seed(&mem, log_dir_, /*torn_tail=*/false, IndexDamage::kMissingSecond, clean);
        MemFileSystem image;
        CrashStartAt(n, mode, batch, &mem, &image);
        MemFileSystem& after = mode == CrashMode::kKill ? mem : image;
        ASSERT_TRUE(RollBackLoadUndoPack(&after, log_dir_).ok());
        for (int p = 0; p < kPartitions; ++p) {
          auto rolled = LoadTransaction::RollBackInterrupted(&after, PartitionDir(log_dir_, p));
          ASSERT_TRUE(rolled.ok()) << rolled.status().ToString();
        }
        ExpectNoHalfWrittenIndexBelowThePoint(after, log_dir_, ref);
        ExpectTheNextStartAndShutdownWriteEveryIndex(after, log_dir_, ref);
      }
    }
  }
}

// Indexes rebuilt in place below a recovery point (partition 2's .timeindex
// files, whose segments the load recovers because their .index is missing):
// instead of a syncfs for them, the load lowers the point to the lowest of
// their segments, so the next unclean start rebuilds them again, and no more.
// Crashing anywhere leaves each partition as found or as loaded, and the
// next start's shutdown writes every index as the uninterrupted one's did.
TEST_F(BatchedSyncCrashTest, IndexesRebuiltBelowARecoveryPointLowerItInsteadOfASync) {
  std::vector<int64_t> damaged;
  RunExpectingThePointLowered(IndexDamage::kMissingOffsetIndex, &damaged);
  CrashAtEveryStep(/*torn_tail=*/false, IndexDamage::kMissingOffsetIndex);
}

}  // namespace
}  // namespace daruma::testing
