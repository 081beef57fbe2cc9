#include "recovery/segment_scrubber.h"

#include <fmt/format.h>

#include <algorithm>
#include <limits>

#include "record/file_batch_reader.h"
#include "record/record_batch.h"

namespace daruma {
namespace {

// The segment's File with every read paced by the limiter and, with
// drop_cache, preceded by an eviction of the range from the page cache.
// Once the stop flag is set or the limiter says stop, reads fail and
// stopped() tells the caller it was not the disk.
class PacedFile final : public File {
 public:
  PacedFile(std::unique_ptr<File> inner, const SegmentScrubParams& p)
      : inner_(std::move(inner)), p_(p) {}

  Result<size_t> ReadAt(uint64_t pos, std::span<uint8_t> out) const override {
    auto stop_requested = [&] { return p_.stop != nullptr && p_.stop->load(); };
    // The limiter may wait; a stop requested meanwhile ends the read too.
    if (stopped_ || stop_requested() ||
        (p_.limiter != nullptr && (!p_.limiter->Admit(int64_t(out.size())) || stop_requested()))) {
      stopped_ = true;
      return Status::IoError(fmt::format("{}: scrub stopped at position {}", path(), pos));
    }
    if (p_.drop_cache) inner_->DropCache(pos, out.size());
    Result<size_t> n = inner_->ReadAt(pos, out);
    if (n.ok() && int64_t(pos + *n) > verified_end_) {
      // Progress counts each byte once: the reader reads an entry that
      // straddles two blocks again with the second (the limiter is charged
      // for both reads).
      const int64_t added = int64_t(pos + *n) - std::max(verified_end_, int64_t(pos));
      verified_end_ = int64_t(pos + *n);
      bytes_ += added;
      if (p_.bytes_read != nullptr) p_.bytes_read->fetch_add(added);
    }
    return n;
  }
  Status WriteAt(uint64_t, std::span<const uint8_t>) override {
    return Status::Unsupported(path() + ": read-only scrub handle");
  }
  Status Sync() override { return Status::Ok(); }
  Status Truncate(uint64_t) override {
    return Status::Unsupported(path() + ": read-only scrub handle");
  }
  Result<uint64_t> Size() const override { return inner_->Size(); }
  const std::string& path() const override { return inner_->path(); }

  bool stopped() const { return stopped_; }
  int64_t bytes() const { return bytes_; }

 private:
  std::unique_ptr<File> inner_;
  const SegmentScrubParams& p_;
  mutable bool stopped_ = false;
  mutable int64_t bytes_ = 0;
  mutable int64_t verified_end_ = 0;  // reads are forwards: [0, verified_end_) read
};

// The walk over one segment's entries: which are valid, where the damage is,
// and the trusted offsets around it (scrub_findings.h).
class DamageTracker {
 public:
  explicit DamageTracker(int64_t base)
      : next_offset_(base), holder_prev_next_(base), epoch_holder_prev_next_(base) {}

  int64_t next_offset() const { return next_offset_; }
  int64_t max_last() const { return max_last_; }
  int32_t max_epoch() const { return max_epoch_; }
  int64_t holder_position() const { return holder_position_; }
  int64_t holder_prev_next() const { return holder_prev_next_; }
  int64_t epoch_holder_position() const { return epoch_holder_position_; }
  int64_t epoch_holder_prev_next() const { return epoch_holder_prev_next_; }

  // A valid entry in order: it closes the open damage (its base offset is
  // the damage's trusted end) and becomes the holder of the maxima.
  void Accept(int64_t position, int64_t first, int64_t last, int32_t epoch) {
    if (open_) {
      open_->end_offset = std::max(first, open_->first_offset);
      done_.push_back(std::move(*open_));
      open_.reset();
    }
    holder_position_ = position;
    holder_prev_next_ = next_offset_;
    max_last_ = last;
    if (epoch >= 0 && epoch >= max_epoch_) {
      if (epoch > max_epoch_) {
        epoch_holder_position_ = position;
        epoch_holder_prev_next_ = next_offset_;
      }
      max_epoch_ = epoch;
    }
    next_offset_ = last + 1;
  }

