// Segment file names (spec §6.2, §6.3, §15.14).
#include "log/log_file_names.h"

#include <gtest/gtest.h>

namespace daruma {
namespace {

TEST(LogFileNamesTest, TwentyDigitZeroPaddedNames) {
  EXPECT_EQ(FilenamePrefixFromOffset(368769), "00000000000000368769");
  EXPECT_EQ(FilenamePrefixFromOffset(0), "00000000000000000000");
  EXPECT_EQ(FilenamePrefixFromOffset(INT64_MAX), "09223372036854775807");
  EXPECT_EQ(FilenamePrefixFromOffset(-1), "-00000000000000000001");
  EXPECT_EQ(LogFileName("/d", 368769), "/d/00000000000000368769.log");
  EXPECT_EQ(OffsetIndexFileName("/d", 5), "/d/00000000000000000005.index");
  EXPECT_EQ(TimeIndexFileName("/d/", 5), "/d/00000000000000000005.timeindex");
  EXPECT_EQ(TxnIndexFileName("/d", 5, kCleanedFileSuffix),
            "/d/00000000000000000005.txnindex.cleaned");
  EXPECT_EQ(ProducerSnapshotFileName("/d", 1800, kDeletedFileSuffix),
            "/d/00000000000000001800.snapshot.deleted");
  EXPECT_EQ(LogFileName("/d", 7, kSwapFileSuffix), "/d/00000000000000000007.log.swap");
}

TEST(LogFileNamesTest, OffsetParsedUpToFirstDot) {
  EXPECT_EQ(*OffsetFromFileName("00000000000000368769.log"), 368769);
  EXPECT_EQ(*OffsetFromFileName("/a.b/00000000000000000010.log.deleted"), 10);
  EXPECT_EQ(*OffsetFromFileName("42.index"), 42);
  EXPECT_EQ(*OffsetFromFileName("-5.log"), -5);
  EXPECT_EQ(*OffsetFromFileName("+5.log"), 5);  // Java's Long.parseLong accepts a '+'
  for (const char* bad :
       {"abc.log", ".log", "12a.log", "nodot", "+-5.log", "99999999999999999999.log"}) {
    auto r = OffsetFromFileName(bad);
    ASSERT_FALSE(r.ok()) << bad;
    EXPECT_NE(r.status().message().find(bad), std::string::npos) << r.status().message();
  }
}

TEST(LogFileNamesTest, HasSuffix) {
  EXPECT_TRUE(HasSuffix("x.log.deleted", kDeletedFileSuffix));
  EXPECT_FALSE(HasSuffix("x.log", kIndexFileSuffix));
  EXPECT_FALSE(HasSuffix("g", kSwapFileSuffix));
}

}  // namespace
}  // namespace daruma
