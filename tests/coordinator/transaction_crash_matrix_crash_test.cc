// The transaction crash matrix: the transactional workload of
// transaction_crash_workload.h on a FaultInjectionFileSystem, crashed at
// operation N, then recovered (LogManager::Startup on the image, new
// coordinators, Load, the clock past every transaction timeout) and checked
// against what clients were told (transaction_crash_model.h): transactions
// are all or nothing for read_committed readers, acknowledged commits keep
// every record, nothing of an aborted or never-committed transaction shows,
// every partition's last stable offset reaches its log end, the consumer
// group's offset moves with its transaction's records, and no producer id
// goes to a second transactional id.
//
// Modes per crash point N (as group_crash_matrix_crash_test.cc):
//   kill         op N and everything after fail; recovery on the file system
//                as it is (the page cache survived: process death).
//   power        only fsynced data and dir-synced names survive.
//   torn         power, plus a random prefix of the last unsynced write.
//   eio/enospc   op N alone fails (alternating) and the workload goes on, as
//                the broker does (the log whose write failed stops writing;
//                the coordinator answers errors for what it could not store,
//                and EndTxn NONE once its decision is stored even when a
//                marker cannot be written); then recovery as after a kill.
//
// The clients behave as Kafka's do after an error: a transaction with a
// failed op is aborted, and the producer starts over with InitProducerId
// before its next transaction (a new epoch) whenever an op failed or its
// EndTxn was not answered NONE. A client that instead kept its epoch would
// (as with Kafka) have its next batch matched as a duplicate of an aborted
// one with the same sequence, or add to the transaction it believes ended.
//
// Environment (scripts/crash-matrix.sh):
//   DARUMA_CRASH_POINTS=all|<count>  every point 1..ops+1 (the default), or
//                                    an evenly spread sample; the first,
//                                    middle and last op of the compaction
//                                    step are always added. The recovery
//                                    paths (a load finishing a decision,
//                                    aborting an open transaction, a torn
//                                    state log tail) must each be hit when
//                                    every point runs.
// Prints "CRASH-MATRIX-TXN ops=.. points=.. ... violations=.." and the first
// examples of each kind of violation.
#include <gtest/gtest.h>

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <iostream>

#include "coordinator/transaction_crash_workload.h"
#include "support/fault_injection_file_system.h"
#include "support/mem_file_system.h"
#include "support/test_support.h"

namespace daruma::testing {
namespace {

using TxnMode = CrashMode;

// Every point 1..total, or DARUMA_CRASH_POINTS of them spread evenly, plus
// the first, middle and last op of the compaction step.
std::vector<uint64_t> TxnCrashPoints(uint64_t total, const TxnWorkloadSteps& steps) {
  std::vector<uint64_t> out;
  const char* env = std::getenv("DARUMA_CRASH_POINTS");
  if (env == nullptr || *env == '\0' || std::string(env) == "all") {
    for (uint64_t i = 1; i <= total; ++i) out.push_back(i);
  } else {
    const uint64_t count = std::clamp<uint64_t>(std::strtoull(env, nullptr, 10), 1, total);
    for (uint64_t i = 0; i < count; ++i) {
      out.push_back(1 + (count == 1 ? 0 : i * (total - 1) / (count - 1)));
    }
  }
  for (const auto& [first, end] : steps.compaction) {
    if (end > first) out.insert(out.end(), {first, first + (end - first) / 2, end - 1});
  }
  std::sort(out.begin(), out.end());
  out.erase(std::unique(out.begin(), out.end()), out.end());
  return out;
}

class TransactionCrashMatrixTest : public ::testing::Test {
 protected:
  void SetUp() override {
    // DirLock uses the real file system: the log dir must exist on disk too.
    log_dir_ = tmp_.Join("logs");
    std::filesystem::create_directories(log_dir_);
  }

  std::unique_ptr<MemFileSystem> FreshBase() const {
    auto base = std::make_unique<MemFileSystem>();
    EXPECT_TRUE(base->CreateDir(log_dir_).ok());
    return base;
  }

  // Runs the workload with one fault at `point` into *history; returns the
  // image to recover.
  std::unique_ptr<MemFileSystem> RunWithFault(uint64_t point, TxnMode mode, TxnHistory* history,
                                              std::string* last_op) {
    auto base = FreshBase();
    GroupTime time(kTxnWorkloadStartMs);
    FaultInjectionFileSystem fs(base.get(), point);
    if (mode == TxnMode::kEio || mode == TxnMode::kEnospc) {
      fs.FailAt(point, mode == TxnMode::kEio ? InjectedError::kEio : InjectedError::kEnospc);
    } else {
      fs.CrashAt(point);
    }
    {
      TxnCrashWorkload workload(&fs, log_dir_, &time, history);
      (void)workload.Run();  // fails at a crash, or completes
    }
    const auto log = fs.op_log();
    *last_op = log.size() >= point ? log[point - 1] : "";
    if (mode != TxnMode::kPower && mode != TxnMode::kTorn) return base;
    auto image = std::make_unique<MemFileSystem>();
    Status m = fs.MaterializeDurableState(image.get(), log_dir_, mode == TxnMode::kTorn);
    EXPECT_TRUE(m.ok()) << m.ToString();
    if (!image->Exists(log_dir_)) {
      EXPECT_TRUE(image->CreateDir(log_dir_).ok());
    }
    return image;
  }

