// The deterministic transactional workload of the transaction crash matrix
// (transaction_crash_matrix_crash_test.cc). Header-only like
// transaction_crash_model.h, which holds the node's settings and the model.
//
// One LogManager (fsync per append) hosts `__transaction_state` (3
// partitions, 1 KiB segments), `__consumer_offsets` (3 partitions) with a
// GroupCoordinator, and the data topics payments (3 partitions) and ledger
// (2); producer ids come in blocks of 2 from the log dir. Clients:
//   payments-tx  (state partition 2) transactions over payments-0/1 and
//                ledger-0, committed and aborted in turn; later one that
//                times out and is aborted by the coordinator's check;
//   ledger-tx    (state partition 0) transactions over ledger-1, payments-2;
//                the last one of phase A stays open across the restart and
//                is aborted once its timeout passes after the load;
//   etl-tx       (state partition 1) consume-transform-produce: a record to
//                a payments partition and a TxnOffsetCommit of etl-app's
//                input offset in the same transaction;
//   zombie-tx    (state partition 1) an instance produces, a second instance
//                fences it (its transaction aborted), the zombie's produce
//                and EndTxn are refused, the new instance commits;
//   late-tx      (state partition 1) appears in phase B (a new producer id
//                block).
// Phase A: a fresh manager, the transactions above, a clean shutdown. Phase
// B: Startup, Load, more transactions, one compaction step (the cleaner
// over the compacted internal topics), the open transaction's timeout, a
// last transaction left open, then the manager is dropped without Shutdown.
//
// After a fault every later call is still made and fails fast; phase B runs
// only after a successful Startup.
#pragma once

#include <functional>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "coordinator/transaction_crash_model.h"

namespace daruma::testing {

inline constexpr char kPayTx[] = "payments-tx";
inline constexpr char kLedgerTx[] = "ledger-tx";
inline constexpr char kEtlTx[] = "etl-tx";
inline constexpr char kZombieTx[] = "zombie-tx";
inline constexpr char kLateTx[] = "late-tx";
inline constexpr int64_t kTxnCleanerBackoffMs = 1000;

// Op ranges [first, end) of the compaction step, as the fault file system
// counts them (filled when the workload has an op counter).
struct TxnWorkloadSteps {
  std::vector<std::pair<uint64_t, uint64_t>> compaction;
};

class TxnCrashWorkload {
 public:
  // `op_counter` (optional) reads the fault file system's op count.
  TxnCrashWorkload(FileSystem* fs, std::string log_dir, GroupTime* time, TxnHistory* history,
                   std::function<uint64_t()> op_counter = {})
      : fs_(fs),
        time_(time),
        history_(history),
        op_counter_(std::move(op_counter)),
        node_(TxnCrashNodeConfig(log_dir), time) {}

  // OK when the whole workload ran (a fault shows in the history).
  Status Run() {
    DARUMA_RETURN_IF_ERROR(StartPhase(0));
    PhaseA();
    const Status shutdown = node_.Shutdown();
    DARUMA_RETURN_IF_ERROR(StartPhase(1));
    PhaseB();
    node_.Drop();  // without Shutdown: the image a crash would leave
    return shutdown;
  }

  const TxnWorkloadSteps& steps() const { return steps_; }

 private:
  // ---- phases ----

  void PhaseA() {
    Init(pay_);
    Init(ledger_);
    Init(etl_);
    for (int round = 0; round < 3; ++round) {
      Transaction(pay_, {{kPayments, 0}, {kPayments, 1}, {kLedger, 0}}, 2, round != 1);
      Transaction(ledger_, {{kLedger, 1}, {kPayments, 2}}, 1, true);
      EtlTransaction({kPayments, round % 3}, round != 1);
      Advance(1000);
    }
    Zombie();
    TimedOut(pay_);
    // Open across the clean restart: the load finds it Ongoing.
    Begin(ledger_);
    if (Add(ledger_, {{kLedger, 0}, {kPayments, 0}})) {
      Produce(ledger_, {kLedger, 0}, 2);
      Produce(ledger_, {kPayments, 0}, 1);
    }
    ledger_open_ = ledger_.current;
  }

