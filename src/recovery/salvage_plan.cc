#include "recovery/salvage_plan.h"

#include <fmt/format.h>

#include <algorithm>
#include <limits>
#include <nlohmann/json.hpp>

#include "common/bytes.h"
#include "log/log_file_names.h"
#include "record/log_entry.h"
#include "record/record_batch.h"

namespace daruma {

namespace {

constexpr int64_t kEntryPrefix = 17;  // baseOffset, length, epoch, magic: enough to frame
constexpr int32_t kMinLength = 14;    // Kafka's minimum size field (legacy v0 message)
constexpr int32_t kMinV2Length = kRecordBatchOverhead - kLogOverhead;
constexpr int64_t kWindow = int64_t(1) << 20;
constexpr int64_t kMaxRelative = std::numeric_limits<int32_t>::max();

// Reads a segment through a window of kWindow bytes (or one entry, when
// larger), so the walk and the byte-by-byte search cost no system call per
// position. A returned span is valid until the next Get.
class WindowReader {
 public:
  WindowReader(const File* file, std::string path, int64_t size)
      : file_(file), path_(std::move(path)), size_(size) {}

  // Precondition: 0 <= pos and pos + len <= size.
  Result<ByteSpan> Get(int64_t pos, int64_t len) {
    if (pos < start_ || pos + len > start_ + int64_t(buffer_.size())) {
      const int64_t want = std::min(std::max(len, kWindow), size_ - pos);
      buffer_.resize(size_t(want));
      int64_t done = 0;
      while (done < want) {
        DARUMA_ASSIGN_OR_RETURN(
            size_t n, file_->ReadAt(uint64_t(pos + done), std::span<uint8_t>(buffer_.data() + done,
                                                                             size_t(want - done))));
        if (n == 0) {
          return Status::IoError(fmt::format("{}: file ended at byte {} while reading [{}, {})",
                                             path_, pos + done, pos, pos + want));
        }
        done += int64_t(n);
      }
      start_ = pos;
    }
    return ByteSpan(buffer_.data() + (pos - start_), size_t(len));
  }

 private:
  const File* file_;
  std::string path_;
  int64_t size_;
  int64_t start_ = 0;
  std::vector<uint8_t> buffer_;
};

// One entry as step 1 judges it.
struct Entry {
  bool trusted = false;
  DamageKind kind = DamageKind::kBadCrc;
  std::string what;
  int64_t size = 0;  // 12 + length when that lies within the file, else 0
  int64_t base = 0;
  int64_t last = 0;
  int32_t epoch = kNoPartitionLeaderEpoch;
};

struct Chain {
  std::optional<int64_t> last;  // last kept offset
  int32_t max_epoch = -1;       // highest kept leader epoch

  bool ContinuedBy(const Entry& e) const {
    return (!last || e.base > *last) && (e.epoch < 0 || e.epoch >= max_epoch);
  }
  Chain After(const Entry& e) const {
    Chain c = *this;
    c.last = e.last;
    if (e.epoch >= 0) c.max_epoch = std::max(c.max_epoch, e.epoch);
    return c;
  }
};

struct LastKept {
  SegmentSalvage* seg = nullptr;  // may be an earlier segment than the current one
  int64_t position = 0;
  Entry entry;
};

class Planner {
 public:
  explicit Planner(FileSystem* fs) : fs_(fs) {}

  Status PlanSegment(SegmentSalvage* seg, std::optional<int64_t> next_base) {
    seg_ = seg;
    next_base_ = next_base;
    if (seg->size == 0) return Status::Ok();
    DARUMA_ASSIGN_OR_RETURN(auto file, fs_->Open(seg->path, OpenMode::kRead));
    WindowReader reader(file.get(), seg->path, seg->size);
    reader_ = &reader;
    int64_t pos = 0;
    while (pos < seg->size) {
      DARUMA_ASSIGN_OR_RETURN(Entry e, Read(pos));
      if (e.trusted) {
        Order(pos, e);
        pos += e.size;
        continue;
      }
      DARUMA_ASSIGN_OR_RETURN(int64_t next, Resync(pos, e));
      if (e.kind == DamageKind::kTornTail && next < seg->size) e.kind = DamageKind::kBadSize;
      DARUMA_ASSIGN_OR_RETURN(bool zeros, AllZeros(pos, next));
      if (zeros) e.kind = next < seg->size ? DamageKind::kZeroedRange : DamageKind::kZeroTail;
      Drop(seg_, {pos, next, e.kind, e.what, 0, std::nullopt});
      pos = next;
    }
    reader_ = nullptr;
    return Status::Ok();
  }

