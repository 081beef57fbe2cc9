#include "common/damage_kind.h"

#include <gtest/gtest.h>

#include <set>
#include <string>

namespace daruma {
namespace {

TEST(DamageKindTest, EveryKindHasOneStableNameThatParsesBack) {
  std::set<std::string> names;
  for (int k = int(DamageKind::kTornTail); k <= int(DamageKind::kUnloadable); ++k) {
    const std::string name = DamageKindName(DamageKind(k));
    EXPECT_NE(name, "unknown") << k;
    EXPECT_TRUE(names.insert(name).second) << "duplicate name " << name;
    EXPECT_EQ(ParseDamageKind(name), DamageKind(k)) << name;
  }
  // Names are written to MANIFEST.jsonl and daruma-scrub-findings.json.
  EXPECT_STREQ(DamageKindName(DamageKind::kTornTail), "torn_tail");
  EXPECT_STREQ(DamageKindName(DamageKind::kBadCrc), "bad_crc");
  EXPECT_STREQ(DamageKindName(DamageKind::kLeaderEpochOrder), "leader_epoch_order");
}

TEST(DamageKindTest, ReadsTheScrubbersEarlierName) {
  EXPECT_EQ(ParseDamageKind("leader_epoch"), DamageKind::kLeaderEpochOrder);
  EXPECT_EQ(ParseDamageKind("crc-mismatch"), std::nullopt);
  EXPECT_EQ(ParseDamageKind(""), std::nullopt);
}

TEST(DamageKindTest, TravelsInAStatusWithoutItsMessage) {
  const Status st = WithDamageKind(Status::Corruption("f: at byte 3: bad"), DamageKind::kBadMagic);
  EXPECT_EQ(DamageKindOf(st), DamageKind::kBadMagic);
  EXPECT_EQ(DamageKindOf(st.WithContext("more")), DamageKind::kBadMagic);
  EXPECT_EQ(DamageKindOf(Status::Corruption("none")), std::nullopt);
  EXPECT_EQ(DamageKindOf(Status::Ok()), std::nullopt);
  // Other layers' details are not mistaken for a kind.
  EXPECT_EQ(DamageKindOf(Status::IoError("x").WithDetail(1)), std::nullopt);
}

TEST(DamageKindTest, AFailureWithoutAKindIsAnIoErrorOrUnloadable) {
  EXPECT_EQ(DamageKindOfFailure(WithDamageKind(Status::IoError("eio"), DamageKind::kCorruptIndex)),
            DamageKind::kCorruptIndex);
  EXPECT_EQ(DamageKindOfFailure(Status::IoError("eio")), DamageKind::kIoError);
  EXPECT_EQ(DamageKindOfFailure(Status::Corruption("no kind")), DamageKind::kUnloadable);
}

}  // namespace
}  // namespace daruma