  void PhaseB() {
    // Clients keep their producer ids and epochs over the broker's restart.
    Transaction(pay_, {{kPayments, 1}, {kLedger, 1}}, 2, true);
    EtlTransaction({kPayments, 2}, true);
    Transaction(pay_, {{kPayments, 0}}, 1, false);
    const uint64_t first = Ops() + 1;
    Advance(kTxnCleanerBackoffMs);
    node_.manager().RunDueJobsForTest();
    steps_.compaction.emplace_back(first, Ops() + 1);
    // The transaction left open in phase A times out (the load scheduled its
    // abort at its own deadline); its producer learns it was fenced.
    Advance(kTxnTimeoutMs);
    LearnAborted(ledger_, ledger_open_);
    ledger_.current = -1;
    Init(ledger_);
    Transaction(ledger_, {{kLedger, 1}, {kPayments, 2}}, 2, true);
    Init(late_);
    Transaction(late_, {{kPayments, 0}, {kLedger, 0}}, 1, true);
    EtlTransaction({kPayments, 1}, false);
    EtlTransaction({kPayments, 0}, true);
    // Left open: the recovery aborts it after its timeout.
    Begin(pay_);
    if (Add(pay_, {{kPayments, 2}, {kLedger, 1}})) {
      Produce(pay_, {kPayments, 2}, 2);
      Produce(pay_, {kLedger, 1}, 1);
    }
  }

  // ---- setup ----

  Status StartPhase(int phase) {
    LogManagerOptions options;
    options.fs = fs_;
    options.clock = &time_->clock;
    options.broker_epoch = 5 + phase;
    options.jobs.mode = Scheduler::Mode::kManual;
    if (phase == 1) {
      options.jobs.enabled = true;
      options.jobs.initial_delay_ms = kTxnCleanerBackoffMs;
      options.jobs.cleaner_enabled = true;
      options.jobs.cleaner.backoff_ms = kTxnCleanerBackoffMs;
      options.jobs.cleaner.dedupe_buffer_size = 24 * 4096;
      options.jobs.cleaner.io_buffer_size = 8192;
    }
    DARUMA_RETURN_IF_ERROR(node_.Start(options));
    return node_.Load().status();
  }

  uint64_t Ops() const { return op_counter_ ? op_counter_() : 0; }
  void Advance(int64_t ms) { time_->Advance(ms); }
  int64_t Now() const { return time_->clock.NowMs(); }
  void Acked() { history_->last_ack_ms = Now(); }
  void Expect(bool ok, const std::string& what) {
    if (!ok) history_->unexpected.push_back(what);
  }
  TransactionCoordinator& txns() { return node_.txns(); }

  // ---- clients ----

  struct Client {
    TxnClient c;
    int current = -1;     // its attempt in the history, -1 between transactions
    bool failed = false;  // an op of the current attempt was not acknowledged
    // The client must start over with InitProducerId before its next
    // transaction: an op failed, or its EndTxn was not answered NONE. Kafka's
    // client bumps its epoch after such an abortable error (a batch that may
    // or may not be in the log must not be matched as a duplicate by the
    // next batch with its sequence), and a transaction whose end is unknown
    // is never continued by the next one (the fence aborts it if still open).
    bool reinit = false;
    int count = 0;
  };

  TxnAttempt* Current(Client& c) {
    return c.current < 0 ? nullptr : &history_->attempts[size_t(c.current)];
  }

  // InitProducerId, retried as Kafka's client does while the coordinator
  // answers CONCURRENT_TRANSACTIONS (a fenced transaction being aborted).
  ErrorCode Init(Client& c) {
    ErrorCode error = ErrorCode::kNone;
    for (int attempt = 0; attempt < 3; ++attempt) {
      const InitProducerIdResult r = txns().InitProducerId(c.c.id, kTxnTimeoutMs, std::nullopt);
      error = r.error;
      if (error == ErrorCode::kConcurrentTransactions) {
        Advance(100);
        continue;
      }
      if (error == ErrorCode::kNone) {
        Acked();
        c.reinit = false;
        c.c.Adopt(r);
        auto [owner, fresh] = history_->producer_ids.emplace(r.producer_id, c.c.id);
        Expect(fresh || owner->second == c.c.id, "producer id " + std::to_string(r.producer_id) +
                                                     " of " + owner->second + " handed to " +
                                                     c.c.id);
        history_->last_init[c.c.id] = {r.producer_id, r.producer_epoch};
      }
      break;
    }
    if (error != ErrorCode::kNone) {
      // Without a producer id every later op fails until an Init succeeds.
      c.c.Adopt(InitProducerIdResult{});
      c.reinit = true;
    }
    Expect(error == ErrorCode::kNone, "InitProducerId(" + c.c.id + ") " + ErrorCodeName(error));
    return error;
  }

