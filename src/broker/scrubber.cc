#include "broker/scrubber.h"

#include <fmt/format.h>

#include <algorithm>
#include <filesystem>
#include <nlohmann/json.hpp>

#include "log/log_file_names.h"
#include "record/log_entry.h"
#include "recovery/segment_scrubber.h"

namespace daruma::broker {

// One segment a pass will read, as listed (nothing here is dereferenced
// after a wait: `log` only identifies the Log it came from).
struct Scrubber::Candidate {
  std::string dir;            // the log dir
  std::string partition_dir;  // Log::dir()
  TopicPartition tp;
  const Log* log = nullptr;
  int64_t base = 0;
  int64_t next_base = 0;
  int64_t size = 0;
  std::string path;
};

namespace {

std::string NormalizeDir(std::string dir) {
  while (dir.size() > 1 && dir.back() == '/') dir.pop_back();
  return dir;
}

// The configured log dir that `dir` (a Log's parent dir) names, so that one
// dir's findings are kept, and written, under one key however it is spelled
// ("data" in log.dirs, "./data" or an absolute path in Log::dir()).
std::string DirKey(const std::vector<std::string>& configured, const std::string& dir) {
  const std::string normalized = NormalizeDir(dir);
  for (const std::string& c : configured) {
    if (c == normalized) return c;
  }
  std::error_code ec;
  const std::filesystem::path canonical = std::filesystem::weakly_canonical(normalized, ec);
  for (const std::string& c : configured) {
    std::error_code ec2;
    if (!ec && std::filesystem::weakly_canonical(c, ec2) == canonical && !ec2) return c;
  }
  return normalized;
}

bool HasSegment(const Log& log, int64_t base) {
  const std::vector<int64_t> bases = log.segment_base_offsets();
  return std::binary_search(bases.begin(), bases.end(), base);
}

std::string FindingKey(const std::string& dir, const ScrubFinding& f) {
  return fmt::format("{}/{}@{}", dir, f.file, f.damage.position);
}

}  // namespace

Scrubber::Scrubber(ScrubberOptions options) : options_(std::move(options)) {
  for (std::string& dir : options_.log_dirs) dir = NormalizeDir(dir);
  for (const std::string& dir : options_.log_dirs) dirs_[dir];
  if (!options_.settings.enable) state_ = "disabled";
}

Scrubber::~Scrubber() {
  Stop();
}

void Scrubber::Load() {
  std::lock_guard lock(mu_);
  for (const std::string& dir : options_.log_dirs) {
    Result<ScrubFindingsFile> file = ReadScrubFindings(options_.fs, dir);
    if (!file.ok()) {
      last_error_ = file.status().ToString();
      if (options_.log != nullptr) {
        options_.log->Write(LogLevel::kWarn, "scrub_findings_unreadable",
                            LogFields().Add("error", last_error_));
      }
      continue;
    }
    DirState& state = dirs_[dir];
    state.last_pass_completed_ms = file->last_pass_completed_ms;
    for (ScrubFinding& f : file->findings) {
      // Only findings of a segment the live log still has: the rest were
      // removed (retention, deletion) while the broker was down.
      const Log* log = options_.logs->GetLog(f.tp);
      if (log == nullptr || DirKey(options_.log_dirs, ParentDir(log->dir())) != dir ||
          !HasSegment(*log, f.segment_base)) {
        continue;
      }
      state.findings.push_back({std::move(f), log});
    }
  }
  RecountLocked();
}

void Scrubber::Start() {
  if (!options_.settings.enable || thread_.joinable()) return;
  std::optional<int64_t> last;
  {
    std::lock_guard lock(mu_);
    for (const auto& [dir, state] : dirs_) {
      if (state.last_pass_completed_ms) {
        last =
            std::min(last.value_or(*state.last_pass_completed_ms), *state.last_pass_completed_ms);
      }
    }
    const int64_t now = options_.clock->NowMs();
    next_pass_due_ms_ = last ? std::max(now, *last + options_.settings.interval_ms)
                             : now + options_.settings.initial_delay_ms;
  }
  thread_ = std::thread([this] { Loop(); });
}

void Scrubber::Stop() {
  stop_ = true;
  { std::lock_guard lock(wait_mu_); }
  wake_.notify_all();
  if (thread_.joinable()) thread_.join();
  std::lock_guard lock(mu_);
  if (options_.settings.enable) state_ = "stopped";
}

bool Scrubber::Wait(int64_t ms) {
  std::unique_lock lock(wait_mu_);
  wake_.wait_for(lock, std::chrono::milliseconds(ms), [this] { return stop_.load(); });
  return !stop_.load();
}

void Scrubber::Loop() {
  while (!stop_.load()) {
    int64_t due = 0;
    {
      std::lock_guard lock(mu_);
      due = next_pass_due_ms_;
    }
    const int64_t now = options_.clock->NowMs();
    if (now < due) {
      // Bounded waits: the clock is judged again after each.
      if (!Wait(std::min<int64_t>(due - now, 60000))) break;
      continue;
    }
    RunPass();
    std::lock_guard lock(mu_);
    next_pass_due_ms_ = options_.clock->NowMs() + options_.settings.interval_ms;
  }
}

std::vector<Scrubber::Candidate> Scrubber::ListCandidates() const {
  std::vector<Candidate> out;
  for (Log* log : options_.logs->AllLogs()) {
    const TopicPartition& tp = log->topic_partition();
    if (options_.logs->GetLog(tp) != log) continue;  // not live (pending deletion, future)
    const std::vector<int64_t> bases = log->segment_base_offsets();
    const int64_t recovery_point = log->recovery_point();
    for (size_t i = 0; i + 1 < bases.size(); ++i) {
      if (bases[i + 1] > recovery_point) break;
      Candidate c;
      c.partition_dir = log->dir();
      c.dir = DirKey(options_.log_dirs, ParentDir(c.partition_dir));
      c.tp = tp;
      c.log = log;
      c.base = bases[i];
      c.next_base = bases[i + 1];
      c.path = LogFileName(c.partition_dir, c.base);
      Result<uint64_t> size = options_.fs->FileSize(c.path);
      if (!size.ok()) continue;  // gone already (retention, the cleaner)
      c.size = int64_t(*size);
      out.push_back(std::move(c));
    }
  }
  std::sort(out.begin(), out.end(), [](const Candidate& a, const Candidate& b) {
    return std::tie(a.tp, a.base) < std::tie(b.tp, b.base);
  });
  return out;
}

bool Scrubber::StillCurrent(const Candidate& c) const {
  const Log* log = options_.logs->GetLog(c.tp);
  if (log == nullptr || log != c.log || log->dir() != c.partition_dir) return false;
  const std::vector<int64_t> bases = log->segment_base_offsets();
  auto it = std::lower_bound(bases.begin(), bases.end(), c.base);
  if (it == bases.end() || *it != c.base || it + 1 == bases.end()) return false;
  return *(it + 1) == c.next_base && c.next_base <= log->recovery_point();
}

bool Scrubber::RunPass() {
  std::lock_guard pass(pass_mu_);
  const int64_t started = options_.clock->NowMs();
  const std::vector<Candidate> candidates = ListCandidates();
  {
    std::lock_guard lock(mu_);
    state_ = "scrubbing";
    pass_started_ms_ = started;
    pass_bytes_total_ = 0;
    for (const Candidate& c : candidates) pass_bytes_total_ += c.size;
    pass_segments_total_ = int64_t(candidates.size());
    pass_segments_done_ = 0;
    pass_bytes_done_ = 0;
  }
  ScrubRateLimiter::Sleep sleep = options_.sleep;
  if (!sleep) sleep = [this](int64_t ms) { return Wait(ms); };
  ScrubRateLimiter limiter(options_.clock, options_.settings.bytes_per_second,
                           int64_t(options_.chunk_bytes), std::move(sleep));
  bool completed = true;
  for (const Candidate& c : candidates) {
    if (stop_.load() || !ScrubOne(c, limiter)) {
      completed = false;
      break;
    }
    std::lock_guard lock(mu_);
    ++pass_segments_done_;
  }
  if (completed) Prune();
  std::lock_guard lock(mu_);
  throttled_ms_total_ += limiter.throttled_ms();
  state_ = stop_.load() ? "stopped" : "waiting";
  if (!completed) return false;
  const int64_t now = options_.clock->NowMs();
  ++passes_completed_;
  last_pass_duration_ms_ = now - started;
  for (auto& [dir, state] : dirs_) {
    state.last_pass_completed_ms = now;
    PersistLocked(dir);
  }
  return true;
}

bool Scrubber::ScrubOne(const Candidate& c, ScrubRateLimiter& limiter) {
  SegmentScrubParams p;
  p.path = c.path;
  p.base_offset = c.base;
  p.next_base = c.next_base;
  p.size = c.size;
  p.chunk_bytes = options_.chunk_bytes;
  p.limiter = &limiter;
  p.stop = &stop_;
  p.drop_cache = options_.drop_cache;
  p.bytes_read = &pass_bytes_done_;
  Result<SegmentScrubResult> first = ScrubSegment(options_.fs, p);
  if (first.ok()) bytes_scrubbed_total_.fetch_add(first->bytes);
  if (!first.ok()) {
    if (!first.status().IsNotFound()) {
      std::lock_guard lock(mu_);
      last_error_ = first.status().ToString();
    }
    return true;  // gone, or not openable: not a finding, the next pass tries again
  }
  if (!first->completed) return false;
  {
    std::lock_guard lock(mu_);
    ++segments_scrubbed_total_;
  }
  if (!first->damage.empty()) {
    // Confirm against the log as it is now and a second read of the file:
    // the cleaner may have swapped the segment, retention removed it, a
    // truncation cut it, while it was read.
    if (!StillCurrent(c)) return true;
    p.bytes_read = nullptr;
    Result<SegmentScrubResult> again = ScrubSegment(options_.fs, p);
    if (!again.ok()) return true;
    if (!again->completed) return false;
    if (again->damage != first->damage || !StillCurrent(c)) return true;
  }
  Result<uint64_t> size = options_.fs->FileSize(c.path);
  Result<int64_t> modified = options_.fs->ModifiedTimeMs(c.path);
  if (!size.ok() || !modified.ok()) return true;  // gone since
  Record(c, std::move(first->damage), int64_t(*size), *modified);
  return true;
}

void Scrubber::Record(const Candidate& c, std::vector<ScrubDamage> damage, int64_t size,
                      int64_t modified_ms) {
  std::lock_guard lock(mu_);
  DirState& state = dirs_[c.dir];
  std::vector<Finding> kept, old;
  for (Finding& f : state.findings) {
    (f.f.tp == c.tp && f.f.segment_base == c.base ? old : kept).push_back(std::move(f));
  }
  const std::string file = BaseName(c.partition_dir) + "/" + BaseName(c.path);
  bool changed = old.size() != damage.size();
  const int64_t now = options_.clock->NowMs();
  for (ScrubDamage& d : damage) {
    ScrubFinding f{c.tp, c.base, file, std::move(d), now, size, modified_ms};
    auto same = std::find_if(old.begin(), old.end(),
                             [&](const Finding& o) { return o.f.damage == f.damage; });
    if (same != old.end()) {
      f.found_ms = same->f.found_ms;
      changed =
          changed || same->f.segment_size != size || same->f.segment_modified_ms != modified_ms;
    } else {
      changed = true;
      ++findings_recorded_total_;
      if (options_.log != nullptr) {
        options_.log->Write(LogLevel::kWarn, "scrub_found_damage",
                            LogFields()
                                .Add("topic", c.tp.topic)
                                .Add("partition", int64_t(c.tp.partition))
                                .Add("file", c.path)
                                .Add("position", f.damage.position)
                                .Add("end_position", f.damage.end_position)
                                .Add("first_offset", f.damage.first_offset)
                                .Add("end_offset", f.damage.end_offset)
                                .Add("kind", DamageKindName(f.damage.kind))
                                .Add("what", f.damage.what));
      }
    }
    kept.push_back({std::move(f), c.log});
  }
  state.findings = std::move(kept);
  RecountLocked();
  if (changed) PersistLocked(c.dir);
}

void Scrubber::Prune() {
  std::lock_guard lock(mu_);
  for (auto& [dir, state] : dirs_) {
    const size_t before = state.findings.size();
    std::erase_if(state.findings, [&](const Finding& f) {
      const Log* log = options_.logs->GetLog(f.f.tp);
      return log == nullptr || log != f.log || !HasSegment(*log, f.f.segment_base);
    });
    if (state.findings.size() != before) PersistLocked(dir);
  }
  RecountLocked();
}

void Scrubber::PersistLocked(const std::string& dir) {
  const DirState& state = dirs_[dir];
  ScrubFindingsFile file;
  file.last_pass_completed_ms = state.last_pass_completed_ms;
  for (const Finding& f : state.findings) file.findings.push_back(f.f);
  Status st = WriteScrubFindings(options_.fs, dir, file);
  if (st.ok()) return;
  // The findings stay in memory (and unserved); the next change retries.
  last_error_ = st.ToString();
  if (options_.log != nullptr) {
    options_.log->Write(LogLevel::kError, "scrub_findings_not_written",
                        LogFields().Add("error", last_error_));
  }
}

void Scrubber::RecountLocked() {
  int64_t n = 0;
  for (const auto& [dir, state] : dirs_) n += int64_t(state.findings.size());
  findings_count_ = n;
}

ScrubStatus Scrubber::Snapshot() const {
  std::lock_guard lock(mu_);
  ScrubStatus s;
  s.enabled = options_.settings.enable;
  s.state = state_;
  s.bytes_per_second = options_.settings.bytes_per_second;
  s.passes_completed = passes_completed_;
  s.segments_scrubbed_total = segments_scrubbed_total_;
  s.bytes_scrubbed_total = bytes_scrubbed_total_.load();
  s.findings_recorded_total = findings_recorded_total_;
  s.throttled_ms_total = throttled_ms_total_;
  s.pass_bytes_done = pass_bytes_done_.load();
  s.pass_bytes_total = pass_bytes_total_;
  s.pass_segments_done = pass_segments_done_;
  s.pass_segments_total = pass_segments_total_;
  s.pass_started_ms = pass_started_ms_;
  s.last_pass_duration_ms = last_pass_duration_ms_;
  s.next_pass_due_ms = next_pass_due_ms_;
  s.last_error = last_error_;
  for (const auto& [dir, state] : dirs_) {
    if (state.last_pass_completed_ms) {
      s.last_pass_completed_ms = std::max(s.last_pass_completed_ms, *state.last_pass_completed_ms);
    }
    for (const Finding& f : state.findings) {
      s.findings.push_back({dir, f.f});
      s.damaged_bytes += f.f.damage.end_position - f.f.damage.position;
    }
  }
  return s;
}

std::optional<ScrubFetchDamage> Scrubber::DamageFrom(const Log& log, int64_t fetch_offset) const {
  std::vector<ScrubFinding> matches;
  {
    std::lock_guard lock(mu_);
    for (const auto& [dir, state] : dirs_) {
      for (const Finding& f : state.findings) {
        if (f.log == &log && f.f.damage.end_offset > fetch_offset) matches.push_back(f.f);
      }
    }
  }
  std::sort(matches.begin(), matches.end(), [](const ScrubFinding& a, const ScrubFinding& b) {
    return a.damage.first_offset < b.damage.first_offset;
  });
  for (ScrubFinding& f : matches) {
    std::string path = LogFileName(log.dir(), f.segment_base);
    if (SameFile(path, f)) return ScrubFetchDamage{std::move(path), std::move(f)};
  }
  return std::nullopt;
}

bool Scrubber::SameFile(const std::string& path, const ScrubFinding& f) const {
  if (f.segment_size >= 0) {
    Result<uint64_t> size = options_.fs->FileSize(path);
    if (!size.ok() || int64_t(*size) != f.segment_size) return false;
  }
  if (f.segment_modified_ms >= 0) {
    Result<int64_t> modified = options_.fs->ModifiedTimeMs(path);
    if (!modified.ok() || *modified != f.segment_modified_ms) return false;
  }
  return true;
}

void Scrubber::NoteRefused(const ScrubFetchDamage& damage, int64_t fetch_offset) const {
  if (options_.log == nullptr) return;
  {
    std::lock_guard lock(mu_);
    if (!refused_logged_.insert(FindingKey(damage.segment_path, damage.finding)).second) return;
  }
  const ScrubDamage& d = damage.finding.damage;
  options_.log->Write(LogLevel::kWarn, "scrub_damage_not_served",
                      LogFields()
                          .Add("topic", damage.finding.tp.topic)
                          .Add("partition", int64_t(damage.finding.tp.partition))
                          .Add("file", damage.segment_path)
                          .Add("position", d.position)
                          .Add("end_position", d.end_position)
                          .Add("first_offset", d.first_offset)
                          .Add("end_offset", d.end_offset)
                          .Add("kind", DamageKindName(d.kind))
                          .Add("fetch_offset", fetch_offset));
}

ErrorCode ScrubErrorCode(const ScrubFinding& finding) {
  return finding.damage.kind == DamageKind::kIoError ? ErrorCode::kKafkaStorageError
                                                     : ErrorCode::kCorruptMessage;
}

int64_t CutSlicesAtDamage(const ScrubFetchDamage& damage, std::vector<FileSlice>* slices) {
  const uint64_t start = uint64_t(damage.finding.damage.position);
  int64_t total = 0;
  for (size_t i = 0; i < slices->size(); ++i) {
    FileSlice& s = (*slices)[i];
    if (s.file != nullptr && s.file->path() == damage.segment_path &&
        s.position + s.length > start) {
      const uint64_t keep = start > s.position ? start - s.position : 0;
      s.length = keep;
      slices->resize(keep > 0 ? i + 1 : i);
      return total + int64_t(keep);
    }
    total += int64_t(s.length);
  }
  return total;
}

int64_t CutRecordsAtDamage(const ScrubFetchDamage& damage, Bytes* records) {
  // The copy path has no file positions: keep the batches that are whole,
  // valid and wholly below the damage's trusted first offset.
  constexpr size_t kPrefix = 17;  // offset, size, the 4 bytes before magic, magic
  size_t pos = 0;
  while (pos + kPrefix <= records->size()) {
    const int32_t size = int32_t(LoadBe32(records->data() + pos + 8));
    if (size < 14 || uint64_t(size) + 12 > records->size() - pos) break;
    LogEntry e;
    e.position = int64_t(pos);
    e.bytes = ByteSpan(records->data() + pos, size_t(size) + 12);
    e.magic = int8_t(e.bytes[16]);
    if (e.magic > 2 || e.magic < 0 || !e.Validate().ok() ||
        e.last_offset() >= damage.finding.damage.first_offset) {
      break;
    }
    pos += e.size();
  }
  records->resize(pos);
  return int64_t(pos);
}

nlohmann::json ToJson(const ScrubStatus& s) {
  auto ms = [](int64_t v) { return v < 0 ? nlohmann::json() : nlohmann::json(v); };
  nlohmann::json findings = nlohmann::json::array();
  for (const ScrubStatus::DirFinding& df : s.findings) {
    nlohmann::json entry = ScrubFindingToJson(df.finding);
    entry["dir"] = df.dir;
    findings.push_back(std::move(entry));
  }
  return {{"enabled", s.enabled},
          {"state", s.state},
          {"bytesPerSecond", s.bytes_per_second},
          {"passesCompleted", s.passes_completed},
          {"segmentsScrubbed", s.segments_scrubbed_total},
          {"bytesScrubbed", s.bytes_scrubbed_total},
          {"findingsRecorded", s.findings_recorded_total},
          {"pass",
           {{"bytesDone", s.pass_bytes_done},
            {"bytesTotal", s.pass_bytes_total},
            {"segmentsDone", s.pass_segments_done},
            {"segmentsTotal", s.pass_segments_total},
            {"startedMs", ms(s.pass_started_ms)}}},
          {"lastPassCompletedMs", ms(s.last_pass_completed_ms)},
          {"lastPassDurationMs", ms(s.last_pass_duration_ms)},
          {"nextPassDueMs", ms(s.next_pass_due_ms)},
          {"lastError", s.last_error.empty() ? nlohmann::json() : nlohmann::json(s.last_error)},
          {"damagedBytes", s.damaged_bytes},
          {"findings", findings}};
}

}  // namespace daruma::broker
