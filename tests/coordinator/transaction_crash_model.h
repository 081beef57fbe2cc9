// What the transaction crash matrix (transaction_crash_matrix_crash_test.cc)
// knows about a run, and the recover-and-check step it runs on every crash
// image. Header-only, like group_crash_model.h.
//
// The model is what clients were told, per transaction attempt: the record
// values it tried to produce and those whose produce was answered OK, the
// offset it tried to commit for the consumer group, whether EndTxn(commit)
// was ever sent and whether it was answered NONE; and which producer id each
// InitProducerId answered NONE handed to which transactional id. Every
// record value names its attempt ("<attempt>/<partition>/<n>"), so a
// read_committed reader's records map back to attempts.
//
// After recovery (LogManager::Startup on the image, high watermarks at the
// log ends, a new GroupCoordinator and TransactionCoordinator, Load, the
// clock moved past every transaction timeout, due jobs run):
//  * the load is clean: no failed partition, no skipped record (a record the
//    crash tore is truncated by log recovery, never replayed), no marker left
//    pending, no transactional id left Ongoing or Prepare*;
//  * every data and offsets partition's last stable offset is its log end;
//  * atomicity for read_committed readers: an attempt whose EndTxn(commit)
//    was answered NONE shows every acknowledged record; one whose commit was
//    never sent (aborted, fenced, timed out, cut short) shows none; one whose
//    commit was sent but not answered shows all acknowledged records or none
//    at all; nothing shows twice and nothing shows that was not produced;
//    what a reader saw right after the load is still there after the timeout;
//  * the consumer group's offset is the one of the last attempt whose
//    records show (consume-transform-produce is atomic), and no partition
//    answers UNSTABLE_OFFSET_COMMIT;
//  * producer ids: every id keeps the producer id it was acknowledged, at an
//    epoch no lower; no producer id acknowledged to one transactional id is
//    handed to another one after the restart (a new id gets a new one).
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "coordinator/txn_test_support.h"
#include "support/mem_file_system.h"

