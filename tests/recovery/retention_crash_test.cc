// Crash tests of retention deletion (issue 6 proof; spec §11.2): a crash or
// an I/O error at every mutating file-system operation of the retention path
// run by LogManager's jobs, then recovery, twice.
//
// Per kind (time, size, log-start-offset breach), the log `events-0` is
// built fault-free (small segments, an idempotent producer so producer
// snapshots exist at segment bases, everything flushed, clean shutdown,
// high watermark = LEO). Then, on a FaultInjectionFileSystem, a LogManager
// with kManual jobs: Startup; for the start-offset kind
// Log::MaybeIncrementLogStartOffset (DeleteRecords); at +1 s the retention job
// (segments and snapshots renamed to `.deleted`) and the checkpoint jobs
// (log-start-offset-checkpoint, recovery points); at +3 s the delayed
// "delete-file" job (the manager is then dropped). Op N of that run crashes (kill:
// the page cache survives; power / torn: only synced data and dir-synced
// names survive, torn adds a prefix of the last unsynced write) or fails once
// (EIO / ENOSPC; the dir goes offline and the run goes on as a broker would).
//
// Invariants proved on every image (`target` = the log start offset the
// fault-free run ends with; `checkpointed` = the image's
// log-start-offset-checkpoint entry before recovery, 0 if none):
//   1. recovery succeeds and serves `events-0`;
//   2. checkpointed <= recovered log start offset <= target: the log start
//      never goes back below what was durably checkpointed, and retention
//      never removes more than it decided to;
//   3. no retained record is lost: every offset in [recovered log start, LEO)
//      is served with the value written there, and the LEO is unchanged (so
//      every record at or above `target` is there);
//   4. the log is consistent: every batch valid and contiguous
//      (log_invariants.h ScanLog), offset indexes point at batches,
//      producer state equals a re-scan's;
//   5. no `.deleted` file is left in the partition dir by recovery (it
//      quarantines them: daruma-quarantine/, recovery/quarantine.h), and
//      the log-start-offset checkpoint written by recovery holds the
//      recovered log start (or no entry when it equals the first segment's
//      base);
//   6. a second recovery (after dropping the first manager like a crash)
//      changes no file and gives the same log start offset.
#include <gtest/gtest.h>

#include <filesystem>
#include <iostream>
#include <nlohmann/json.hpp>

#include "recovery/crash_workload.h"
#include "support/fault_injection_file_system.h"
#include "support/mem_file_system.h"
#include "support/test_support.h"