 private:
  std::string At(int64_t pos) const { return fmt::format("{}: at byte {}", seg_->path, pos); }

  // Step 1 for the entry at `pos`.
  Result<Entry> Read(int64_t pos) {
    Entry e;
    const int64_t remaining = seg_->size - pos;
    if (remaining < kEntryPrefix) {
      e.kind = DamageKind::kTornTail;
      e.what = fmt::format("{}: only {} bytes left, fewer than an entry header's {}", At(pos),
                           remaining, kEntryPrefix);
      return e;
    }
    DARUMA_ASSIGN_OR_RETURN(ByteSpan h, reader_->Get(pos, kEntryPrefix));
    const int32_t length = int32_t(LoadBe32(h.data() + batch_layout::kLength));
    const int8_t magic = int8_t(h[batch_layout::kMagic]);
    if (magic < 0 || magic > kMagicV2) {
      e.kind = DamageKind::kBadMagic;
      e.what = fmt::format("{}: field magic: expected 0, 1 or 2, found {}", At(pos), int(magic));
      return e;
    }
    const int32_t min_length = magic == kMagicV2 ? kMinV2Length : kMinLength;
    if (length < min_length) {
      e.kind = DamageKind::kBadSize;
      e.what = fmt::format("{}: field batchLength: expected at least {}, found {}", At(pos),
                           min_length, length);
      return e;
    }
    if (kLogOverhead + int64_t(length) > remaining) {
      e.kind = DamageKind::kTornTail;
      e.what =
          fmt::format("{}: field batchLength: {} runs past the end of the file ({} bytes left)",
                      At(pos), length, remaining - kLogOverhead);
      return e;
    }
    e.size = kLogOverhead + int64_t(length);
    DARUMA_ASSIGN_OR_RETURN(ByteSpan bytes, reader_->Get(pos, e.size));
    const LogEntry entry{pos, bytes, magic};
    if (Status valid = entry.Validate(); !valid.ok()) {
      e.kind = DamageKind::kBadCrc;
      e.what = fmt::format("{}: {}", seg_->path, valid.message());
      return e;
    }
    e.epoch = entry.partition_leader_epoch();
    if (e.epoch < kNoPartitionLeaderEpoch) {
      e.kind = DamageKind::kBadHeader;
      e.what =
          fmt::format("{}: field partitionLeaderEpoch: expected >= -1, found {}", At(pos), e.epoch);
      return e;
    }
    int64_t delta = 0;
    if (entry.is_v2()) {
      const RecordBatchView batch = entry.batch();
      delta = batch.last_offset_delta();
      if (delta < 0 || batch.records_count() < 0 || batch.records_count() > delta + 1) {
        e.kind = DamageKind::kBadHeader;
        e.what = fmt::format("{}: fields lastOffsetDelta {} and recordsCount {} disagree", At(pos),
                             delta, batch.records_count());
        return e;
      }
      e.base = batch.base_offset();
    } else {
      e.base = entry.prefix_offset();
    }
    if (e.base < seg_->base_offset || e.base - seg_->base_offset > kMaxRelative - delta ||
        (next_base_ && e.base + delta >= *next_base_)) {
      e.kind = DamageKind::kOffsetOutsideSegment;
      e.what = fmt::format(
          "{}: field baseOffset: expected offsets in [{}, {}], found {} (lastOffsetDelta {})",
          At(pos), seg_->base_offset,
          next_base_ ? std::min(*next_base_ - 1, seg_->base_offset + kMaxRelative)
                     : seg_->base_offset + kMaxRelative,
          e.base, delta);
      return e;
    }
    e.last = e.base + delta;
    e.trusted = true;
    return e;
  }

