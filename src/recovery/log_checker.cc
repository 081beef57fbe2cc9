#include "recovery/log_checker.h"

#include <fmt/format.h>

#include <algorithm>
#include <array>
#include <map>
#include <mutex>
#include <nlohmann/json.hpp>
#include <span>
#include <thread>

#include "common/bytes.h"
#include "log/clean_shutdown_file.h"
#include "log/leader_epoch_file_cache.h"
#include "log/log_cleaner.h"
#include "log/log_file_names.h"
#include "log/meta_properties.h"
#include "log/partition_metadata_file.h"
#include "log/transaction_index.h"
#include "record/file_batch_reader.h"
#include "recovery/batch_order_check.h"
#include "recovery/log_loader.h"
#include "recovery/log_manager.h"
#include "recovery/metadata_log_check.h"
#include "recovery/producer_snapshot_check.h"
#include "recovery/progress_reporter.h"
#include "recovery/quarantine.h"
#include "recovery/read_ahead_file_system.h"
#include "recovery/scrub_findings_check.h"
#include "recovery/topic_config_check.h"

namespace daruma {

namespace {

constexpr char kRepairAction[] = "run `daruma repair` (the bytes are kept in quarantine)";
constexpr char kRebuildAction[] = "run `daruma repair` to rebuild it from the log";

// What a file start-up would delete without quarantining it is, by its name.
DamageKind KindOfDeletedFile(const std::string& path) {
  if (HasSuffix(path, kSwapFileSuffix)) return DamageKind::kInterruptedSwap;
  if (IsIndexFileName(path)) return DamageKind::kOrphanIndex;
  return DamageKind::kLeftoverTempFile;
}
// A segment file renamed for deletion waits file.delete.delay.ms (60 s)
// before it goes, and a compaction's output is `.cleaned` until it is swapped
// in: a crash in that time leaves them, and every start removes them (Kafka's
// deletes them, Daruma's keeps their bytes in the quarantine). The normal
// state of a dir that stopped shortly after a retention pass or a
// compaction: a note, not a problem.
bool IsDeletionLeftover(const std::string& path) {
  return HasSuffix(path, kDeletedFileSuffix) || HasSuffix(path, kCleanedFileSuffix);
}
const char* LeftBy(const std::string& path) {
  return HasSuffix(path, kDeletedFileSuffix) ? "a segment deletion" : "a compaction";
}
constexpr std::string_view kCannotLoad = "the log cannot be loaded: ";
constexpr std::string_view kTmpSuffix = ".tmp";

// A `<file>.tmp` is what a crash left of an atomic write (temp file, fsync,
// rename) before its rename: the file itself holds the state before that
// write, Kafka's loader and Daruma's ignore the temp file, and the next
// write of the file replaces it. A note, not a problem: nothing needs doing.
std::string TmpFileNote(const std::string& path) {
  return fmt::format(
      "{}: left-over temporary file of an interrupted write; ignored (the file it was to "
      "replace holds the state before that write), and the next write of that file replaces it",
      path);
}

using BatchInfo = CheckedBatch;

// `<offset>.snapshot` files of a partition dir, by offset.
std::map<int64_t, std::string> SnapshotFiles(const std::string& dir,
                                             const std::vector<DirEntry>& entries);

// The valid batches of one segment and where they end. When the bytes after
// `valid_end` are not a clean end of file the plan reports them, and index
// entries pointing there are consequences, not separate problems.
struct SegmentScan {
  std::vector<BatchInfo> batches;
  int64_t valid_end = 0;
  bool bad_tail = false;

  bool PastBadTail(int64_t position, int64_t offset) const {
    if (!bad_tail) return false;
    return position >= valid_end || batches.empty() || offset > batches.back().last_offset;
  }
};

class PartitionChecker {
 public:
  PartitionChecker(const CheckPartitionParams& p, const CheckOptions& o, PartitionCheck* out)
      : p_(p), o_(o), out_(out) {}

  void Run();

 private:
  void Problem(DamageKind kind, std::string file, int64_t position, std::optional<int64_t> offset,
               std::string what, std::string action, bool operator_only = false) {
    out_->problems.push_back({kind, std::move(file), position, offset, std::move(what),
                              std::move(action), operator_only});
  }
  // The per-segment half of the checks, kept until the plan has judged it.
  struct SegmentsPass {
    std::vector<DirEntry> entries;
    std::vector<int64_t> bases;
    std::map<int64_t, std::vector<BatchInfo>> all;
    // Per segment path: where its valid data ends when not at its end.
    std::map<std::string, std::optional<int64_t>> ends;
    std::unique_ptr<ProducerSnapshotCheck> snapshots;
    int64_t replayed_end = 0;
  };
  void Plan(FileSystem* read_ahead);
  // What the plan reads, in the order it reads it: the producer snapshots,
  // then per segment its indexes and its `.log` (none when the dir cannot be
  // listed). Small files are read ahead too: a small read queued behind the
  // read-ahead of a large one would stall the plan.
  std::vector<std::string> ReadAheadPaths();
  void ProblemsFromPlan();
  void OneRecommendationWhenUnloadable();
  // Scans every segment and checks its indexes. With `behind_plan` set, it
  // runs while the plan loads: each segment once the plan has read it, every
  // batch validated here. Null: after the plan, trusting where it ends data.
  Status ScanSegments(ReadAheadFileSystem* behind_plan, SegmentsPass* pass);
  // Whether the plan keeps exactly the data the pass found valid.
  bool MatchesPlan(const SegmentsPass& pass) const;
  // The checks that need the whole pass and the plan.
  Status FinishSegments(SegmentsPass* pass);
  // Feeds each valid batch to `snapshots` (null: not fed). `trust_plan`: the
  // plan has CRC-checked the batches and says where the valid data ends.
  Result<SegmentScan> ScanSegment(const std::string& log_path, ProducerSnapshotCheck* snapshots,
                                  bool trust_plan);
  // `rescanned`: a start rebuilds the file (Rescanned), so a missing one is
  // no problem.
  Status CheckOffsetIndex(int64_t base, const SegmentScan& scan, bool last, bool rescanned);
  Status CheckTimeIndex(int64_t base, const SegmentScan& scan, bool last, bool rescanned);
  Status CheckTxnIndexes(const std::vector<int64_t>& bases);
  // The .txnindex of segment `base` against the entries the control batches
  // put there.
  // Whether a start rescans segment `s` of `bases` and rebuilds its
  // indexes: no clean-shutdown marker, and the segment holds the recovery
  // point or lies past it (Kafka's recoverLog).
  bool Rescanned(const std::vector<int64_t>& bases, size_t s) const {
    return !p_.clean_shutdown &&
           (s + 1 == bases.size() || bases[s + 1] > p_.recovery_point_checkpoint);
  }
  void CheckTxnIndex(int64_t base, std::span<const std::array<int64_t, 4>> expected);
  Status CheckLeaderEpochs(const std::map<int64_t, std::vector<BatchInfo>>& batches);
  // Base offsets and leader epochs in order (recovery/batch_order_check.h);
  // sets out_->cut.
  void CheckBatchOrder(const std::map<int64_t, std::vector<BatchInfo>>& batches);
  // Bytes of `.log` data from the cut to the end of the log.
  int64_t BytesFrom(const std::map<int64_t, std::vector<BatchInfo>>& batches, int64_t base,
                    int64_t position);
  // Start-up rebuilds a missing index (a full scan of its segment); the
  // operator should know, and repair rebuilds it ahead of time.
  Status MissingIndex(const std::string& path) {
    Problem(DamageKind::kMissingIndex, path, -1, std::nullopt,
            "missing (start-up would rebuild it by scanning the segment)", kRebuildAction);
    return Status::Ok();
  }
  // Kafka's sanity check fails on such a file and start-up rebuilds it.
  Status BadIndexSize(const std::string& path, size_t size, size_t entry_size) {
    Problem(
        DamageKind::kCorruptIndex, path, int64_t(size - size % entry_size), std::nullopt,
        fmt::format("expected a size that is a multiple of {}, found {} bytes", entry_size, size),
        kRebuildAction);
    return Status::Ok();
  }
  // The preallocated slots of the active segment's index are zeros from the
  // first zero slot (`from`) to the end; anything else there is damage.
  static std::vector<uint8_t>::const_iterator FirstNonZero(const std::vector<uint8_t>& bytes,
                                                           size_t from) {
    return std::find_if(bytes.begin() + int64_t(from), bytes.end(),
                        [](uint8_t b) { return b != 0; });
  }
  static bool AllZeroFrom(const std::vector<uint8_t>& bytes, size_t from) {
    return FirstNonZero(bytes, from) == bytes.end();
  }
  Status CheckZeroTail(const std::string& path, const std::vector<uint8_t>& bytes, size_t from) {
    auto it = FirstNonZero(bytes, from);
    if (it == bytes.end()) return Status::Ok();
    Problem(DamageKind::kCorruptIndex, path, int64_t(it - bytes.begin()), std::nullopt,
            fmt::format("expected zeros after the last entry (preallocated slots from byte {}), "
                        "found byte 0x{:02x}",
                        from, *it),
            kRebuildAction);
    return Status::Ok();
  }
  void AddSnapshotProblems(std::vector<SnapshotProblem> found);
  bool HasProblemAbout(const std::string& file) const;
  Result<std::vector<uint8_t>> ReadWhole(const std::string& path);
  std::string PathOf(const std::string& name) const { return JoinPath(p_.partition_dir, name); }