namespace daruma::testing {
namespace {

constexpr int64_t kMinute = 60000;
constexpr int64_t kHour = 60 * kMinute;
constexpr int kRecords = 24;
const TopicPartition kEvents{"events", 0};

enum class Kind { kTime, kSize, kStartOffset };

// The CTest name shows the kind, not the enum's bytes.
void PrintTo(Kind kind, std::ostream* os) {
  *os << (kind == Kind::kTime ? "Time" : kind == Kind::kSize ? "Size" : "StartOffset");
}
enum class RetentionMode { kKill, kPower, kTorn, kEio, kEnospc };

const char* KindName(Kind k) {
  return k == Kind::kTime ? "time" : k == Kind::kSize ? "size" : "start-offset";
}

const char* ModeName(RetentionMode m) {
  constexpr const char* kNames[] = {"kill", "power", "torn", "eio", "enospc"};
  return kNames[int(m)];
}

// Record i has timestamp kWorkloadNowMs + i minutes and is about 60 bytes, so
// a 400-byte segment holds 4-5 records.
LogConfig RetentionConfig(Kind kind) {
  LogConfig c;
  c.segment_bytes = 400;
  c.index_interval_bytes = 60;
  c.segment_index_bytes = 240;
  c.file_delete_delay_ms = 2000;
  c.retention_ms = kind == Kind::kTime ? 10 * kHour : -1;
  c.retention_bytes = kind == Kind::kSize ? 800 : -1;
  return c;
}

// Clock at the retention run: records 0-19 are older than retention.ms (time).
constexpr int64_t kRunStartMs = kWorkloadNowMs + 10 * kHour + 20 * kMinute;
constexpr int64_t kDeleteRecordsOffset = 13;  // start-offset kind

std::string Value(int i) {
  return "value-" + std::to_string(i) + std::string(size_t(i % 5) * 7, 'x');
}

LogManagerOptions JobOptions(FileSystem* fs, Clock* clock) {
  LogManagerOptions o;
  o.fs = fs;
  o.clock = clock;
  o.jobs.enabled = true;
  o.jobs.mode = Scheduler::Mode::kManual;
  o.jobs.initial_delay_ms = 1000;
  o.jobs.retention_check_interval_ms = 1000;
  o.jobs.recovery_point_checkpoint_interval_ms = 1000;
  o.jobs.log_start_offset_checkpoint_interval_ms = 1000;
  o.jobs.dirty_checkpoint_tick_ms = 1000;
  return o;
}

// Builds `events-0` on `fs` fault-free: plain and idempotent batches of one
// record, HW = LEO, clean shutdown.
void BuildLog(FileSystem* fs, const std::string& log_dir, const LogConfig& config) {
  ManualClock clock(kWorkloadNowMs + kRecords * kMinute);
  LogManagerOptions o;
  o.fs = fs;
  o.clock = &clock;
  LogManager manager(o);
  ASSERT_TRUE(manager.Startup({log_dir}, config, 1).ok());
  auto log = manager.GetOrCreateLog(kEvents, Uuid(), config);
  ASSERT_TRUE(log.ok()) << log.status().ToString();
  for (int i = 0; i < kRecords; ++i) {
    RecordInput r;
    r.timestamp = kWorkloadNowMs + i * kMinute;
    r.key = "k" + std::to_string(i % 3);
    r.value = Value(i);
    BatchBuilderOptions b;
    if (i % 2 == 1) {
      b.producer_id = 4000;
      b.producer_epoch = 0;
      b.base_sequence = i / 2;
    }
    auto batch = BuildRecordBatch(b, {r});
    ASSERT_TRUE(batch.ok());
    auto info = (*log)->AppendAsLeader(*batch, 0);
    ASSERT_TRUE(info.ok()) << info.status().ToString();
  }
  (*log)->UpdateHighWatermark((*log)->log_end_offset());
  ASSERT_TRUE(manager.Shutdown().ok());
}

// The run under test (see the file comment). Stops at the first error it
// sees directly; job errors take the dir offline and the run goes on.
Status RunRetention(FileSystem* fs, const std::string& log_dir, Kind kind) {
  ManualClock clock(kRunStartMs);
  LogManager manager(JobOptions(fs, &clock));
  DARUMA_RETURN_IF_ERROR(manager.Startup({log_dir}, RetentionConfig(kind), 1));
  Log* log = manager.GetLog(kEvents);
  if (log == nullptr) return Status::IoError("events-0 not loaded");
  if (kind == Kind::kStartOffset) {
    DARUMA_RETURN_IF_ERROR(log->MaybeIncrementLogStartOffset(kDeleteRecordsOffset));
  }
  clock.Advance(1000);  // retention, then the checkpoints
  manager.RunDueJobsForTest();
  clock.Advance(2000);  // delete-file
  manager.RunDueJobsForTest();
  // No Shutdown: the crash matrix covers it; ending here keeps every point
  // of the retention path cheap to run.
  return manager.failure_channel().ErrorFor(log_dir);
}

int64_t CheckpointedStart(FileSystem* fs, const std::string& log_dir, std::string* problem) {
  auto file = OffsetCheckpointFile::Open(JoinPath(log_dir, kLogStartOffsetCheckpointFile), fs);
  auto map = file.ok() ? file->Read() : Result<OffsetMap>(file.status());
  if (!map.ok()) {
    *problem = "log-start-offset-checkpoint unreadable: " + map.status().ToString();
    return 0;
  }
  auto it = map->find(kEvents);
  return it == map->end() ? 0 : it->second;
}

class RetentionCrashTest : public ::testing::TestWithParam<Kind> {
 protected:
  void SetUp() override {
    log_dir_ = tmp_.Join("logs");
    std::filesystem::create_directories(log_dir_);  // DirLock uses the real file system
  }