  // Step 3: the next position after the untrusted entry `e` at `pos` where a
  // trusted v2 batch begins, or the segment's size.
  Result<int64_t> Resync(int64_t pos, const Entry& e) {
    if (e.size > 0 && pos + e.size < seg_->size) {
      DARUMA_ASSIGN_OR_RETURN(Entry next, Read(pos + e.size));
      if (next.trusted) return pos + e.size;
    }
    for (int64_t q = pos + 1; q + kRecordBatchOverhead <= seg_->size; ++q) {
      DARUMA_ASSIGN_OR_RETURN(ByteSpan h, reader_->Get(q, kRecordBatchOverhead));
      if (h[batch_layout::kMagic] != kMagicV2) continue;
      const int32_t length = int32_t(LoadBe32(h.data() + batch_layout::kLength));
      if (length < kMinV2Length || kLogOverhead + int64_t(length) > seg_->size - q) continue;
      const int64_t base = int64_t(LoadBe64(h.data() + batch_layout::kBaseOffset));
      const int32_t delta = int32_t(LoadBe32(h.data() + batch_layout::kLastOffsetDelta));
      if (base < seg_->base_offset || delta < 0 || base - seg_->base_offset > kMaxRelative - delta)
        continue;
      if (next_base_ && base + delta >= *next_base_) continue;
      if (int32_t(LoadBe32(h.data() + batch_layout::kPartitionLeaderEpoch)) <
          kNoPartitionLeaderEpoch)
        continue;
      DARUMA_ASSIGN_OR_RETURN(Entry candidate, Read(q));
      if (candidate.trusted) return q;
    }
    return seg_->size;
  }

  Result<bool> AllZeros(int64_t from, int64_t to) {
    for (int64_t pos = from; pos < to;) {
      const int64_t n = std::min(kWindow, to - pos);
      DARUMA_ASSIGN_OR_RETURN(ByteSpan bytes, reader_->Get(pos, n));
      if (std::any_of(bytes.begin(), bytes.end(), [](uint8_t b) { return b != 0; })) return false;
      pos += n;
    }
    return true;
  }

  // Step 2 for the trusted entry `e` at `pos`.
  void Order(int64_t pos, const Entry& e) {
    if (chain_.ContinuedBy(e)) return Keep(pos, e);
    const bool offset_conflict = chain_.last && e.base <= *chain_.last;
    if (last_kept_ && before_last_.ContinuedBy(e)) {
      const Entry b = last_kept_->entry;
      SegmentSalvage* b_seg = last_kept_->seg;
      const int64_t anchor = before_last_.last ? *before_last_.last + 1 : b_seg->base_offset;
      if (!offset_conflict || b.base != anchor || e.base == anchor) {
        const int64_t b_pos = last_kept_->position;
        Unkeep();
        Drop(b_seg,
             {b_pos, b_pos + b.size,
              offset_conflict ? DamageKind::kNonMonotonicOffset : DamageKind::kLeaderEpochOrder,
              offset_conflict
                  ? fmt::format("{}: at byte {}: field baseOffset {} (outside the batch CRC) is "
                                "out of order: the batch at byte {} of {} starts at offset {}, "
                                "which continues the batches before this one",
                                b_seg->path, b_pos, b.base, pos, seg_->path, e.base)
                  : fmt::format("{}: at byte {}: field partitionLeaderEpoch {} (outside the "
                                "batch CRC) is above the batch at byte {} of {} (epoch {}), "
                                "which continues the batches before this one",
                                b_seg->path, b_pos, b.epoch, pos, seg_->path, e.epoch),
              0, std::nullopt});
        return Keep(pos, e);
      }
    }
    Drop(seg_,
         {pos, pos + e.size,
          offset_conflict ? DamageKind::kNonMonotonicOffset : DamageKind::kLeaderEpochOrder,
          offset_conflict
              ? fmt::format("{}: field baseOffset: expected above {} (the batches kept before "
                            "it), found {} (baseOffset is outside the batch CRC)",
                            At(pos), *chain_.last, e.base)
              : fmt::format("{}: field partitionLeaderEpoch: expected >= {} (leader epochs never "
                            "decrease), found {} (it is outside the batch CRC)",
                            At(pos), chain_.max_epoch, e.epoch),
          0, std::nullopt});
  }

