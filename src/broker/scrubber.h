// Scrubber: the broker's background scrub of old segments (issue 22), after
// ZFS's and Ceph's scrubs; Kafka has nothing like it. Start-up recovery (in
// Kafka as in Daruma) never reads a segment below the recovery point again,
// so a bit that rots there is served to consumers until some client's CRC
// check trips on it. The scrubber reads those segments again, at a bounded
// rate, and stops serving what it finds damaged.
//
// A pass: every live log's inactive segments whose data lies wholly below
// the recovery point (the next segment's base <= recovery point: flushed,
// immutable but for retention, cleaning, truncation and deletion), in
// partition then offset order, each through ScrubSegment
// (recovery/segment_scrubber.h) at daruma.scrub.bytes.per.second. The
// active segment and anything above the recovery point are never read, and
// no Log lock is held while reading: appends never wait for a scrub.
//
// A finding is recorded only when it still belongs to the log: after the
// scan the live log still has the segment, still inactive, in the same
// dir, and a second scan of the file finds the same damage (a segment the
// cleaner swapped or retention removed meanwhile is not a finding; a file
// gone before it is opened is skipped). A segment's findings are replaced by
// each scan of it; at the end of a pass the findings of segments no longer
// in any live log are dropped. Every change is written at once to the dir's
// daruma-scrub-findings.json (recovery/scrub_findings.h), for `daruma
// repair` and the next start (Load() reads them back; their bytes are not
// served from the first fetch on).
//
// Fetch (fetch_handler.cc): a fetch at an offset in a finding's trusted
// offset range gets CORRUPT_MESSAGE (KAFKA_STORAGE_ERROR for an unreadable
// range) instead of the bytes; a fetch below it is cut at the finding's
// first byte, so the valid batches before the damage are still served. The
// first refusal of each finding is logged with its file and offsets.
//
// Scheduling: Start() runs passes on a thread of its own (a pass may take
// hours at the rate bound; the log manager's Scheduler threads must not wait
// for it): the first initial_delay_ms after Start when no dir records a
// completed pass, else interval_ms after the last completed one, then
// interval_ms after each. Stop() wakes every wait (the interval, the rate
// limiter) and joins, so shutdown is never held by a scrub.
//
// Thread safety: every method may be called from any thread. RunPass() runs
// one pass on the calling thread (tests); never two at once.
#pragma once

#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <map>
#include <mutex>
#include <nlohmann/json_fwd.hpp>
#include <optional>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "broker/event_log.h"
#include "broker/scrub_settings.h"
#include "common/bytes.h"
#include "common/clock.h"
#include "common/file_system.h"
#include "log/log_registry.h"
#include "protocol/error_codes.h"
#include "protocol/response_frame.h"
#include "recovery/scrub_findings.h"
#include "recovery/scrub_rate_limiter.h"

namespace daruma::broker {

struct ScrubberOptions {
  ScrubSettings settings;
  LogRegistry* logs = nullptr;
  FileSystem* fs = FileSystem::Default();
  Clock* clock = Clock::System();
  std::vector<std::string> log_dirs;
  EventLog* log = nullptr;  // findings and refusals; may be null
  size_t chunk_bytes = size_t(1) << 20;
  // Evict each block from the page cache before reading it, so the scrub
  // reads the medium (where the OS honours the advice).
  bool drop_cache = true;
  // The rate limiter's wait; default: an interruptible wait on real time.
  // Tests pass one that advances a ManualClock.
  ScrubRateLimiter::Sleep sleep;
};

// What /metrics and /health show.
struct ScrubStatus {
  bool enabled = false;
  std::string state;  // "disabled", "waiting", "scrubbing", "stopped"
  int64_t bytes_per_second = 0;
  int64_t passes_completed = 0;
  int64_t segments_scrubbed_total = 0;
  int64_t bytes_scrubbed_total = 0;
  int64_t findings_recorded_total = 0;  // since start
  int64_t throttled_ms_total = 0;
  // The current pass (or the last one when waiting).
  int64_t pass_bytes_done = 0;
  int64_t pass_bytes_total = 0;
  int64_t pass_segments_done = 0;
  int64_t pass_segments_total = 0;
  int64_t pass_started_ms = -1;
  int64_t last_pass_completed_ms = -1;
  int64_t last_pass_duration_ms = -1;
  int64_t next_pass_due_ms = -1;
  std::string last_error;  // a findings file that could not be read or written
  struct DirFinding {
    std::string dir;
    ScrubFinding finding;
  };
  std::vector<DirFinding> findings;
  int64_t damaged_bytes = 0;  // over all findings
};

nlohmann::json ToJson(const ScrubStatus& status);

// What Fetch must not serve of a partition: the first finding at or above
// the fetch offset.
struct ScrubFetchDamage {
  std::string segment_path;  // the `.log`, as Log's dir names it
  ScrubFinding finding;
};

class Scrubber {
 public:
  explicit Scrubber(ScrubberOptions options);
  ~Scrubber();  // Stop()
  Scrubber(const Scrubber&) = delete;
  Scrubber& operator=(const Scrubber&) = delete;