  // A fresh copy of the fault-free log (built once per test).
  std::unique_ptr<MemFileSystem> BuiltBase() {
    if (!built_) {
      built_ = std::make_unique<MemFileSystem>();
      EXPECT_TRUE(built_->CreateDir(log_dir_).ok());
      BuildLog(built_.get(), log_dir_, RetentionConfig(GetParam()));
    }
    auto base = std::make_unique<MemFileSystem>();
    Status st = CopyTreeBetween(built_.get(), base.get(), log_dir_);
    EXPECT_TRUE(st.ok()) << st.ToString();
    return base;
  }

  // Runs the retention run with one fault; returns the image to recover.
  std::unique_ptr<MemFileSystem> RunWithFault(uint64_t point, RetentionMode mode,
                                              std::string* last_op) {
    auto base = BuiltBase();
    FaultInjectionFileSystem fs(base.get(), point);
    if (mode == RetentionMode::kEio || mode == RetentionMode::kEnospc) {
      fs.FailAt(point, mode == RetentionMode::kEio ? InjectedError::kEio : InjectedError::kEnospc);
    } else {
      fs.CrashAt(point);
    }
    (void)RunRetention(&fs, log_dir_, GetParam());
    const auto log = fs.op_log();
    *last_op = log.empty() ? "" : log.back();
    if (mode != RetentionMode::kPower && mode != RetentionMode::kTorn) return base;
    auto image = std::make_unique<MemFileSystem>();
    Status m = fs.MaterializeDurableState(image.get(), log_dir_, mode == RetentionMode::kTorn);
    EXPECT_TRUE(m.ok()) << m.ToString();
    return image;
  }

  // Recovers `image` and returns problems found (empty = every invariant
  // holds). *start gets the recovered log start offset.
  std::vector<std::string> RecoverAndCheck(MemFileSystem* image, int64_t* start) {
    std::vector<std::string> problems;
    std::string problem;
    const int64_t checkpointed = CheckpointedStart(image, log_dir_, &problem);
    if (!problem.empty()) problems.push_back(problem);
    ManualClock clock(kRunStartMs);
    LogManagerOptions o;
    o.fs = image;
    o.clock = &clock;
    std::map<std::string, std::string> first;
    {
      LogManager manager(o);
      Status st = manager.Startup({log_dir_}, RetentionConfig(GetParam()), 1);
      Log* log = manager.GetLog(kEvents);
      if (!st.ok() || manager.HasFailures() || log == nullptr) {
        return {"recovery failed: " + st.ToString() + " " + manager.ReportJson().dump()};
      }
      *start = log->log_start_offset();
      CheckLog(log, checkpointed, &problems);
      first = DirListing(*image, log_dir_);
      for (const auto& [path, what] : first) {
        // Recovery quarantines what it removes (recovery/quarantine.h); only
        // the partition dir itself must be free of them.
        const bool quarantined = path.find("/daruma-quarantine/") != std::string::npos;
        if (path.find(".deleted") != std::string::npos && !quarantined) {
          problems.push_back(path + " survived recovery");
        }
      }
      const std::vector<int64_t> bases = log->segment_base_offsets();
      const int64_t expected = bases.empty() || *start == bases.front() ? 0 : *start;
      std::string unreadable;
      const int64_t written = CheckpointedStart(image, log_dir_, &unreadable);
      if (!unreadable.empty() || written != expected) {
        problems.push_back("log-start-offset-checkpoint after recovery holds " +
                           std::to_string(written) + ", expected " + std::to_string(expected) +
                           unreadable);
      }
    }
    LogManager again(o);
    Status st = again.Startup({log_dir_}, RetentionConfig(GetParam()), 1);
    Log* log = again.GetLog(kEvents);
    if (!st.ok() || again.HasFailures() || log == nullptr) {
      problems.push_back("second recovery failed: " + st.ToString());
      return problems;
    }
    if (log->log_start_offset() != *start) {
      problems.push_back("second recovery moved the log start to " +
                         std::to_string(log->log_start_offset()));
    }
    const auto second = DirListing(*image, log_dir_);
    if (first != second)
      problems.push_back("second recovery changed:" + ListingDiff(first, second));
    return problems;
  }