namespace daruma::testing {

inline constexpr int64_t kTxnWorkloadStartMs = 1700000000000;
inline constexpr int32_t kTxnTimeoutMs = 20000;
inline constexpr int64_t kTxnAbortCheckMs = 2000;
inline constexpr char kPayments[] = "payments";  // 3 partitions
inline constexpr char kLedger[] = "ledger";      // 2 partitions
inline constexpr char kEtlGroup[] = "etl-app";   // offsets partition 0
inline constexpr char kEtlInput[] = "orders-in";
inline constexpr char kFreshTxnId[] = "fresh-after-restart";

// fsync per append (log.flush.interval.messages=1), so what a coordinator or
// a produce acknowledges is durable; small segments and index intervals so
// appends roll segments and write index entries.
inline LogConfig TxnBrokerDefaults() {
  LogConfig c;
  c.flush_messages = 1;
  c.segment_bytes = 4096;
  c.index_interval_bytes = 512;
  c.segment_index_bytes = 4096;  // a multiple of 8 and 12
  return c;
}

inline TxnNodeConfig TxnCrashNodeConfig(const std::string& log_dir) {
  TxnNodeConfig c;
  c.log_dir = log_dir;
  c.defaults = TxnBrokerDefaults();
  c.data_topics = {{kPayments, 3}, {kLedger, 2}};
  c.state_segment_bytes = 1024;
  c.offsets_segment_bytes = 2048;
  c.offsets_partitions = 3;
  c.producer_id_block = 2;  // several blocks reserved during the workload
  c.txn.state_log_partitions = 3;
  c.txn.abort_check_interval_ms = kTxnAbortCheckMs;
  c.groups.initial_rebalance_delay_ms = 500;
  return c;
}

// One transaction as its producer saw it.
struct TxnAttempt {
  std::string label;  // "<transactional id>#<n>"
  std::string id;
  std::vector<std::string> attempted;  // every record value produced
  std::vector<std::string> acked;      // ... whose produce was answered OK
  std::optional<int64_t> offset;       // TxnOffsetCommit to kEtlGroup, if sent
  bool offset_acked = false;
  bool commit_sent = false;
  bool commit_acked = false;
  bool abort_acked = false;  // EndTxn(abort), or the coordinator showed CompleteAbort
};

struct TxnHistory {
  std::vector<TxnAttempt> attempts;
  // Acknowledged InitProducerId answers: producer id -> transactional id,
  // and per transactional id its last (producer id, epoch).
  std::map<int64_t, std::string> producer_ids;
  std::map<std::string, std::pair<int64_t, int16_t>> last_init;
  // Answers a fault-free run must not give (checked only there).
  std::vector<std::string> unexpected;
  int64_t last_ack_ms = kTxnWorkloadStartMs;  // the clock at the last answer
};

inline std::string OffsetList(const std::set<int64_t>& values) {
  std::string out;
  for (int64_t v : values) out += (out.empty() ? "" : ",") + std::to_string(v);
  return out;
}

inline std::string AttemptOf(const std::string& value) {
  return value.substr(0, value.find('/'));
}

// Counts across a matrix run (printed by the test).
struct TxnCrashTally {
  int64_t points = 0;
  int64_t recoveries = 0;
  int64_t attempts_checked = 0;
  int64_t records_seen = 0;
  int64_t recovery_failures = 0;     // Startup, Load, a skipped record or a failed partition
  int64_t stuck = 0;                 // LSO behind the log end, a pending marker, an open id
  int64_t lost_commit = 0;           // an acknowledged commit misses a record
  int64_t uncommitted_visible = 0;   // a record of an attempt never committed shows
  int64_t partial = 0;               // an undecided attempt shows part of its records
  int64_t phantom = 0;               // a record shows twice or was never produced
  int64_t regressed = 0;             // a record seen after the load disappeared
  int64_t offset_mismatch = 0;       // the group's offset disagrees with the records
  int64_t producer_id_problems = 0;  // an id lost, regressed or reused
  // Coverage: what the loads found and what undecided commits became.
  int64_t load_completed = 0;         // Prepare* finished by a load
  int64_t load_ongoing = 0;           // Ongoing found by a load (aborted at its timeout)
  int64_t undecided_shown = 0;        // commit sent, unanswered, committed after all
  int64_t undecided_hidden = 0;       // ... aborted
  int64_t state_log_cut = 0;          // recoveries that truncated a `__transaction_state` tail
  std::vector<std::string> examples;  // at most 3 per category
  std::map<std::string, int> noted;