  void Keep(int64_t pos, const Entry& e) {
    std::vector<KeptRun>& kept = seg_->kept;
    if (!kept.empty() && kept.back().to == pos) {
      kept.back().to += e.size;
      kept.back().last_offset = e.last;
      kept.back().batches++;
    } else {
      kept.push_back({pos, pos + e.size, e.base, e.last, 1});
    }
    before_last_ = chain_;
    chain_ = chain_.After(e);
    last_kept_ = LastKept{seg_, pos, e};
  }

  // Takes back the last Keep (only one: the state before the batch before
  // it is not kept).
  void Unkeep() {
    SegmentSalvage* seg = last_kept_->seg;
    KeptRun& run = seg->kept.back();
    run.to -= last_kept_->entry.size;
    if (--run.batches == 0) {
      seg->kept.pop_back();
    } else {
      run.last_offset = *before_last_.last;
    }
    chain_ = before_last_;
    last_kept_.reset();
  }

  void Drop(SegmentSalvage* seg, DroppedRange range) {
    std::vector<DroppedRange>& dropped = seg->dropped;
    auto at = std::lower_bound(dropped.begin(), dropped.end(), range.from,
                               [](const DroppedRange& r, int64_t from) { return r.from < from; });
    if (at != dropped.begin()) {
      // Consecutive entries dropped for the same reason are one range (and
      // one quarantine copy): memory stays bounded by the damaged regions,
      // not by the batches in them. Its `what` is the first entry's.
      DroppedRange& prev = *(at - 1);
      if (prev.to == range.from && prev.kind == range.kind) {
        prev.to = range.to;
        return;
      }
    }
    dropped.insert(at, std::move(range));
  }