  void CheckLog(Log* log, int64_t checkpointed, std::vector<std::string>* problems) const {
    const int64_t start = log->log_start_offset();
    if (start < checkpointed) {
      problems->push_back("log start " + std::to_string(start) + " is below the checkpointed " +
                          std::to_string(checkpointed));
    }
    if (start > target_) {
      problems->push_back("log start " + std::to_string(start) + " is above retention's target " +
                          std::to_string(target_) + ": retained records lost");
    }
    if (log->log_end_offset() != kRecords) {
      problems->push_back("LEO " + std::to_string(log->log_end_offset()));
    }
    LogScan scan = ScanLog(log);
    for (const auto& s : scan.invalid) problems->push_back(s);
    int64_t next = start;
    for (const ScannedRecord& r : scan.records) {
      if (r.offset != next++ || r.value != Value(int(r.offset))) {
        problems->push_back("offset " + std::to_string(r.offset) + " holds " +
                            r.value.value_or("<null>") + ", not what was written");
        break;
      }
    }
    if (next != kRecords) {
      problems->push_back("records end at " + std::to_string(next) + ", not at the LEO");
    }
    for (const auto& p : CheckIndexes(log)) problems->push_back(p);
    for (const auto& p : CheckProducerState(log, scan)) problems->push_back(p);
  }

  TempDir tmp_;
  std::string log_dir_;
  std::unique_ptr<MemFileSystem> built_;
  int64_t target_ = 0;
};

TEST_P(RetentionCrashTest, EveryCrashPointKeepsTheLogConsistentAndRetainedRecords) {
  // The fault-free run: how many operations, and where the log start ends.
  uint64_t total = 0;
  {
    auto base = BuiltBase();
    FaultInjectionFileSystem fs(base.get());
    Status st = RunRetention(&fs, log_dir_, GetParam());
    ASSERT_TRUE(st.ok()) << st.ToString();
    total = fs.op_count();
    target_ = kRecords;  // checked below against the recovered value
    int64_t start = -1;
    const auto problems = RecoverAndCheck(base.get(), &start);
    ASSERT_TRUE(problems.empty()) << problems[0];
    target_ = start;
    ASSERT_GT(target_, 0) << "retention deleted nothing";
    ASSERT_LT(target_, kRecords);
    if (GetParam() == Kind::kStartOffset) {
      EXPECT_EQ(target_, kDeleteRecordsOffset);
    }
  }
  int64_t points = 0;
  int64_t failures = 0;
  std::map<int64_t, int64_t> starts;  // recovered log start -> images
  for (uint64_t point = 1; point <= total + 1; ++point) {
    for (RetentionMode mode : {RetentionMode::kKill, RetentionMode::kPower, RetentionMode::kTorn,
                               point % 2 ? RetentionMode::kEio : RetentionMode::kEnospc}) {
      std::string last_op;
      auto image = RunWithFault(point, mode, &last_op);
      int64_t start = -1;
      const auto problems = RecoverAndCheck(image.get(), &start);
      ++points;
      ++starts[start];
      if (problems.empty()) continue;
      if (++failures <= 5) {
        ADD_FAILURE() << KindName(GetParam()) << " " << ModeName(mode) << "@" << point << " ["
                      << last_op << "]: " << problems[0] << " (+" << problems.size() - 1
                      << " more)";
      }
    }
  }
  std::string spread;
  for (const auto& [start, n] : starts) {
    spread += " " + std::to_string(start) + "x" + std::to_string(n);
  }
  std::cout << "RETENTION-CRASH kind=" << KindName(GetParam()) << " ops=" << total
            << " points=" << points << " failures=" << failures << " target=" << target_
            << " log_starts=" << spread << std::endl;
  EXPECT_EQ(failures, 0);
  // Both outcomes occur: crashes before the deletion keep everything,
  // crashes after it recover at the target.
  EXPECT_GT(starts[0], 0);
  EXPECT_GT(starts[target_], 0);
}

INSTANTIATE_TEST_SUITE_P(Kinds, RetentionCrashTest,
                         ::testing::Values(Kind::kTime, Kind::kSize, Kind::kStartOffset),
                         [](const auto& info) {
                           return std::string(info.param == Kind::kTime   ? "Time"
                                              : info.param == Kind::kSize ? "Size"
                                                                          : "StartOffset");
                         });

}  // namespace
}  // namespace daruma::testing