  // After an order violation the maxima restart at the violating batch:
  // whichever of the two was damaged, later valid batches lie above it.
  void RestartOrderAt(int64_t position, int64_t last, std::optional<int32_t> epoch) {
    holder_position_ = position;
    max_last_ = last;
    if (epoch) {
      max_epoch_ = *epoch;
      epoch_holder_position_ = position;
    }
  }

  void Damage(int64_t position, int64_t end, int64_t first_offset, DamageKind kind,
              std::string what) {
    if (open_ && position <= open_->end_position) {
      open_->position = std::min(open_->position, position);
      open_->end_position = std::max(open_->end_position, end);
      open_->first_offset = std::min(open_->first_offset, first_offset);
      return;
    }
    if (open_) {
      // Not reached by a contiguous walk (damage is closed by the valid
      // entry after it), but never lose a range.
      open_->end_offset = std::max(first_offset, open_->first_offset);
      done_.push_back(std::move(*open_));
    }
    open_ = ScrubDamage{position, end, first_offset, first_offset, kind, std::move(what)};
  }

  // Closes the damage left open at the end of the segment (its trusted end
  // is the next segment's base) and merges ranges that touch.
  std::vector<ScrubDamage> Finish(std::optional<int64_t> next_base) {
    if (open_) {
      open_->end_offset =
          std::max(next_base.value_or(std::numeric_limits<int64_t>::max()), open_->first_offset);
      done_.push_back(std::move(*open_));
      open_.reset();
    }
    std::sort(done_.begin(), done_.end(),
              [](const ScrubDamage& a, const ScrubDamage& b) { return a.position < b.position; });
    std::vector<ScrubDamage> out;
    for (ScrubDamage& d : done_) {
      if (!out.empty() && d.position <= out.back().end_position) {
        ScrubDamage& prev = out.back();
        prev.end_position = std::max(prev.end_position, d.end_position);
        prev.first_offset = std::min(prev.first_offset, d.first_offset);
        prev.end_offset = std::max(prev.end_offset, d.end_offset);
        continue;
      }
      out.push_back(std::move(d));
    }
    return out;
  }