  TempDir tmp_;
  std::string log_dir_;
};

TEST_F(TransactionCrashMatrixTest, TransactionsStayAtomicAcrossEveryCrashPoint) {
  const auto started = std::chrono::steady_clock::now();
  // A fault-free run counts the operations and checks the workload itself.
  uint64_t total = 0;
  TxnWorkloadSteps steps;
  int64_t commits = 0, aborts = 0;
  {
    auto base = FreshBase();
    GroupTime time(kTxnWorkloadStartMs);
    FaultInjectionFileSystem fs(base.get());
    TxnHistory history;
    TxnCrashWorkload workload(&fs, log_dir_, &time, &history, [&fs] { return fs.op_count(); });
    Status st = workload.Run();
    ASSERT_TRUE(st.ok()) << st.ToString();
    total = fs.op_count();
    steps = workload.steps();
    ASSERT_GT(total, 200u);
    ASSERT_EQ(steps.compaction.size(), 1u);
    for (const std::string& u : history.unexpected) ADD_FAILURE() << "unexpected: " << u;
    for (const TxnAttempt& a : history.attempts) {
      commits += a.commit_acked;
      aborts += a.abort_acked;
      EXPECT_EQ(a.acked.size(), a.attempted.size() - (a.label == "zombie-tx#0")) << a.label;
    }
    // Every state partition holds an id, both outcomes happened, every
    // producer got its own id.
    std::set<int32_t> partitions;
    for (const auto& [id, init] : history.last_init) {
      partitions.insert(OffsetsPartitionFor(id, 3));
    }
    EXPECT_EQ(partitions.size(), 3u);
    EXPECT_GE(commits, 10);
    EXPECT_GE(aborts, 5);
    EXPECT_EQ(history.producer_ids.size(), 5u);
    TxnCrashTally clean;
    RecoverTxnsAndCheck(base.get(), log_dir_, history, "no fault", &clean);
    EXPECT_EQ(clean.Violations(), 0) << clean.Summary() << "\n"
                                     << (clean.examples.empty() ? "" : clean.examples[0]);
    EXPECT_EQ(clean.recoveries, 1);
  }

  TxnCrashTally tally;
  int64_t compaction_points = 0;
  for (uint64_t point : TxnCrashPoints(total + 1, steps)) {
    for (TxnMode mode : {TxnMode::kKill, TxnMode::kPower, TxnMode::kTorn,
                         point % 2 ? TxnMode::kEio : TxnMode::kEnospc}) {
      TxnHistory history;
      std::string last_op;
      std::unique_ptr<MemFileSystem> image = RunWithFault(point, mode, &history, &last_op);
      ++tally.points;
      for (const auto& [first, end] : steps.compaction) {
        compaction_points += point >= first && point < end;
      }
      const std::string label =
          std::string(CrashModeName(mode)) + "@" + std::to_string(point) + " [" + last_op + "]";
      RecoverTxnsAndCheck(image.get(), log_dir_, history, label, &tally);
    }
  }
  const auto seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - started).count();
  std::cout << "CRASH-MATRIX-TXN ops=" << total << " " << tally.Summary()
            << " compaction_points=" << compaction_points << " commits=" << commits
            << " aborts=" << aborts << " seconds=" << int64_t(seconds) << std::endl;
  for (const auto& e : tally.examples) std::cout << "  " << e << "\n";
  EXPECT_EQ(tally.Violations(), 0) << tally.Summary();
  EXPECT_EQ(tally.recoveries, tally.points);
  EXPECT_GT(compaction_points, 0);
  const char* env = std::getenv("DARUMA_CRASH_POINTS");
  if (env == nullptr || *env == '\0' || std::string(env) == "all") {
    EXPECT_GT(tally.load_completed, 0);
    EXPECT_GT(tally.load_ongoing, 0);
    EXPECT_GT(tally.undecided_shown, 0);
    EXPECT_GT(tally.undecided_hidden, 0);
    EXPECT_GT(tally.state_log_cut, 0);
  }
}

}  // namespace
}  // namespace daruma::testing