  void Note(int64_t* counter, const std::string& category, const std::string& what) {
    ++*counter;
    if (noted[category]++ < 3) examples.push_back(category + ": " + what);
  }
  int64_t Violations() const {
    return recovery_failures + stuck + lost_commit + uncommitted_visible + partial + phantom +
           regressed + offset_mismatch + producer_id_problems;
  }
  std::string Summary() const {
    return "points=" + std::to_string(points) + " recoveries=" + std::to_string(recoveries) +
           " attempts_checked=" + std::to_string(attempts_checked) +
           " records_seen=" + std::to_string(records_seen) +
           " violations=" + std::to_string(Violations()) +
           " recovery_failures=" + std::to_string(recovery_failures) +
           " stuck=" + std::to_string(stuck) + " lost_commit=" + std::to_string(lost_commit) +
           " uncommitted_visible=" + std::to_string(uncommitted_visible) +
           " partial=" + std::to_string(partial) + " phantom=" + std::to_string(phantom) +
           " regressed=" + std::to_string(regressed) +
           " offset_mismatch=" + std::to_string(offset_mismatch) +
           " producer_id_problems=" + std::to_string(producer_id_problems) +
           " load_completed=" + std::to_string(load_completed) +
           " load_ongoing=" + std::to_string(load_ongoing) +
           " undecided_shown=" + std::to_string(undecided_shown) +
           " undecided_hidden=" + std::to_string(undecided_hidden) +
           " state_log_cut=" + std::to_string(state_log_cut);
  }
};

// Every record value a read_committed reader of the data topics gets, with
// how often.
inline Result<std::map<std::string, int>> ReadAllCommitted(TxnNode& node) {
  std::map<std::string, int> seen;
  for (const auto& [topic, partitions] : node.config().data_topics) {
    for (int32_t p = 0; p < partitions; ++p) {
      Log* log = node.log({topic, p});
      if (log == nullptr) return Status::NotFound(topic + "-" + std::to_string(p) + " is gone");
      DARUMA_ASSIGN_OR_RETURN(std::vector<Record> records, ReadCommitted(log));
      for (const Record& r : records) ++seen[r.value.value_or("")];
    }
  }
  return seen;
}

// Recovers `image` and checks it against `history` (see the top of this file).
inline void RecoverTxnsAndCheck(MemFileSystem* image, const std::string& log_dir,
                                const TxnHistory& history, const std::string& label,
                                TxnCrashTally* tally) {
  TxnCrashTally& t = *tally;
  // The restart comes right after the last answer, so transactions open then
  // are still inside their timeout when the load finds them.
  GroupTime time(history.last_ack_ms + 1);
  TxnNode node(TxnCrashNodeConfig(log_dir), &time);
  LogManagerOptions options;
  options.fs = image;
  options.clock = &time.clock;
  if (Status st = node.Start(options); !st.ok()) {
    t.Note(&t.recovery_failures, "recovery_failure", label + ": " + st.ToString());
    return;
  }
  for (const PartitionRecoveryReport& p : node.manager().report().partitions) {
    if (p.topic == kTxnStateTopic && p.truncated_bytes > 0) {
      ++t.state_log_cut;
      break;
    }
  }
  Result<TxnLoadReport> report = node.Load();
  if (!report.ok()) {
    t.Note(&t.recovery_failures, "recovery_failure",
           label + ": load " + report.status().ToString());
    return;
  }
  if (report->skipped > 0 || !report->failed_partitions.empty() || report->incomplete > 0 ||
      node.group_report().skipped > 0 || !node.group_report().failed_partitions.empty()) {
    t.Note(&t.recovery_failures, "recovery_failure",
           label + ": load skipped " + std::to_string(report->skipped) + " " +
               (report->skipped_reasons.empty() ? "" : report->skipped_reasons[0]) + " failed " +
               std::to_string(report->failed_partitions.size()) + " incomplete " +
               std::to_string(report->incomplete) + " group records skipped " +
               std::to_string(node.group_report().skipped));
  }
  ++t.recoveries;
  t.load_completed += report->completed;
  t.load_ongoing += report->ongoing;
  Result<std::map<std::string, int>> at_load = ReadAllCommitted(node);

  // Past every timeout: the load's own deadlines and the periodic check run.
  for (int64_t passed = 0; passed <= kTxnTimeoutMs + kTxnAbortCheckMs; passed += 1000) {
    time.Advance(1000);
  }
  if (node.txns().PendingMarkerCount() > 0) {
    t.Note(&t.stuck, "stuck",
           label + ": " + std::to_string(node.txns().PendingMarkerCount()) + " pending markers");
  }
  for (const auto& [id, init] : history.last_init) {
    const TransactionDescription d = node.txns().Describe(id);
    if (d.error == ErrorCode::kNone && d.state != "Empty" && d.state != "CompleteCommit" &&
        d.state != "CompleteAbort") {
      t.Note(&t.stuck, "stuck", label + ": " + id + " still " + d.state);
    }
  }
  for (Log* log : node.manager().AllLogs()) {
    if (log->last_stable_offset() != log->log_end_offset()) {
      t.Note(&t.stuck, "stuck",
             label + ": " + log->topic_partition().ToString() + " LSO " +
                 std::to_string(log->last_stable_offset()) + " < log end " +
                 std::to_string(log->log_end_offset()));
    }
  }

  Result<std::map<std::string, int>> seen = ReadAllCommitted(node);
  if (!seen.ok() || !at_load.ok()) {
    t.Note(&t.recovery_failures, "recovery_failure",
           label + ": read_committed " + (seen.ok() ? at_load : seen).status().ToString());
    return;
  }
  for (const auto& [value, n] : *at_load) {
    if (seen->count(value) == 0) {
      t.Note(&t.regressed, "regressed", label + ": " + value + " seen at load, gone later");
    }
  }
  std::map<std::string, const TxnAttempt*> by_label;
  for (const TxnAttempt& a : history.attempts) by_label[a.label] = &a;
  std::map<std::string, std::set<std::string>> visible;
  for (const auto& [value, n] : *seen) {
    t.records_seen += n;
    auto it = by_label.find(AttemptOf(value));
    const bool produced = it != by_label.end() &&
                          std::find(it->second->attempted.begin(), it->second->attempted.end(),
                                    value) != it->second->attempted.end();
    if (n > 1 || !produced) {
      t.Note(&t.phantom, "phantom",
             label + ": " + value + " seen " + std::to_string(n) + "x" +
                 (produced ? "" : ", never produced"));
    }
    visible[AttemptOf(value)].insert(value);
  }

  // Atomicity per attempt, and the group offset the visible attempts imply.
  std::set<int64_t> allowed_offsets = {-1};
  for (const TxnAttempt& a : history.attempts) {
    ++t.attempts_checked;
    const std::set<std::string>& vis = visible[a.label];
    size_t acked_visible = 0;
    for (const std::string& v : a.acked) acked_visible += vis.count(v);
    const bool all = acked_visible == a.acked.size();
    const std::string what = label + ": " + a.label + " shows " + std::to_string(vis.size()) +
                             " records, " + std::to_string(acked_visible) + " of " +
                             std::to_string(a.acked.size()) + " acknowledged";
    if (a.commit_acked && !all) {
      t.Note(&t.lost_commit, "lost_commit", what + " (commit acknowledged)");
    } else if (!a.commit_sent && !vis.empty()) {
      t.Note(&t.uncommitted_visible, "uncommitted_visible",
             what + (a.abort_acked ? " (abort acknowledged)" : " (commit never sent)"));
    } else if (a.commit_sent && !vis.empty() && !all) {
      t.Note(&t.partial, "partial", what + " (commit unanswered)");
    } else if (a.commit_sent && !a.commit_acked) {
      ++(vis.empty() ? t.undecided_hidden : t.undecided_shown);
    }
    if (a.offset && !vis.empty()) {
      // Committed (its records show): its offset applies; one whose
      // TxnOffsetCommit was not answered may or may not have been stored.
      if (a.offset_acked) allowed_offsets.clear();
      allowed_offsets.insert(*a.offset);
    }
  }
  OffsetFetchResult offsets = node.groups().FetchOffsets(
      kEtlGroup, std::vector<std::pair<std::string, int32_t>>{{kEtlInput, 0}}, true);
  const int64_t got = offsets.partitions.empty() ? -2 : offsets.partitions[0].offset;
  const ErrorCode error = offsets.partitions.empty() ? offsets.error : offsets.partitions[0].error;
  if (error != ErrorCode::kNone || allowed_offsets.count(got) == 0) {
    t.Note(&t.offset_mismatch, "offset_mismatch",
           label + ": " + kEtlGroup + " holds " + std::to_string(got) + " (" +
               ErrorCodeName(error) + "), expected one of " + OffsetList(allowed_offsets));
  }

  // Producer ids: each id keeps its acknowledged one, then a new id and every
  // known id ask again; nobody gets another id's producer id.
  for (const auto& [id, init] : history.last_init) {
    const TransactionDescription d = node.txns().Describe(id);
    if (d.producer_id != init.first || d.producer_epoch < init.second) {
      t.Note(&t.producer_id_problems, "producer_id",
             label + ": " + id + " has producer " + std::to_string(d.producer_id) + " epoch " +
                 std::to_string(d.producer_epoch) + ", acknowledged " + std::to_string(init.first) +
                 " epoch " + std::to_string(init.second));
    }
  }
  std::vector<std::string> ids = {kFreshTxnId};
  for (const auto& [id, init] : history.last_init) ids.push_back(id);
  for (const std::string& id : ids) {
    const InitProducerIdResult r = node.txns().InitProducerId(id, kTxnTimeoutMs, std::nullopt);
    if (r.error != ErrorCode::kNone) {
      t.Note(&t.producer_id_problems, "producer_id",
             label + ": InitProducerId(" + id + ") after the restart: " + ErrorCodeName(r.error));
      continue;
    }
    auto owner = history.producer_ids.find(r.producer_id);
    if (owner != history.producer_ids.end() && owner->second != id) {
      t.Note(&t.producer_id_problems, "producer_id",
             label + ": producer id " + std::to_string(r.producer_id) + " of " + owner->second +
                 " handed to " + id);
    }
  }
}

}  // namespace daruma::testing