  void Begin(Client& c) {
    if (c.reinit) Init(c);
    TxnAttempt a;
    a.label = c.c.id + "#" + std::to_string(c.count++);
    a.id = c.c.id;
    history_->attempts.push_back(std::move(a));
    c.current = int(history_->attempts.size()) - 1;
    c.failed = false;
  }

  bool Add(Client& c, const std::set<TopicPartition>& partitions) {
    const ErrorCode e = txns().AddPartitions(c.c.id, c.c.producer_id, c.c.epoch, partitions);
    Expect(e == ErrorCode::kNone, Current(c)->label + " AddPartitions " + ErrorCodeName(e));
    if (e == ErrorCode::kNone) Acked();
    c.failed = c.failed || e != ErrorCode::kNone;
    return e == ErrorCode::kNone;
  }

  // `n` records in one batch to `tp`.
  TxnProduceResult Produce(Client& c, const TopicPartition& tp, int n) {
    TxnAttempt& a = *Current(c);
    std::vector<std::string> values;
    for (int i = 0; i < n; ++i) {
      values.push_back(a.label + "/" + tp.ToString() + "/" + std::to_string(a.attempted.size()));
      a.attempted.push_back(values.back());
    }
    Log* log = node_.started() ? node_.log(tp) : nullptr;
    TxnProduceResult r;
    if (log == nullptr) {
      r.append = Status::NotFound(tp.ToString());
    } else {
      r = c.c.Produce(txns(), log, a.label, values, Now());
    }
    if (r.ok()) {
      Acked();
      a.acked.insert(a.acked.end(), values.begin(), values.end());
    }
    c.failed = c.failed || !r.ok();
    return r;
  }

  // EndTxn; a client that saw an op of its transaction fail aborts instead.
  void End(Client& c, bool commit) {
    TxnAttempt& a = *Current(c);
    commit = commit && !c.failed;
    a.commit_sent = commit;
    const ErrorCode e = txns().EndTransaction(c.c.id, c.c.producer_id, c.c.epoch, commit);
    Expect(e == ErrorCode::kNone, a.label + " EndTxn " + ErrorCodeName(e));
    if (e == ErrorCode::kNone) {
      Acked();
      (commit ? a.commit_acked : a.abort_acked) = true;
    }
    c.reinit = c.reinit || c.failed || e != ErrorCode::kNone;
    c.current = -1;
  }

  void Transaction(Client& c, const std::vector<TopicPartition>& partitions, int batches,
                   bool commit) {
    Begin(c);
    if (Add(c, std::set<TopicPartition>(partitions.begin(), partitions.end()))) {
      for (int b = 0; b < batches; ++b) {
        for (const TopicPartition& tp : partitions) Produce(c, tp, 1 + b);
      }
    }
    End(c, commit);
  }

  // Consume-transform-produce: the output record and the input offset
  // (AddOffsetsToTxn, then TxnOffsetCommit under the transaction's lock, as
  // the broker's handler does) commit or abort together.
  void EtlTransaction(const TopicPartition& output, bool commit) {
    Begin(etl_);
    TxnAttempt& a = *Current(etl_);
    const TopicPartition offsets = node_.OffsetsPartitionOf(kEtlGroup);
    if (Add(etl_, {output}) && Add(etl_, {offsets})) {
      Produce(etl_, output, 2);
      a.offset = 100 + int64_t(history_->attempts.size());
      TxnOffsetCommitArgs args;
      args.transactional_id = etl_.c.id;
      args.group_id = kEtlGroup;
      args.producer_id = etl_.c.producer_id;
      args.producer_epoch = etl_.c.epoch;
      args.partitions.push_back({kEtlInput, 0, *a.offset, -1, std::nullopt, -1});
      std::vector<ErrorCode> errors;
      const ErrorCode verified = txns().WithOngoingTransaction(
          etl_.c.id, etl_.c.producer_id, etl_.c.epoch, offsets,
          [&] { errors = node_.groups().CommitTransactionalOffsets(args); });
      a.offset_acked =
          verified == ErrorCode::kNone && errors.size() == 1 && errors[0] == ErrorCode::kNone;
      Expect(a.offset_acked, a.label + " TxnOffsetCommit " + ErrorCodeName(verified));
      if (a.offset_acked) Acked();
      etl_.failed = etl_.failed || !a.offset_acked;
    }
    End(etl_, commit);
  }

