// PrintableText: what an error message may quote of a damaged file.
#include "common/printable_text.h"

#include <gtest/gtest.h>

#include <nlohmann/json.hpp>
#include <string>

namespace daruma {
namespace {

TEST(PrintableTextTest, KeepsPrintableAsciiAndEscapesEveryOtherByte) {
  EXPECT_EQ(PrintableText("0 12"), "0 12");
  EXPECT_EQ(PrintableText(std::string("a\0b\n\xff\\", 6)), "a\\x00b\\x0a\\xff\\\\");
  // Invalid UTF-8 in, valid JSON out.
  EXPECT_NO_THROW((void)nlohmann::json(PrintableText("\xc3\x28\x2e")).dump());
}

TEST(PrintableTextTest, CutsLongInputAndSaysSo) {
  const std::string long_line(200, 'x');
  EXPECT_EQ(PrintableText(long_line), std::string(80, 'x') + "...");
  EXPECT_EQ(PrintableText(long_line, 3), "xxx...");
  EXPECT_EQ(PrintableText("xxx", 3), "xxx");
}

}  // namespace
}  // namespace daruma