  // Reads every dir's findings file (a missing one is none). A file that
  // does not parse is left as it is (last_error says why, and the next write
  // replaces it); its dir starts with no findings.
  void Load();
  // Starts the pass thread (nothing when disabled).
  void Start();
  // Ends the current wait or pass promptly and joins. Idempotent.
  void Stop();
  // One whole pass now, on this thread. False when stopped before the end.
  bool RunPass();

  ScrubStatus Snapshot() const;

  // ---- Fetch -------------------------------------------------------------
  // Cheap: false while nothing is recorded, which is the fast path of every
  // fetch.
  bool HasFindings() const { return findings_count_.load(std::memory_order_relaxed) > 0; }
  // The first damage of `log` (its live Log object) ending above
  // `fetch_offset`, if any, whose segment file was not rewritten since (one
  // stat per finding considered: only partitions with findings pay it).
  std::optional<ScrubFetchDamage> DamageFrom(const Log& log, int64_t fetch_offset) const;
  // Logs, once per finding, that its bytes were refused to a fetch.
  void NoteRefused(const ScrubFetchDamage& damage, int64_t fetch_offset) const;

 private:
  struct Finding {
    ScrubFinding f;
    // The Log it was found in (resolved at Load for the file's findings): a
    // topic deleted and created again has another Log, whose files are new.
    const Log* log = nullptr;
  };
  struct DirState {
    std::optional<int64_t> last_pass_completed_ms;
    std::vector<Finding> findings;
  };
  struct Candidate;  // scrubber.cc

  void Loop();
  // Waits up to `ms` (real time) or until Stop(); false when stopping.
  bool Wait(int64_t ms);
  std::vector<Candidate> ListCandidates() const;
  // Scans one segment, confirms what it found and records it. False when
  // the scan was stopped.
  bool ScrubOne(const Candidate& c, ScrubRateLimiter& limiter);
  // Whether `c` is still an inactive segment below the recovery point of
  // the live log of its partition, in the same dir.
  bool StillCurrent(const Candidate& c) const;
  // Replaces the findings of one segment, whose `.log` has `size` bytes and
  // was modified at `modified_ms`; persists the dir when they changed.
  void Record(const Candidate& c, std::vector<ScrubDamage> damage, int64_t size,
              int64_t modified_ms);
  // Whether the segment file still is the one `f` was found in (its size and
  // modification time); a rewritten file (repair, the cleaner) is not.
  bool SameFile(const std::string& path, const ScrubFinding& f) const;
  // Drops findings whose segment no longer is in a live log.
  void Prune();
  // Writes `dir`'s file (mu_ held).
  void PersistLocked(const std::string& dir);
  void RecountLocked();

  ScrubberOptions options_;
  std::atomic<bool> stop_{false};
  std::mutex wait_mu_;
  std::condition_variable wake_;
  std::thread thread_;
  std::mutex pass_mu_;  // one pass at a time

  mutable std::mutex mu_;
  std::map<std::string, DirState> dirs_;  // by log dir
  std::atomic<int64_t> findings_count_{0};
  mutable std::set<std::string> refused_logged_;  // findings whose refusal was logged
  std::string state_ = "waiting";
  std::string last_error_;
  int64_t passes_completed_ = 0;
  int64_t segments_scrubbed_total_ = 0;
  int64_t findings_recorded_total_ = 0;
  int64_t throttled_ms_total_ = 0;
  int64_t pass_bytes_total_ = 0;
  int64_t pass_segments_total_ = 0;
  int64_t pass_segments_done_ = 0;
  int64_t pass_started_ms_ = -1;
  int64_t last_pass_duration_ms_ = -1;
  int64_t next_pass_due_ms_ = -1;
  std::atomic<int64_t> bytes_scrubbed_total_{0};
  std::atomic<int64_t> pass_bytes_done_{0};
};

// The wire error for a fetch that reaches `damage`: KAFKA_STORAGE_ERROR when
// the bytes could not be read, CORRUPT_MESSAGE otherwise.
ErrorCode ScrubErrorCode(const ScrubFinding& finding);

// Cuts a fetch's file ranges at the damage's first byte (the ranges after
// it are dropped). Returns the bytes left.
int64_t CutSlicesAtDamage(const ScrubFetchDamage& damage, std::vector<FileSlice>* slices);
// The same for copied records: keeps the whole, valid batches that end below
// the damage's first offset. Returns the bytes left.
int64_t CutRecordsAtDamage(const ScrubFetchDamage& damage, Bytes* records);

}  // namespace daruma::broker