  // A second instance fences the first one's open transaction.
  void Zombie() {
    Client old{TxnClient{kZombieTx}};
    Init(old);
    Begin(old);
    if (Add(old, {{kPayments, 1}, {kLedger, 0}})) {
      Produce(old, {kPayments, 1}, 2);
      Produce(old, {kLedger, 0}, 1);
    }
    zombie_ = Client{TxnClient{kZombieTx}};
    zombie_.count = old.count;
    // The first call fences and aborts (CONCURRENT_TRANSACTIONS), the retry
    // gets the next epoch (Init retries). NONE comes only once the fenced
    // transaction is complete, and its commit was never sent: aborted.
    if (Init(zombie_) == ErrorCode::kNone) {
      history_->attempts[size_t(old.current)].abort_acked = true;
      // The zombie is refused and nothing it sends lands. Its commit is not
      // counted as sent: a fenced producer's commit must never take effect.
      const TxnProduceResult late = Produce(old, {kPayments, 1}, 1);
      Expect(late.verified == ErrorCode::kInvalidProducerEpoch,
             std::string("zombie produce ") + ErrorCodeName(late.verified));
      const ErrorCode end =
          txns().EndTransaction(kZombieTx, old.c.producer_id, old.c.epoch, /*commit=*/true);
      Expect(end == ErrorCode::kProducerFenced, std::string("zombie EndTxn ") + ErrorCodeName(end));
    }
    Transaction(zombie_, {{kPayments, 1}, {kLedger, 0}}, 1, true);
  }

  // A transaction left alone past its timeout is aborted by the coordinator.
  void TimedOut(Client& c) {
    Begin(c);
    if (Add(c, {{kPayments, 0}, {kLedger, 1}})) {
      Produce(c, {kPayments, 0}, 1);
      Produce(c, {kLedger, 1}, 2);
    }
    Advance(kTxnTimeoutMs + kTxnAbortCheckMs);
    if (LearnAborted(c, c.current)) {
      // Not counted as sent either: the abort was decided first.
      const ErrorCode e = txns().EndTransaction(c.c.id, c.c.producer_id, c.c.epoch, true);
      Expect(e == ErrorCode::kProducerFenced,
             Current(c)->label + " EndTxn after timeout " + ErrorCodeName(e));
    }
    c.current = -1;
    Init(c);
  }

  // DescribeTransactions shows the id CompleteAbort at a newer epoch than
  // `c` has: the attempt (index `attempt`, its commit never sent) was aborted.
  bool LearnAborted(const Client& c, int attempt) {
    const TransactionDescription d = txns().Describe(c.c.id);
    const bool aborted = d.error == ErrorCode::kNone && d.state == "CompleteAbort" &&
                         d.producer_id == c.c.producer_id && d.producer_epoch > c.c.epoch;
    Expect(aborted, c.c.id + " is '" + d.state + "' after its abort");
    if (aborted && attempt >= 0) {
      Acked();
      history_->attempts[size_t(attempt)].abort_acked = true;
    }
    return aborted;
  }

  FileSystem* fs_;
  GroupTime* time_;
  TxnHistory* history_;
  std::function<uint64_t()> op_counter_;
  TxnNode node_;
  TxnWorkloadSteps steps_;
  Client pay_{TxnClient{kPayTx}}, ledger_{TxnClient{kLedgerTx}}, etl_{TxnClient{kEtlTx}};
  Client zombie_, late_{TxnClient{kLateTx}};
  int ledger_open_ = -1;  // the attempt left open across the restart
};

}  // namespace daruma::testing