 private:
  int64_t next_offset_;  // one past the last valid batch
  int64_t max_last_ = std::numeric_limits<int64_t>::min();
  int64_t holder_position_ = 0;  // the batch holding max_last_
  int64_t holder_prev_next_;     // next_offset_ before it
  int32_t max_epoch_ = -1;
  int64_t epoch_holder_position_ = 0;
  int64_t epoch_holder_prev_next_;
  std::optional<ScrubDamage> open_;
  std::vector<ScrubDamage> done_;
};

void CheckEntry(const LogEntry& e, const SegmentScrubParams& p, const std::string& path,
                DamageTracker& t, int64_t* batches) {
  const int64_t pos = e.position;
  const int64_t end = pos + int64_t(e.size());
  if (e.magic > kMagicV2 || e.magic < 0) {
    t.Damage(pos, end, t.next_offset(), DamageKind::kBadMagic,
             fmt::format("{}: batch at position {}: field magic: expected 0, 1 or 2, found {}",
                         path, pos, int(e.magic)));
    return;
  }
  if (Status valid = e.Validate(); !valid.ok()) {
    t.Damage(pos, end, t.next_offset(),
             DamageKindOf(valid).value_or(e.has_batch_header() ? DamageKind::kBadCrc
                                                               : DamageKind::kBadSize),
             fmt::format("{}: {}", path, valid.message()));
    return;
  }
  const int64_t last = e.last_offset();
  const int64_t first = e.is_v2() ? e.batch().base_offset() : last;
  const int32_t epoch = e.partition_leader_epoch();
  if (first < p.base_offset || (p.next_base && last >= *p.next_base) ||
      last - p.base_offset > std::numeric_limits<int32_t>::max() || last < first) {
    t.Damage(
        pos, end, t.next_offset(), DamageKind::kOffsetOutsideSegment,
        fmt::format("{}: batch at position {}: expected offsets in [{}, {}), found {}..{} "
                    "(baseOffset is outside the batch CRC)",
                    path, pos, p.base_offset,
                    p.next_base ? std::to_string(*p.next_base) : std::string("end"), first, last));
    return;
  }
  if (first <= t.max_last()) {
    t.Damage(t.holder_position(), end, t.holder_prev_next(), DamageKind::kNonMonotonicOffset,
             fmt::format("{}: batch at position {}: expected a baseOffset above {}, found {}; it "
                         "or the batch at position {} has a damaged baseOffset, which the batch "
                         "CRC does not cover",
                         path, pos, t.max_last(), first, t.holder_position()));
    t.RestartOrderAt(pos, last, epoch >= 0 ? std::optional<int32_t>(epoch) : std::nullopt);
    return;
  }
  if (epoch < kNoPartitionLeaderEpoch) {
    t.Damage(pos, end, t.next_offset(), DamageKind::kBadHeader,
             fmt::format("{}: batch at position {}: field partitionLeaderEpoch: expected >= -1, "
                         "found {}",
                         path, pos, epoch));
    return;
  }
  if (epoch >= 0 && epoch < t.max_epoch()) {
    t.Damage(t.epoch_holder_position(), end, t.epoch_holder_prev_next(),
             DamageKind::kLeaderEpochOrder,
             fmt::format("{}: batch at position {}: expected a partitionLeaderEpoch >= {}, found "
                         "{}; it or the batch at position {} has a damaged partitionLeaderEpoch",
                         path, pos, t.max_epoch(), epoch, t.epoch_holder_position()));
    t.RestartOrderAt(pos, last, epoch);
    return;
  }
  ++*batches;
  t.Accept(pos, first, last, epoch);
}

}  // namespace

Result<SegmentScrubResult> ScrubSegment(FileSystem* fs, const SegmentScrubParams& p) {
  DARUMA_ASSIGN_OR_RETURN(std::unique_ptr<File> opened, fs->Open(p.path, OpenMode::kRead));
  PacedFile file(std::move(opened), p);
  DARUMA_ASSIGN_OR_RETURN(uint64_t file_size, file.Size());
  const int64_t scan_end = std::min<int64_t>(int64_t(file_size), p.size);

  SegmentScrubResult result;
  DamageTracker tracker(p.base_offset);
  FileBatchReaderOptions ro;
  ro.end_position = uint64_t(scan_end);
  ro.block_size = std::max<size_t>(p.chunk_bytes, 64);
  ro.map = false;
  FileBatchReader reader(&file, ro);
  while (auto e = reader.Next()) CheckEntry(*e, p, p.path, tracker, &result.batches);
  result.bytes = file.bytes();
  const int64_t stop_at = int64_t(reader.position());
  switch (reader.stop_reason()) {
    case StopReason::kEndOfFile:
    case StopReason::kNone:
      break;
    case StopReason::kTornTail:
    case StopReason::kCorruptSize:
      tracker.Damage(stop_at, scan_end, tracker.next_offset(),
                     reader.damage().value_or(DamageKind::kBadSize), reader.stop_message());
      break;
    case StopReason::kIoError:
      if (file.stopped()) return result;  // completed stays false
      tracker.Damage(stop_at, scan_end, tracker.next_offset(), DamageKind::kIoError,
                     reader.stop_message());
      break;
  }
  if (scan_end < p.size) {
    tracker.Damage(scan_end, p.size, tracker.next_offset(), DamageKind::kBadSize,
                   fmt::format("{}: field size: the file ends at position {}, the segment at {}",
                               p.path, scan_end, p.size));
  }
  result.damage = tracker.Finish(p.next_base);
  result.completed = true;
  return result;
}

}  // namespace daruma
