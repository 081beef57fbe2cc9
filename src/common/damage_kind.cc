#include "common/damage_kind.h"

#include <array>
#include <utility>

namespace daruma {
namespace {

// In Status::detail(): kDetailBase + kind, a range no other detail uses
// (file_system.h's 0x4d46, the small enums of the log layer).
constexpr int kDetailBase = 0x4400;
constexpr int kLastKind = int(DamageKind::kUnloadable);

constexpr std::array<std::pair<DamageKind, const char*>, kLastKind> kNames = {{
    {DamageKind::kTornTail, "torn_tail"},
    {DamageKind::kZeroTail, "zero_tail"},
    {DamageKind::kBadSize, "bad_size"},
    {DamageKind::kBadCrc, "bad_crc"},
    {DamageKind::kBadMagic, "bad_magic"},
    {DamageKind::kBadHeader, "bad_header"},
    {DamageKind::kNonMonotonicOffset, "non_monotonic_offset"},
    {DamageKind::kOffsetOutsideSegment, "offset_outside_segment"},
    {DamageKind::kOffsetOverflow, "offset_overflow"},
    {DamageKind::kLeaderEpochOrder, "leader_epoch_order"},
    {DamageKind::kInvalidRecord, "invalid_record"},
    {DamageKind::kZeroedRange, "zeroed_range"},
    {DamageKind::kAfterDamage, "after_damage"},
    {DamageKind::kOffsetGap, "offset_gap"},
    {DamageKind::kLostRecords, "lost_records"},
    {DamageKind::kMissingIndex, "missing_index"},
    {DamageKind::kOrphanIndex, "orphan_index"},
    {DamageKind::kCorruptIndex, "corrupt_index"},
    {DamageKind::kCorruptSnapshot, "corrupt_snapshot"},
    {DamageKind::kStraySnapshot, "stray_snapshot"},
    {DamageKind::kCorruptCheckpoint, "corrupt_checkpoint"},
    {DamageKind::kCorruptMetadata, "corrupt_metadata"},
    {DamageKind::kLeftoverTempFile, "leftover_temp_file"},
    {DamageKind::kInterruptedSwap, "interrupted_swap"},
    {DamageKind::kStrayFile, "stray_file"},
    {DamageKind::kStrayDir, "stray_dir"},
    {DamageKind::kDirConflict, "dir_conflict"},
    {DamageKind::kIoError, "io_error"},
    {DamageKind::kUnloadable, "unloadable"},
}};

// The table is in enum order, so a kind's name is one index away.
constexpr bool InEnumOrder() {
  for (size_t i = 0; i < kNames.size(); ++i) {
    if (int(kNames[i].first) != int(i) + 1) return false;
  }
  return true;
}
static_assert(InEnumOrder(), "kNames must list every DamageKind in enum order");

}  // namespace

const char* DamageKindName(DamageKind kind) {
  const int i = int(kind) - 1;
  return i >= 0 && i < kLastKind ? kNames[size_t(i)].second : "unknown";
}

std::optional<DamageKind> ParseDamageKind(std::string_view name) {
  for (const auto& [kind, n] : kNames) {
    if (name == n) return kind;
  }
  // Written by the scrubber before the taxonomy was one enum.
  if (name == "leader_epoch") return DamageKind::kLeaderEpochOrder;
  return std::nullopt;
}

Status WithDamageKind(const Status& status, DamageKind kind) {
  return status.WithDetail(kDetailBase + int(kind));
}

std::optional<DamageKind> DamageKindOf(const Status& status) {
  const int k = status.detail() - kDetailBase;
  if (status.ok() || k < 1 || k > kLastKind) return std::nullopt;
  return DamageKind(k);
}

DamageKind DamageKindOfFailure(const Status& status) {
  return DamageKindOf(status).value_or(status.IsIoError() ? DamageKind::kIoError
                                                          : DamageKind::kUnloadable);
}

}  // namespace daruma
