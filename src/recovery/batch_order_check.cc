#include "recovery/batch_order_check.h"

#include <fmt/format.h>

#include <algorithm>
#include <limits>

namespace daruma {
namespace {

struct Flat {
  size_t segment;
  size_t batch;
  int64_t segment_base;
  const CheckedBatch* b;
};

std::string Where(const std::vector<CheckedSegment>& segments, const Flat& f) {
  return fmt::format("the batch at offset {} (position {} of segment {})", f.b->base_offset,
                     f.b->position, segments[f.segment].base_offset);
}

// The first index i < k with prefix[i] > bound (prefix is non-decreasing).
size_t FirstAbove(const std::vector<int64_t>& prefix, size_t k, int64_t bound) {
  return size_t(std::upper_bound(prefix.begin(), prefix.begin() + int64_t(k), bound) -
                prefix.begin());
}

}  // namespace

std::optional<BatchOrderCut> FindBatchOrderCut(const std::vector<CheckedSegment>& segments) {
  std::vector<Flat> all;
  for (size_t s = 0; s < segments.size(); ++s) {
    for (size_t i = 0; i < segments[s].batches.size(); ++i) {
      all.push_back({s, i, segments[s].base_offset, &segments[s].batches[i]});
    }
  }
  // Running maxima up to and including each batch.
  std::vector<int64_t> max_last(all.size()), max_epoch(all.size());
  int64_t last = std::numeric_limits<int64_t>::min(), epoch = -1;
  for (size_t k = 0; k < all.size(); ++k) {
    last = std::max(last, all[k].b->last_offset);
    if (all[k].b->leader_epoch >= 0) epoch = std::max<int64_t>(epoch, all[k].b->leader_epoch);
    max_last[k] = last;
    max_epoch[k] = epoch;
  }
  std::optional<size_t> cut;
  std::string what;
  DamageKind kind = DamageKind::kNonMonotonicOffset;
  auto suspect = [&](size_t i, DamageKind k, std::string why) {
    if (cut && *cut <= i) return;
    cut = i;
    kind = k;
    what = std::move(why);
  };
  for (size_t k = 0; k < all.size(); ++k) {
    const CheckedBatch& b = *all[k].b;
    if (b.base_offset < all[k].segment_base) {
      suspect(k, DamageKind::kOffsetOutsideSegment,
              fmt::format("{}: expected a baseOffset >= the segment's base offset {}, found "
                          "{} (baseOffset is outside the batch CRC)",
                          Where(segments, all[k]), all[k].segment_base, b.base_offset));
    }
    if (k == 0) continue;
    if (b.base_offset <= max_last[k - 1]) {
      const size_t i = FirstAbove(max_last, k, b.base_offset - 1);
      suspect(i, DamageKind::kNonMonotonicOffset,
              fmt::format("{}: expected a baseOffset above {} (offsets of earlier batches), "
                          "found {}; either it or {} has a damaged baseOffset, which the batch "
                          "CRC does not cover",
                          Where(segments, all[k]), max_last[k - 1], b.base_offset,
                          Where(segments, all[i])));
    }
    if (b.leader_epoch >= 0 && b.leader_epoch < max_epoch[k - 1]) {
      const size_t i = FirstAbove(max_epoch, k, b.leader_epoch);
      suspect(i, DamageKind::kLeaderEpochOrder,
              fmt::format("{}: expected a partitionLeaderEpoch >= {} (leader epochs never "
                          "decrease), found {}; either it or {} (epoch {}) has a damaged "
                          "partitionLeaderEpoch, which the batch CRC does not cover",
                          Where(segments, all[k]), max_epoch[k - 1], b.leader_epoch,
                          Where(segments, all[i]), all[i].b->leader_epoch));
    }
  }
  if (!cut) return std::nullopt;
  return BatchOrderCut{all[*cut].segment, all[*cut].batch, kind, std::move(what)};
}

}  // namespace daruma