  const CheckPartitionParams& p_;
  const CheckOptions& o_;
  PartitionCheck* out_;
};

void PartitionChecker::Run() {
  out_->tp = p_.tp;
  out_->dir = p_.partition_dir;
  // The plan and the segment pass run side by side: the pass takes each
  // segment right after the plan has read it (still cached), while the disk
  // reads the next ones (the kernel's sequential readahead, plus
  // ReadAheadFileSystem's WillNeed when options.read_ahead_bytes > 0), so the
  // disk is read once and overlaps the CPU work of both. The pass cannot trust the plan yet, so it
  // validates every batch itself; when the plan then disagrees with it about
  // where any segment's valid data ends (damage), its results are discarded
  // and the pass runs again behind the finished plan.
  ReadAheadFileSystem read_ahead(o_.fs, ReadAheadPaths(),
                                 uint64_t(std::max<int64_t>(0, o_.read_ahead_bytes)));
  SegmentsPass early;
  Status early_status;
  {
    std::thread plan([&] {
      Plan(&read_ahead);
      read_ahead.Finish();
    });
    early_status = ScanSegments(&read_ahead, &early);
    plan.join();
  }
  std::vector<CheckProblem> early_problems;
  early_problems.swap(out_->problems);
  ProblemsFromPlan();
  Status st;
  if (early_status.ok() && MatchesPlan(early)) {
    for (CheckProblem& p : early_problems) out_->problems.push_back(std::move(p));
    st = FinishSegments(&early);
  } else {
    SegmentsPass pass;
    st = ScanSegments(nullptr, &pass);
    if (st.ok()) st = FinishSegments(&pass);
  }
  if (!st.ok()) {
    Problem(DamageKindOfFailure(st), p_.partition_dir, -1, std::nullopt, st.ToString(),
            IsAccessDenied(st) ? "give the broker's user access to the file (chmod, chown, "
                                 "chattr -i), then check again"
                               : "check the disk");
  }
  OneRecommendationWhenUnloadable();
}

// A partition repair cannot load gets one recommendation: fix what stops the
// load. Advice to run `daruma repair` for its other problems would contradict
// it (repair refuses such a partition), so those point back at the load error.
void PartitionChecker::OneRecommendationWhenUnloadable() {
  if (out_->plan.errors.empty()) return;
  for (CheckProblem& p : out_->problems) {
    if (p.what.starts_with(kCannotLoad)) continue;
    if (p.action.find("daruma repair") == std::string::npos) continue;
    p.action =
        "first fix what stops the log from loading (the problem \"the log cannot be loaded\" "
        "of this partition); `daruma repair` refuses the partition until then";
  }
}

// Half 1: LoadLog on an overlay, as after an unclean shutdown from offset 0.
void PartitionChecker::Plan(FileSystem* read_ahead) {
  // Pages stay cached until the segment pass (ScanSegment) drops them, so the
  // disk is read once. The read-ahead file system tells the pass how far the
  // plan has read (and may advise the kernel to read ahead).
  OverlayFileSystem overlay(read_ahead, OverlayOptions{false});
  LoadLogParams params{.fs = &overlay,
                       .log_dir = p_.log_dir,
                       .partition_dir = p_.partition_dir,
                       .tp = p_.tp,
                       .config = o_.config,
                       .clock = o_.clock,
                       .had_clean_shutdown = false,
                       .recovery_point_checkpoint = 0,
                       .log_start_offset_checkpoint = p_.log_start_offset_checkpoint,
                       .quarantine = true,
                       .remaining_segments = nullptr,
                       .scanned_bytes_progress = o_.scanned_bytes,
                       // The overlay is thrown away: nothing to undo.
                       .transactional = false};
  auto log = LoadLog(params, &out_->plan);
  if (!log.ok()) {
    out_->load_failed = true;
    out_->plan.errors.push_back(log.status().ToString());
    out_->plan.damage.push_back({DamageKindOfFailure(log.status()), out_->plan.errors.back()});
  }
  out_->changes = overlay.changes();
}

std::vector<std::string> PartitionChecker::ReadAheadPaths() {
  auto entries = o_.fs->ListDir(p_.partition_dir);
  if (!entries.ok()) return {};
  std::vector<int64_t> bases;
  for (const DirEntry& e : *entries) {
    if (!e.is_regular || !HasSuffix(e.name, kLogFileSuffix)) continue;
    auto base = OffsetFromFileName(e.name);
    if (base.ok()) bases.push_back(*base);
  }
  std::sort(bases.begin(), bases.end());
  std::vector<std::string> out;
  for (const auto& [offset, path] : SnapshotFiles(p_.partition_dir, *entries)) out.push_back(path);
  for (int64_t base : bases) {
    for (const std::string& index :
         {OffsetIndexFileName(p_.partition_dir, base), TimeIndexFileName(p_.partition_dir, base)}) {
      if (o_.fs->Exists(index)) out.push_back(index);
    }
    out.push_back(LogFileName(p_.partition_dir, base));
  }
  return out;
}

void PartitionChecker::ProblemsFromPlan() {
  const PartitionRecoveryReport& r = out_->plan;
  for (const std::string& e : r.errors) {
    auto reported = std::find_if(r.damage.begin(), r.damage.end(),
                                 [&](const ReportedDamage& d) { return d.text == e; });
    Problem(reported != r.damage.end() ? reported->kind : DamageKind::kUnloadable, p_.partition_dir,
            -1, std::nullopt, std::string(kCannotLoad) + e,
            "fix or move the named file by hand; `daruma repair` cannot load it either");
  }
  std::vector<std::string> covered;
  const std::string active_log =
      r.segments.empty() ? "" : LogFileName(p_.partition_dir, r.segments.back().base_offset);
  for (const QuarantinedRange& q : r.quarantined) {
    // Zeros after the active segment's last batch (an empty quarantine path
    // means 4 KiB or more of zeros only) are the unused part of a segment
    // preallocated by log.preallocate: every live broker's dir has them, and
    // recovery cuts them without losing a byte. Not a problem, unless the dir
    // was shut down cleanly: Kafka trims the active segment when it closes
    // it (LogSegment.close), so there the zeros are damage, and start-up
    // recovers that segment as after a crash (which repair does now).
    if (q.quarantine_path.empty() && q.file == active_log && !p_.clean_shutdown) continue;
    covered.push_back(q.file);
    if (IsDeletionLeftover(q.file)) {
      out_->notes.push_back(
          fmt::format("{}: left by {} a crash or shutdown came before; start-up moves it to the "
                      "partition's quarantine ({} bytes)",
                      q.file, LeftBy(q.file), q.bytes));
      continue;
    }
    // A copy of a snapshot or epoch file above the recovered end: evidence
    // kept of records the damage reported here took, not damage of its own.
    if (q.kind == DamageKind::kLostRecords) continue;
    if (HasSuffix(q.file, kLogFileSuffix)) out_->data_bytes_dropped += q.bytes;
    Problem(q.kind, q.file, q.from_position, q.first_offset,
            fmt::format("{} ({} bytes would be dropped)", q.reason, q.bytes), kRepairAction);
  }
  for (const QuarantinedRange& q : r.not_kept) {
    // Inside a file the loop above reports as dropped: its bytes are counted
    // there, but a range no split segment keeps is a finding of its own.
    Problem(q.kind, q.file, q.from_position, q.first_offset, q.reason, kRepairAction);
  }
  for (const std::string& f : r.stray_files) {
    Problem(DamageKind::kStrayFile, f, -1, std::nullopt,
            "not a Kafka file (a segment or snapshot suffix without an offset name): Daruma "
            "leaves it and loads the partition without it, Kafka refuses to load the partition",
            "move it out of the partition dir before Kafka opens it", /*operator_only=*/true);
  }
  for (const std::string& f : r.deleted_files) {
    if (std::find(covered.begin(), covered.end(), f) != covered.end()) continue;
    if (HasSuffix(f, kProducerSnapshotFileSuffix) ||
        HasSuffix(f, std::string(kProducerSnapshotFileSuffix) + std::string(kDeletedFileSuffix))) {
      continue;  // derived state Kafka drops and rebuilds on every start
    }
    if (IsDeletionLeftover(f)) {
      out_->notes.push_back(fmt::format(
          "{}: left by {} a crash or shutdown came before; start-up deletes it", f, LeftBy(f)));
      continue;
    }
    Problem(KindOfDeletedFile(f), f, -1, std::nullopt, "start-up would delete this file",
            kRepairAction);
  }
}

Result<std::vector<uint8_t>> PartitionChecker::ReadWhole(const std::string& path) {
  DARUMA_ASSIGN_OR_RETURN(auto file, o_.fs->Open(path, OpenMode::kRead));
  DARUMA_ASSIGN_OR_RETURN(uint64_t size, file->Size());
  std::vector<uint8_t> out(size);
  DARUMA_ASSIGN_OR_RETURN(size_t n, file->ReadAt(0, out));
  out.resize(n);
  if (o_.drop_cache) file->DropCache(0, size);
  return out;
}

// Where the plan found the valid data of `log_path` to end: the start of
// its first quarantined range, nullopt when it keeps the whole file.
std::optional<int64_t> PlannedEnd(const PartitionRecoveryReport& plan,
                                  const std::string& log_path) {
  std::optional<int64_t> end;
  for (const QuarantinedRange& q : plan.quarantined) {
    if (q.file == log_path && (!end || q.from_position < *end)) end = q.from_position;
  }
  return end;
}

// When the plan loaded the log, it has CRC-checked every batch of it and
// says where each segment's valid data ends: this second pass then reads
// headers only, from mapped pages. Otherwise it validates every batch itself.
Result<SegmentScan> PartitionChecker::ScanSegment(const std::string& log_path,
                                                  ProducerSnapshotCheck* snapshots,
                                                  bool trust_plan) {
  DARUMA_ASSIGN_OR_RETURN(auto file, o_.fs->Open(log_path, OpenMode::kRead));
  const std::optional<int64_t> planned_end =
      trust_plan ? PlannedEnd(out_->plan, log_path) : std::nullopt;
  FileBatchReaderOptions ro;
  // Not per block: each DONTNEED drains the page LRU on every CPU (about
  // 0.4 ms); the whole segment is dropped once below.
  ro.drop_cache = false;
  ro.map = true;
  ro.block_size = size_t(4) << 20;  // populated, then released, a block at a time
  if (planned_end) ro.end_position = uint64_t(*planned_end);
  auto reader = std::make_unique<FileBatchReader>(file.get(), ro);
  SegmentScan scan;
  scan.bad_tail = planned_end.has_value();
  std::vector<BatchInfo>& batches = scan.batches;
  int64_t max_ts = -1;
  while (auto entry = reader->Next()) {
    if (!entry->has_batch_header() || (!trust_plan && !entry->Validate().ok())) {
      scan.bad_tail = true;  // the plan reports it
      break;
    }
    BatchInfo b;
    b.position = entry->position;
    b.last_offset = entry->last_offset();
    b.base_offset = entry->is_v2() ? entry->batch().base_offset() : b.last_offset;
    max_ts = std::max(max_ts, entry->max_timestamp());
    b.max_timestamp_so_far = max_ts;
    b.leader_epoch = entry->partition_leader_epoch();
    batches.push_back(b);
    if (snapshots != nullptr) snapshots->OnBatch(*entry);
    scan.valid_end = entry->position + int64_t(entry->size());
  }
  if (!reader->io_status().ok()) return reader->io_status();
  if (reader->stop_reason() != StopReason::kEndOfFile) scan.bad_tail = true;
  reader.reset();       // unmaps its last block: mapped pages cannot be dropped
  if (o_.drop_cache) {  // the plan's pages too, including a tail it quarantines
    auto size = file->Size();
    if (size.ok()) file->DropCache(0, *size);
  }
  return scan;
}

// `<offset>.snapshot` files of a partition dir, by offset.
std::map<int64_t, std::string> SnapshotFiles(const std::string& dir,
                                             const std::vector<DirEntry>& entries) {
  std::map<int64_t, std::string> out;
  for (const DirEntry& e : entries) {
    if (!e.is_regular || !HasSuffix(e.name, kProducerSnapshotFileSuffix)) continue;
    auto offset = OffsetFromFileName(e.name);
    if (offset.ok()) out[*offset] = JoinPath(dir, e.name);
  }
  return out;
}

const BatchInfo* BatchAt(const std::vector<BatchInfo>& batches, int64_t position) {
  auto it = std::lower_bound(batches.begin(), batches.end(), position,
                             [](const BatchInfo& b, int64_t p) { return b.position < p; });
  if (it == batches.end() || it->position != position) return nullptr;
  return &*it;
}

const BatchInfo* BatchHolding(const std::vector<BatchInfo>& batches, int64_t offset) {
  auto it = std::lower_bound(batches.begin(), batches.end(), offset,
                             [](const BatchInfo& b, int64_t o) { return b.last_offset < o; });
  if (it == batches.end() || it->base_offset > offset) return nullptr;
  return &*it;
}

Status PartitionChecker::CheckOffsetIndex(int64_t base, const SegmentScan& scan, bool last,
                                          bool rescanned) {
  const std::vector<BatchInfo>& batches = scan.batches;
  const std::string path = OffsetIndexFileName(p_.partition_dir, base);
  if (!o_.fs->Exists(path)) return rescanned ? Status::Ok() : MissingIndex(path);
  DARUMA_ASSIGN_OR_RETURN(std::vector<uint8_t> bytes, ReadWhole(path));
  if (bytes.size() % 8 != 0) return BadIndexSize(path, bytes.size(), 8);
  const size_t entries = bytes.size() / 8;
  int64_t prev = -1;
  for (size_t i = 0; i < entries; ++i) {
    const int64_t pos_in_file = int64_t(i * 8);
    const int64_t rel = int32_t(LoadBe32(bytes.data() + i * 8));
    const int64_t position = int32_t(LoadBe32(bytes.data() + i * 8 + 4));
    const int64_t offset = base + rel;
    // A zero slot ends the entries. In the active segment a file of zero
    // slots only is one too: Kafka's first entry lies past
    // index.interval.bytes, so a segment shorter than that (or empty) has
    // none yet after a crash, which recovery rebuilds as a matter of course.
    if (i == 0 && last && AllZeroFrom(bytes, 0)) return Status::Ok();
    if (i > 0 && rel == 0 && position == 0) {
      if (last) return CheckZeroTail(path, bytes, i * 8);  // the active segment's preallocation
      Problem(
          DamageKind::kCorruptIndex, path, pos_in_file, std::nullopt,
          fmt::format("{} zero-filled slots after the last entry (index not trimmed)", entries - i),
          kRebuildAction);
      return Status::Ok();
    }
    if (scan.PastBadTail(position, offset)) return Status::Ok();
    std::string wrong;
    const BatchInfo* b = BatchAt(batches, position);
    if (offset <= prev) {
      wrong = fmt::format("offset {} is not above the previous entry's {}", offset, prev);
    } else if (b == nullptr) {
      wrong = fmt::format("position {} is not the start of a valid batch of {}", position,
                          LogFileName(p_.partition_dir, base));
    } else if (offset < b->base_offset || offset > b->last_offset) {
      wrong = fmt::format("expected an offset in [{}, {}] (the batch at position {}), found {}",
                          b->base_offset, b->last_offset, position, offset);
    }
    if (!wrong.empty()) {
      Problem(DamageKind::kCorruptIndex, path, pos_in_file, offset,
              fmt::format("bad index entry {}: {}", i, wrong), kRebuildAction);
      return Status::Ok();  // one problem per file: the whole index is rebuilt anyway
    }
    prev = offset;
  }
  return Status::Ok();
}

Status PartitionChecker::CheckTimeIndex(int64_t base, const SegmentScan& scan, bool last,
                                        bool rescanned) {
  const std::vector<BatchInfo>& batches = scan.batches;
  const std::string path = TimeIndexFileName(p_.partition_dir, base);
  if (!o_.fs->Exists(path)) return rescanned ? Status::Ok() : MissingIndex(path);
  DARUMA_ASSIGN_OR_RETURN(std::vector<uint8_t> bytes, ReadWhole(path));
  if (bytes.size() % 12 != 0) return BadIndexSize(path, bytes.size(), 12);
  const size_t entries = bytes.size() / 12;
  int64_t prev_ts = -1, prev_offset = -1;
  for (size_t i = 0; i < entries; ++i) {
    const int64_t pos_in_file = int64_t(i * 12);
    const int64_t ts = int64_t(LoadBe64(bytes.data() + i * 12));
    const int64_t rel = int32_t(LoadBe32(bytes.data() + i * 12 + 8));
    const int64_t offset = base + rel;
    // As for the offset index (a real entry 0 of timestamp 0 at the base
    // offset alone in the file is then left unchecked).
    if (i == 0 && last && AllZeroFrom(bytes, 0)) return Status::Ok();
    if (i > 0 && ts == 0 && rel == 0) {
      if (last) return CheckZeroTail(path, bytes, i * 12);
      Problem(
          DamageKind::kCorruptIndex, path, pos_in_file, std::nullopt,
          fmt::format("{} zero-filled slots after the last entry (index not trimmed)", entries - i),
          kRebuildAction);
      return Status::Ok();
    }
    if (scan.PastBadTail(0, offset)) return Status::Ok();
    std::string wrong;
    const BatchInfo* b = BatchHolding(batches, offset);
    if (i > 0 && ts <= prev_ts) {
      wrong = fmt::format("timestamp {} is not above the previous entry's {}", ts, prev_ts);
    } else if (offset < prev_offset) {
      wrong = fmt::format("offset {} is below the previous entry's {}", offset, prev_offset);
    } else if (b == nullptr) {
      wrong = fmt::format("offset {} is in no valid batch of {}", offset,
                          LogFileName(p_.partition_dir, base));
    } else if (b != batches.data() && (b - 1)->max_timestamp_so_far >= ts) {
      wrong = fmt::format(
          "expected the offset of the batch that first reached timestamp {}, found {} (a later "
          "batch)",
          ts, offset);
    } else if (ts != b->max_timestamp_so_far) {
      // Kafka appends (maxTimestampSoFar, offsetOfMaxTimestampSoFar): at the
      // batch holding the offset, the running maximum is exactly the entry's.
      wrong = fmt::format(
          "expected timestamp {} (the largest batch timestamp up to offset {}), found {}",
          b->max_timestamp_so_far, offset, ts);
    }
    if (!wrong.empty()) {
      Problem(DamageKind::kCorruptIndex, path, pos_in_file, offset,
              fmt::format("bad time index entry {}: {}", i, wrong), kRebuildAction);
      return Status::Ok();
    }
    prev_ts = ts;
    prev_offset = offset;
  }
  return Status::Ok();
}

// The .txnindex files must hold exactly what the plan rebuilt from the
// control batches, in order. Kafka lists an aborted transaction in the
// .txnindex of the segment that holds its ABORT marker (the entry's last
// offset), so the files are compared segment by segment: a missing or short
// file is named itself, not the next file whose entries then look shifted.
Status PartitionChecker::CheckTxnIndexes(const std::vector<int64_t>& bases) {
  if (out_->load_failed) return Status::Ok();
  const auto& expected = out_->plan.aborted_transactions;
  size_t k = 0;  // the first expected entry not yet matched to a segment
  for (size_t s = 0; s < bases.size(); ++s) {
    while (k < expected.size() && expected[k][2] < bases[s]) ++k;  // below the log start
    size_t end = k;
    while (end < expected.size() && (s + 1 == bases.size() || expected[end][2] < bases[s + 1])) {
      ++end;
    }
    // Without the marker, a start rescans the segments from the one holding
    // the recovery point on and rebuilds their .txnindex (Kafka's
    // recoverLog, LogSegment.recover): a crash between an ABORT marker and
    // its entry (or the entry's page written back and not the marker's)
    // leaves them out of step, which is routine.
    if (!Rescanned(bases, s)) CheckTxnIndex(bases[s], std::span(expected).subspan(k, end - k));
    k = end;
  }
  return Status::Ok();
}

void PartitionChecker::CheckTxnIndex(int64_t base,
                                     std::span<const std::array<int64_t, 4>> expected) {
  const std::string path = TxnIndexFileName(p_.partition_dir, base);
  auto describe = [](const std::array<int64_t, 4>& e) {
    return fmt::format("(pid {}, first {}, last {}, lso {})", e[0], e[1], e[2], e[3]);
  };
  if (!o_.fs->Exists(path)) {
    if (!expected.empty()) {
      Problem(DamageKind::kMissingIndex, path, -1, expected[0][2],
              fmt::format("missing: the control batches abort {} transaction(s) in this "
                          "segment, the first {}; a read_committed consumer would get their "
                          "records",
                          expected.size(), describe(expected[0])),
              kRebuildAction);
    }
    return;
  }
  Result<uint64_t> size = o_.fs->FileSize(path);
  if (size.ok() && *size % AbortedTxn::kSize != 0) {
    Problem(DamageKind::kCorruptIndex, path, int64_t(*size - *size % AbortedTxn::kSize),
            std::nullopt,
            fmt::format("expected a size that is a multiple of {}, found {} bytes",
                        AbortedTxn::kSize, *size),
            kRebuildAction);
    return;
  }
  TransactionIndex index(path, base, o_.fs, false);
  auto entries = index.AllAbortedTxns();
  if (!entries.ok()) {
    Problem(DamageKind::kCorruptIndex, path, -1, std::nullopt, entries.status().message(),
            kRebuildAction);
    return;
  }
  for (size_t i = 0; i < std::max(entries->size(), expected.size()); ++i) {
    if (i >= entries->size()) {
      Problem(DamageKind::kCorruptIndex, path, int64_t(i * AbortedTxn::kSize), expected[i][2],
              fmt::format("missing aborted transaction {}: the control batches abort it in "
                          "this segment but its .txnindex ends after {} entries",
                          describe(expected[i]), entries->size()),
              kRebuildAction);
      return;
    }
    const AbortedTxn& t = (*entries)[i];
    const std::array<int64_t, 4> found{t.producer_id, t.first_offset, t.last_offset,
                                       t.last_stable_offset};
    if (i < expected.size() && expected[i] == found) continue;
    Problem(DamageKind::kCorruptIndex, path, int64_t(i * AbortedTxn::kSize), t.last_offset,
            fmt::format("aborted transaction entry {}: expected {} from the control batches, "
                        "found {}",
                        i, i < expected.size() ? describe(expected[i]) : "no entry", t.ToString()),
            kRebuildAction);
    return;
  }
}

Status PartitionChecker::CheckLeaderEpochs(
    const std::map<int64_t, std::vector<BatchInfo>>& batches) {
  const std::string path = PathOf(kLeaderEpochCheckpointFileName);
  if (!o_.fs->Exists(path)) return Status::Ok();
  DARUMA_ASSIGN_OR_RETURN(std::vector<uint8_t> bytes, ReadWhole(path));
  auto entries = LeaderEpochFileCache::Parse(
      std::string_view(reinterpret_cast<const char*>(bytes.data()), bytes.size()), path);
  if (!entries.ok()) {
    // The plan's load already quarantines a file it cannot parse, which is
    // reported with the bytes it drops: one finding per file.
    const bool reported = std::any_of(out_->problems.begin(), out_->problems.end(),
                                      [&](const CheckProblem& p) { return p.file == path; });
    if (!reported) {
      Problem(DamageKind::kCorruptCheckpoint, path, -1, std::nullopt, entries.status().message(),
              "run `daruma repair` (start-up rewrites it from the batches)");
    }
    return Status::Ok();
  }
  for (const auto& [base, list] : batches) {
    for (const BatchInfo& b : list) {
      if (b.leader_epoch < 0 || b.last_offset < p_.log_start_offset_checkpoint) continue;
      if (out_->cut && (base > out_->cut->segment_base ||
                        (base == out_->cut->segment_base && b.position >= out_->cut->position))) {
        return Status::Ok();  // repair cuts the log here; the batches after it go
      }
      // A log start offset inside the batch (DeleteRecords moves it to any
      // offset) starts the first epoch entry there: Kafka's truncateFromStart
      // writes that, and so does start-up.
      const int64_t first = std::max(b.base_offset, p_.log_start_offset_checkpoint);
      std::optional<int32_t> mapped;
      for (const EpochEntry& e : *entries) {
        if (e.second <= first) mapped = e.first;
      }
      if (mapped && *mapped == b.leader_epoch) continue;
      Problem(DamageKind::kCorruptCheckpoint, path, -1, b.base_offset,
              fmt::format("expected epoch {} (the batch at {}:{}), found {}", b.leader_epoch,
                          LogFileName(p_.partition_dir, base), b.position,
                          mapped ? std::to_string(*mapped) : std::string("no epoch")),
              "run `daruma repair`, which rebuilds it from the batches (`daruma recover` and "
              "`daruma serve` keep it, as Kafka does)");
      return Status::Ok();
    }
  }
  return Status::Ok();
}

bool PartitionChecker::HasProblemAbout(const std::string& file) const {
  return std::any_of(out_->problems.begin(), out_->problems.end(),
                     [&](const CheckProblem& p) { return p.file == file; });
}

// A snapshot the plan already reports (quarantined, unreadable) is not
// reported twice.
void PartitionChecker::AddSnapshotProblems(std::vector<SnapshotProblem> found) {
  for (SnapshotProblem& s : found) {
    if (HasProblemAbout(s.file)) continue;
    Problem(DamageKind::kCorruptSnapshot, std::move(s.file), s.position, s.offset,
            std::move(s.what), "run `daruma repair` (it rebuilds producer snapshots from the log)");
  }
}

// Half 2: what the loader rebuilds instead of verifying.
Status PartitionChecker::ScanSegments(ReadAheadFileSystem* behind_plan, SegmentsPass* pass) {
  DARUMA_ASSIGN_OR_RETURN(pass->entries, o_.fs->ListDir(p_.partition_dir));
  for (const DirEntry& e : pass->entries) {
    if (!e.is_regular) continue;
    if (HasSuffix(e.name, kTmpSuffix)) out_->notes.push_back(TmpFileNote(PathOf(e.name)));
    if (!HasSuffix(e.name, kLogFileSuffix)) continue;
    auto base = OffsetFromFileName(e.name);
    if (base.ok()) pass->bases.push_back(*base);
  }
  std::sort(pass->bases.begin(), pass->bases.end());
  // After a crash, the start rebuilds the producer state from the first
  // rescanned segment's base on (ProducerSnapshotCheck's `rebuilt_from`).
  std::optional<int64_t> rebuilt_from;
  for (size_t i = 0; i < pass->bases.size() && !rebuilt_from; ++i) {
    if (Rescanned(pass->bases, i)) rebuilt_from = pass->bases[i];
  }
  pass->snapshots = std::make_unique<ProducerSnapshotCheck>(
      o_.fs, p_.partition_dir, p_.tp.ToString(), SnapshotFiles(p_.partition_dir, pass->entries),
      o_.config.producer_id_expiration_ms, o_.drop_cache, rebuilt_from);
  const bool trust_plan = behind_plan == nullptr && !out_->load_failed;
  // The replay follows the data recovery keeps: it stops at the first bad tail.
  bool replaying = true;
  for (size_t i = 0; i < pass->bases.size(); ++i) {
    const std::string path = LogFileName(p_.partition_dir, pass->bases[i]);
    if (behind_plan != nullptr) behind_plan->WaitUntilRead(path);
    DARUMA_ASSIGN_OR_RETURN(
        SegmentScan scan,
        ScanSegment(path, replaying ? pass->snapshots.get() : nullptr, trust_plan));
    if (replaying && !scan.batches.empty()) {
      pass->replayed_end = scan.batches.back().last_offset + 1;
    }
    replaying = replaying && !scan.bad_tail;
    pass->ends[path] = scan.bad_tail ? std::optional<int64_t>(scan.valid_end) : std::nullopt;
    const bool last = i + 1 == pass->bases.size();
    // A start rebuilds a rescanned segment's indexes (LogSegment.recover
    // resets them), so one a crash came before is routine there. The entries
    // that are there are still checked: one that names another offset than
    // its batch holds tells of a damaged batch header (a base offset, which
    // the CRC does not cover) that the batches alone may not show.
    const bool rescanned = Rescanned(pass->bases, i);
    DARUMA_RETURN_IF_ERROR(CheckOffsetIndex(pass->bases[i], scan, last, rescanned));
    DARUMA_RETURN_IF_ERROR(CheckTimeIndex(pass->bases[i], scan, last, rescanned));
    pass->all[pass->bases[i]] = std::move(scan.batches);
  }
  return Status::Ok();
}

bool PartitionChecker::MatchesPlan(const SegmentsPass& pass) const {
  if (out_->load_failed) return false;
  for (const auto& [path, end] : pass.ends) {
    if (PlannedEnd(out_->plan, path) != end) return false;
  }
  return true;
}

Status PartitionChecker::FinishSegments(SegmentsPass* pass) {
  const int64_t replayed_end = pass->replayed_end;
  AddSnapshotProblems(pass->snapshots->Finish(replayed_end));
  // After an unclean shutdown a start rebuilds the producer state from the
  // log whatever the snapshots: none at all is normal then.
  if (p_.clean_shutdown && pass->snapshots->saw_producer_batches() &&
      SnapshotFiles(p_.partition_dir, pass->entries).empty()) {
    Problem(DamageKind::kCorruptSnapshot, ProducerSnapshotFileName(p_.partition_dir, replayed_end),
            -1, replayed_end,
            "missing: no producer snapshot at all, so a clean start would begin with empty "
            "producer state (open transactions and sequence numbers forgotten)",
            "run `daruma repair` (it rebuilds producer snapshots from the log)");
  }
  DARUMA_RETURN_IF_ERROR(CheckTxnIndexes(pass->bases));
  CheckBatchOrder(pass->all);
  return CheckLeaderEpochs(pass->all);
}

void PartitionChecker::CheckBatchOrder(const std::map<int64_t, std::vector<BatchInfo>>& batches) {
  std::vector<CheckedSegment> segments;
  for (const auto& [base, list] : batches) segments.push_back({base, list});
  std::optional<BatchOrderCut> found = FindBatchOrderCut(segments);
  if (!found) return;
  const CheckedSegment& segment = segments[found->segment];
  const CheckedBatch& batch = segment.batches[found->batch];
  LogCut cut;
  cut.file = LogFileName(p_.partition_dir, segment.base_offset);
  cut.segment_base = segment.base_offset;
  cut.position = batch.position;
  cut.offset = batch.base_offset;
  cut.bytes = BytesFrom(batches, segment.base_offset, batch.position);
  cut.kind = found->kind;
  // What the plan drops inside the cut range is not counted twice.
  int64_t planned_inside = 0;
  for (const QuarantinedRange& q : out_->plan.quarantined) {
    if (!HasSuffix(q.file, kLogFileSuffix)) continue;
    auto base = OffsetFromFileName(BaseName(q.file));
    if (!base.ok()) continue;
    if (*base > cut.segment_base || (*base == cut.segment_base && q.from_position >= cut.position))
      planned_inside += q.bytes;
  }
  out_->data_bytes_dropped += cut.bytes - planned_inside;
  Problem(cut.kind, cut.file, cut.position, cut.offset,
          fmt::format("{}; recovery checks the order within each segment only and keeps such a "
                      "batch, so repair cuts the log at it ({} bytes "
                      "from here to the end of the log would be dropped)",
                      found->what, cut.bytes),
          fmt::format("run `daruma repair --max-corrupt-bytes {}` to cut the log here (the bytes "
                      "are kept in quarantine), or delete the partition dir if another replica "
                      "has the data",
                      std::max(out_->data_bytes_dropped, cut.bytes)));
  out_->cut = std::move(cut);
}

int64_t PartitionChecker::BytesFrom(const std::map<int64_t, std::vector<BatchInfo>>& batches,
                                    int64_t base, int64_t position) {
  int64_t bytes = 0;
  for (const auto& entry : batches) {
    if (entry.first < base) continue;
    auto size = o_.fs->FileSize(LogFileName(p_.partition_dir, entry.first));
    if (!size.ok()) continue;
    bytes += int64_t(*size) - (entry.first == base ? position : 0);
  }
  return bytes;
}

int64_t Lookup(const OffsetMap& m, const TopicPartition& tp) {
  auto it = m.find(tp);
  return it == m.end() ? 0 : it->second;
}

// Byte position of `tp`'s line in a checkpoint file (-1 if not found).
int64_t LinePosition(FileSystem* fs, const std::string& path, const TopicPartition& tp) {
  auto bytes = fs->ReadFile(path);
  if (!bytes.ok()) return -1;
  const std::string text(bytes->begin(), bytes->end());
  const std::string needle = "\n" + tp.topic + " " + std::to_string(tp.partition) + " ";
  const size_t at = text.find(needle);
  return at == std::string::npos ? -1 : int64_t(at + 1);
}

void CheckCheckpoints(const CheckOptions& o, LogDirCheck* d) {
  struct Named {
    const char* file;
    const OffsetMap* map;
    const char* what;
  };
  const Named all[] = {
      {kRecoveryPointCheckpointFile, &d->recovery_points, "recovery point"},
      {kLogStartOffsetCheckpointFile, &d->log_start_offsets, "log start offset"},
      {kReplicationOffsetCheckpointFile, &d->high_watermarks, "high watermark"},
      {kCleanerOffsetCheckpointFileName, &d->cleaner_offsets, "cleaner offset"},
  };
  for (const PartitionCheck& p : d->partitions) {
    if (p.load_failed) continue;
    const int64_t leo = p.plan.log_end_offset;
    for (const Named& n : all) {
      auto it = n.map->find(p.tp);
      if (it == n.map->end() || it->second <= leo) continue;
      const std::string path = JoinPath(d->path, n.file);
      CheckProblem problem{
          DamageKind::kCorruptCheckpoint,
          path,
          LinePosition(o.fs, path, p.tp),
          it->second,
          fmt::format("{} of {} is {}, above the log end offset {}", n.what, p.tp.ToString(),
                      it->second, leo),
          "run `daruma repair` (it rewrites the checkpoints <= the log end offset)"};
      problem.partition = p.tp;
      d->problems.push_back(std::move(problem));
    }
  }
}

// partition.metadata (Kafka >= 2.8). A missing one is no problem: the
// broker writes it. One that does not parse stops nothing either: `daruma
// serve` sets it aside in the partition's quarantine and writes it again;
// repair leaves it to that.
void ReadPartitionMetadata(const CheckOptions& o, PartitionCheck* p) {
  PartitionMetadataFile file(JoinPath(p->dir, kPartitionMetadataFileName), o.fs);
  Result<PartitionMetadata> meta = file.Read();
  if (meta.ok()) {
    p->topic_id = meta->topic_id;
    return;
  }
  if (meta.status().IsNotFound()) return;
  const bool io = meta.status().IsIoError();
  p->problems.push_back(
      {io ? DamageKind::kIoError : DamageKind::kCorruptMetadata, file.path(), -1, std::nullopt,
       meta.status().message(),
       io ? "check the disk and the file's permissions"
          : "`daruma serve` sets it aside in the partition's daruma-quarantine/ and writes it "
            "again with the id of the topic's other partitions (a new id if none has one); "
            "restore it first if the topic's id matters to your clients",
       /*operator_only=*/true});
}

// The partitions of one topic share its id. One whose partition.metadata
// names another (a partition dir left from a deleted topic of the same name,
// or copied from another cluster) is stray to Kafka, which sets it aside
// (`-stray`) instead of serving it; Daruma would serve it under the first id.
void CheckTopicIdsAgree(LogDirCheck* d) {
  std::map<std::string, const PartitionCheck*> first;  // by topic
  for (const PartitionCheck& p : d->partitions) {
    if (!p.topic_id) continue;
    auto [it, inserted] = first.emplace(p.tp.topic, &p);
    if (inserted || *it->second->topic_id == *p.topic_id) continue;
    CheckProblem problem{
        DamageKind::kDirConflict,
        JoinPath(p.dir, kPartitionMetadataFileName),
        -1,
        std::nullopt,
        fmt::format("topic id {} differs from {} in {}: the partitions belong to different "
                    "topics of the same name, and Kafka treats the one its metadata does not "
                    "know as stray",
                    p.topic_id->ToString(), it->second->topic_id->ToString(),
                    JoinPath(it->second->dir, kPartitionMetadataFileName)),
        "move the partition dir of the other topic out of the log dir (compare both with "
        "`daruma dump`)",
        /*operator_only=*/true};
    problem.partition = p.tp;
    d->problems.push_back(std::move(problem));
  }
}

// A meta.properties that does not parse stops Kafka, `daruma serve` and
// `daruma recover` from opening the dir; only an operator knows its ids.
void CheckMetaPropertiesFile(const CheckOptions& o, LogDirCheck* d) {
  const std::string path = JoinPath(d->path, kMetaPropertiesFileName);
  if (!o.fs->Exists(path)) return;
  Result<MetaProperties> meta = MetaProperties::Read(path, o.fs);
  if (meta.ok()) return;
  const bool io = meta.status().IsIoError();
  d->problems.push_back(
      {io ? DamageKind::kIoError : DamageKind::kCorruptMetadata, path, -1, std::nullopt,
       meta.status().message() + " (Kafka, `daruma serve` and `daruma recover` refuse to start)",
       io ? "check the disk and the file's permissions"
          : "write it again with this broker's cluster.id and node.id (as in its other log dirs "
            "or its server.properties)",
       /*operator_only=*/true});
}

OffsetMap ReadCheckpoint(const CheckOptions& o, LogDirCheck* d, const char* name) {
  const std::string path = JoinPath(d->path, name);
  if (!o.fs->Exists(path)) return {};
  auto bytes = o.fs->ReadFile(path);
  Result<OffsetMap> map =
      bytes.ok()
          ? OffsetCheckpointFile::Parse(
                std::string_view(reinterpret_cast<const char*>(bytes->data()), bytes->size()), path)
          : Result<OffsetMap>(bytes.status());
  if (map.ok()) return std::move(*map);
  d->problems.push_back({DamageKind::kCorruptCheckpoint, path, -1, std::nullopt,
                         map.status().message(),
                         "run `daruma repair` (it rewrites the checkpoints)"});
  return {};
}

}  // namespace

void CheckDirsAgree(std::vector<LogDirCheck>* dirs, FileSystem* fs) {
  std::map<TopicPartition, std::string> live;  // partition -> its first dir
  std::optional<std::pair<std::string, MetaProperties>> first_meta;
  std::vector<std::pair<std::string, MetaProperties>> metas;  // for the directory ids
  std::map<std::string, LogDirCheck*> dir_of_meta;
  for (LogDirCheck& d : *dirs) {
    for (const PartitionCheck& p : d.partitions) {
      if (BaseName(p.dir) != LogDirName(p.tp)) continue;  // a `-future` copy may coexist
      auto [it, inserted] = live.emplace(p.tp, p.dir);
      if (inserted) continue;
      d.problems.push_back(
          {DamageKind::kDirConflict, p.dir, -1, std::nullopt,
           fmt::format("partition {} is also live in {}: Kafka and `daruma recover` refuse to "
                       "start",
                       p.tp.ToString(), it->second),
           "move one copy out of the log dirs (compare both with `daruma dump`)", true});
    }
    const std::string meta_path = JoinPath(d.path, kMetaPropertiesFileName);
    if (!fs->Exists(meta_path)) continue;
    Result<MetaProperties> meta = MetaProperties::Read(meta_path, fs);
    if (!meta.ok()) continue;  // reported by the dir's own checks
    metas.emplace_back(meta_path, *meta);
    dir_of_meta[meta_path] = &d;
    if (!first_meta) {
      first_meta.emplace(meta_path, *meta);
      continue;
    }
    const MetaProperties& f = first_meta->second;
    if (meta->cluster_id != f.cluster_id || meta->node_id != f.node_id) {
      d.problems.push_back(
          {DamageKind::kDirConflict, meta_path, -1, std::nullopt,
           fmt::format("cluster.id / node.id differ from {}: the dirs belong to different "
                       "brokers, and Kafka and `daruma recover` refuse to start",
                       first_meta->first),
           "give each broker its own log dirs", true});
    }
  }
  for (const DirectoryIdProblem& p : FindDirectoryIdProblems(metas)) {
    dir_of_meta.at(p.path)->problems.push_back(
        {DamageKind::kDirConflict, p.path, -1, std::nullopt,
         p.what + " (Kafka, `daruma serve` and `daruma recover` refuse to start)",
         "delete that directory.id line (from the copy, for a shared id): Kafka writes a new "
         "one at its next start",
         true});
  }
}

std::string CheckProblem::ToString() const {
  std::string s = file;
  if (position >= 0) s += fmt::format(" at byte {}", position);
  if (offset) s += fmt::format(", offset {}", *offset);
  return s + ": " + DamageKindName(kind) + ": " + what + " -- " + action;
}

bool LogDirCheck::HasRepairableProblems() const {
  auto repairable = [](const CheckProblem& p) { return !p.operator_only; };
  if (std::any_of(problems.begin(), problems.end(), repairable)) return true;
  return std::any_of(partitions.begin(), partitions.end(), [&](const PartitionCheck& p) {
    return std::any_of(p.problems.begin(), p.problems.end(), repairable);
  });
}

bool LogDirCheck::HasProblems() const {
  if (!problems.empty()) return true;
  for (const PartitionCheck& p : partitions) {
    if (!p.problems.empty()) return true;
  }
  return false;
}

PartitionCheck CheckPartition(const CheckPartitionParams& p, const CheckOptions& options) {
  PartitionCheck out;
  PartitionChecker(p, options, &out).Run();
  if (Result<std::vector<DirEntry>> entries = options.fs->ListDir(p.partition_dir); entries.ok()) {
    for (const DirEntry& e : *entries) {
      if (e.is_regular && HasSuffix(e.name, kLogFileSuffix) && OffsetFromFileName(e.name).ok()) {
        ++out.segment_files;
      }
    }
  }
  return out;
}

Result<LogDirCheck> CheckLogDir(const std::string& log_dir, const CheckOptions& o) {
  LogDirCheck d;
  d.path = log_dir;
  DARUMA_ASSIGN_OR_RETURN(std::vector<DirEntry> entries, o.fs->ListDir(log_dir));
  std::sort(entries.begin(), entries.end(),
            [](const DirEntry& a, const DirEntry& b) { return a.name < b.name; });
  d.clean_shutdown = o.fs->Exists(JoinPath(log_dir, kCleanShutdownFileName));
  d.recovery_points = ReadCheckpoint(o, &d, kRecoveryPointCheckpointFile);
  d.log_start_offsets = ReadCheckpoint(o, &d, kLogStartOffsetCheckpointFile);
  d.high_watermarks = ReadCheckpoint(o, &d, kReplicationOffsetCheckpointFile);
  d.cleaner_offsets = ReadCheckpoint(o, &d, kCleanerOffsetCheckpointFileName);

  std::vector<CheckPartitionParams> todo;
  for (const DirEntry& e : entries) {
    const std::string path = JoinPath(log_dir, e.name);
    if (e.is_regular && HasSuffix(e.name, kTmpSuffix)) d.notes.push_back(TmpFileNote(path));
    if (e.is_directory && e.name == kMetadataLogDirName) {
      MetadataLogCheck meta = CheckMetadataLog(o.fs, path, o.config.index_interval_bytes);
      d.notes.push_back(fmt::format(
          "{}: KRaft's metadata log, not a partition Daruma loads; verified read-only: {} "
          "segment(s), {}, {}, {}",
          path, meta.segments, HumanBytes(meta.bytes),
          meta.snapshot.empty() ? std::string("no whole snapshot")
                                : "newest whole snapshot " + BaseName(meta.snapshot),
          meta.problems.empty() ? std::string("no damage")
                                : fmt::format("{} problem(s)", meta.problems.size())));
      for (CheckProblem& p : meta.problems) d.problems.push_back(std::move(p));
      continue;
    }
    if (!e.is_directory || IsIgnoredLogDirEntry(e.name)) continue;
    auto name = ParseTopicPartitionDirName(e.name);
    if (!name.ok()) {
      d.problems.push_back({DamageKind::kStrayDir, path, -1, std::nullopt,
                            name.status().message() + " (Kafka refuses to start with it)",
                            "move it out of the log dir"});
      continue;
    }
    if (name->kind == DirKind::kDelete) {
      // A deleted partition waits the broker's log.segment.delete.delay.ms
      // (60 s by default) before the broker removes it, in Daruma as in
      // Kafka (LogManager.deleteLogs takes the broker's value, never the
      // topic's file.delete.delay.ms), and one that a shutdown came before
      // goes after the next start: the normal state of a dir whose topic
      // was just deleted, not a problem to exit 1 for.
      d.notes.push_back(fmt::format(
          "{}: a deleted partition's directory, awaiting removal (the broker removes it "
          "log.segment.delete.delay.ms after it starts, 60 s by default; the broker-wide "
          "setting applies, not the topic's file.delete.delay.ms)",
          path));
      continue;
    }
    if (name->kind == DirKind::kStray) {
      d.problems.push_back({DamageKind::kStrayDir, path, -1, std::nullopt,
                            "stray partition directory (not assigned to this broker)",
                            "remove it once you know its data is not needed"});
      continue;
    }
    todo.push_back({log_dir, path, name->tp, Lookup(d.log_start_offsets, name->tp),
                    d.clean_shutdown, Lookup(d.recovery_points, name->tp)});
  }

  d.partitions.resize(todo.size());
  std::atomic<size_t> next{0};
  auto worker = [&]() {
    for (size_t i = next.fetch_add(1); i < todo.size(); i = next.fetch_add(1)) {
      d.partitions[i] = CheckPartition(todo[i], o);
      ReadPartitionMetadata(o, &d.partitions[i]);
      if (o.remaining_partitions != nullptr) o.remaining_partitions->fetch_sub(1);
    }
  };
  const int threads = std::max(1, std::min<int>(o.threads, int(todo.size())));
  std::vector<std::thread> pool;
  for (int t = 1; t < threads; ++t) pool.emplace_back(worker);
  worker();
  for (auto& t : pool) t.join();
  for (PartitionCheck& p : d.partitions) {
    for (std::string& note : p.notes) d.notes.push_back(std::move(note));
    p.notes.clear();
  }

  CheckCheckpoints(o, &d);
  CheckTopicIdsAgree(&d);
  CheckMetaPropertiesFile(o, &d);
  CheckTopicConfigsFile(o.fs, &d);
  CheckScrubFindings(o.fs, &d);
  return d;
}

CheckWork EstimateCheckWork(FileSystem* fs, const std::vector<std::string>& log_dirs) {
  CheckWork work;
  for (const std::string& dir : log_dirs) {
    auto entries = fs->ListDir(dir);
    if (!entries.ok()) continue;
    for (const DirEntry& e : *entries) {
      if (!e.is_directory) continue;
      const std::string part = JoinPath(dir, e.name);
      auto files = fs->ListDir(part);
      if (!files.ok()) continue;
      ++work.partitions;
      for (const DirEntry& f : *files) {
        if (!f.is_regular || !HasSuffix(f.name, kLogFileSuffix)) continue;
        auto size = fs->FileSize(JoinPath(part, f.name));
        if (size.ok()) work.bytes += int64_t(*size);
      }
    }
  }
  return work;
}

nlohmann::json ToJson(const CheckProblem& p) {
  nlohmann::json j = {{"kind", DamageKindName(p.kind)},
                      {"file", p.file},
                      {"position", p.position},
                      {"problem", p.what},
                      {"action", p.action}};
  if (p.offset) j["offset"] = *p.offset;
  if (p.operator_only) j["operatorOnly"] = true;
  return j;
}

nlohmann::json ToJson(const PartitionCheck& p) {
  nlohmann::json problems = nlohmann::json::array();
  for (const CheckProblem& q : p.problems) problems.push_back(ToJson(q));
  nlohmann::json j = ToJson(p.plan);
  j["topic"] = p.tp.topic;
  j["partition"] = p.tp.partition;
  j["dir"] = p.dir;
  j["problems"] = problems;
  j["dataBytesDropped"] = p.data_bytes_dropped;
  if (p.cut) {
    j["cut"] = {{"kind", DamageKindName(p.cut->kind)},
                {"file", p.cut->file},
                {"position", p.cut->position},
                {"offset", p.cut->offset},
                {"bytes", p.cut->bytes}};
  }
  return j;
}

nlohmann::json ToJson(const LogDirCheck& d) {
  nlohmann::json problems = nlohmann::json::array();
  for (const CheckProblem& q : d.problems) problems.push_back(ToJson(q));
  nlohmann::json partitions = nlohmann::json::array();
  for (const PartitionCheck& p : d.partitions) partitions.push_back(ToJson(p));
  return {{"path", d.path},
          {"cleanShutdown", d.clean_shutdown},
          {"notes", d.notes},
          {"problems", problems},
          {"partitions", partitions}};
}

}  // namespace daruma