  FileSystem* fs_;
  SegmentSalvage* seg_ = nullptr;
  std::optional<int64_t> next_base_;
  WindowReader* reader_ = nullptr;
  Chain chain_;
  Chain before_last_;
  std::optional<LastKept> last_kept_;
};

// Step 4 and the totals: gaps, what is kept after the damage, the LEO.
void Summarise(PartitionSalvage* s) {
  std::optional<int64_t> prev_last;
  std::vector<DroppedRange*> pending;
  bool damaged = false;
  const int64_t floor = s->segments.empty() ? 0 : s->segments.front().base_offset;
  for (size_t i = 0; i < s->segments.size(); ++i) {
    SegmentSalvage& seg = s->segments[i];
    seg.drop_whole = i > 0 && seg.kept.empty() && seg.size > 0;
    size_t k = 0, d = 0;
    while (k < seg.kept.size() || d < seg.dropped.size()) {
      if (d < seg.dropped.size() &&
          (k == seg.kept.size() || seg.dropped[d].from < seg.kept[k].from)) {
        DroppedRange& r = seg.dropped[d++];
        r.gap_first = prev_last ? *prev_last + 1 : floor;
        s->dropped_bytes += r.bytes();
        pending.push_back(&r);
        damaged = true;
        continue;
      }
      const KeptRun& run = seg.kept[k++];
      if (!pending.empty()) {
        for (DroppedRange* r : pending) r->gap_last = run.first_offset - 1;
        if (run.first_offset > pending.front()->gap_first) {
          s->gaps.push_back({pending.front()->gap_first, run.first_offset - 1});
        }
        pending.clear();
      }
      if (damaged) {
        s->kept_bytes_after_damage += run.to - run.from;
        s->kept_batches_after_damage += run.batches;
      }
      prev_last = run.last_offset;
    }
    if (!seg.drop_whole) {
      s->log_end_offset = seg.kept.empty() ? seg.base_offset : seg.kept.back().last_offset + 1;
    }
  }
}

std::string GapText(const DroppedRange& r) {
  if (!r.gap_last) return fmt::format("the log ends at offset {} (as truncation)", r.gap_first);
  if (*r.gap_last < r.gap_first) return "no offset is lost";
  return fmt::format("offsets {}..{} become a gap", r.gap_first, *r.gap_last);
}

}  // namespace

Result<PartitionSalvage> PlanSalvage(FileSystem* fs, const std::string& partition_dir) {
  PartitionSalvage s;
  s.dir = partition_dir;
  DARUMA_ASSIGN_OR_RETURN(std::vector<DirEntry> entries, fs->ListDir(partition_dir));
  for (const DirEntry& e : entries) {
    if (!e.is_regular || !HasSuffix(e.name, kLogFileSuffix)) continue;
    auto base = OffsetFromFileName(e.name);
    if (!base.ok()) continue;
    SegmentSalvage seg;
    seg.path = JoinPath(partition_dir, e.name);
    seg.base_offset = *base;
    DARUMA_ASSIGN_OR_RETURN(uint64_t size, fs->FileSize(seg.path));
    seg.size = int64_t(size);
    s.segments.push_back(std::move(seg));
  }
  std::sort(s.segments.begin(), s.segments.end(),
            [](const SegmentSalvage& a, const SegmentSalvage& b) {
              return a.base_offset < b.base_offset;
            });
  Planner planner(fs);
  for (size_t i = 0; i < s.segments.size(); ++i) {
    std::optional<int64_t> next;
    if (i + 1 < s.segments.size()) next = s.segments[i + 1].base_offset;
    DARUMA_RETURN_IF_ERROR(planner.PlanSegment(&s.segments[i], next));
  }
  Summarise(&s);
  return s;
}

nlohmann::json ToJson(const PartitionSalvage& s) {
  nlohmann::json ranges = nlohmann::json::array();
  nlohmann::json segments = nlohmann::json::array();
  for (const SegmentSalvage& seg : s.segments) {
    if (!seg.changed()) continue;
    for (const DroppedRange& r : seg.dropped) {
      ranges.push_back({{"file", seg.path},
                        {"fromPosition", r.from},
                        {"toPosition", r.to},
                        {"bytes", r.bytes()},
                        {"kind", DamageKindName(r.kind)},
                        {"what", r.what},
                        {"gapFirstOffset", r.gap_first},
                        {"gapLastOffset", r.gap_last ? nlohmann::json(*r.gap_last) : nullptr}});
    }
    nlohmann::json kept = nlohmann::json::array();
    for (const KeptRun& k : seg.kept) {
      kept.push_back({{"fromPosition", k.from},
                      {"toPosition", k.to},
                      {"firstOffset", k.first_offset},
                      {"lastOffset", k.last_offset},
                      {"batches", k.batches}});
    }
    segments.push_back({{"file", seg.path},
                        {"baseOffset", seg.base_offset},
                        {"sizeBytes", seg.size},
                        {"droppedWhole", seg.drop_whole},
                        {"kept", kept}});
  }
  nlohmann::json gaps = nlohmann::json::array();
  for (const OffsetGap& g : s.gaps) gaps.push_back({g.first, g.last});
  return {{"dir", s.dir},
          {"droppedBytes", s.dropped_bytes},
          {"keptBytesAfterDamage", s.kept_bytes_after_damage},
          {"keptBatchesAfterDamage", s.kept_batches_after_damage},
          {"logEndOffset", s.log_end_offset},
          {"ranges", ranges},
          {"segments", segments},
          {"offsetGaps", gaps},
          {"warnings", s.warnings}};
}

std::string DescribeSalvage(const PartitionSalvage& s, const std::string& indent) {
  int64_t ranges = 0;
  for (const SegmentSalvage& seg : s.segments) ranges += int64_t(seg.dropped.size());
  std::string out = fmt::format(
      "{}salvage: drops {} bytes in {} ranges, keeps {} batches ({} bytes) after the damage, LEO "
      "{}\n",
      indent, s.dropped_bytes, ranges, s.kept_batches_after_damage, s.kept_bytes_after_damage,
      s.log_end_offset);
  for (const SegmentSalvage& seg : s.segments) {
    for (const DroppedRange& r : seg.dropped) {
      out += fmt::format("{}  bytes [{}, {}) ({} bytes), {}: {}; {}\n", indent, r.from, r.to,
                         r.bytes(), DamageKindName(r.kind), r.what, GapText(r));
    }
    if (seg.drop_whole) {
      out +=
          fmt::format("{}  {}: no batch is kept; the file is set aside whole\n", indent, seg.path);
    }
  }
  if (!s.gaps.empty()) {
    out += indent + "  offset gaps:";
    for (const OffsetGap& g : s.gaps) out += fmt::format(" [{}, {}]", g.first, g.last);
    out += "\n";
  }
  return out;
}

}  // namespace daruma
