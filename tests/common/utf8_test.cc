#include "common/utf8.h"

#include <gtest/gtest.h>

namespace daruma {
namespace {

const std::string kR = "\xEF\xBF\xBD";  // U+FFFD

TEST(Utf8Test, WellFormedTextIsUnchanged) {
  for (std::string s : {std::string(""), std::string("plain ascii"), std::string("\0x", 2),
                        std::string("caf\xC3\xA9"), std::string("\xE2\x82\xAC 10"),
                        std::string("\xF0\x9F\x98\x80"), std::string("\xF4\x8F\xBF\xBF")}) {
    EXPECT_EQ(ReplaceInvalidUtf8(s), s);
  }
}

// The cases of Unicode's "U+FFFD substitution of maximal subparts" table,
// which Java's UTF-8 decoder (and so kafka-dump-log) follows.
TEST(Utf8Test, EachMaximalIllFormedSubsequenceIsOneReplacement) {
  EXPECT_EQ(ReplaceInvalidUtf8("a\x80z"), "a" + kR + "z");               // lone continuation
  EXPECT_EQ(ReplaceInvalidUtf8("\xC0\xAF"), kR + kR);                    // overlong lead
  EXPECT_EQ(ReplaceInvalidUtf8("\xE0\x80\x80"), kR + kR + kR);           // overlong 3-byte
  EXPECT_EQ(ReplaceInvalidUtf8("\xED\xA0\x80"), kR + kR + kR);           // surrogate
  EXPECT_EQ(ReplaceInvalidUtf8("\xF4\x90\x80\x80"), kR + kR + kR + kR);  // above U+10FFFF
  EXPECT_EQ(ReplaceInvalidUtf8("\xF5\xFF"), kR + kR);                    // never a lead
  EXPECT_EQ(ReplaceInvalidUtf8("\xE2\x82z"), kR + "z");                  // cut by a byte
  EXPECT_EQ(ReplaceInvalidUtf8("\xF0\x9F\x98"), kR);                     // cut by the end
  EXPECT_EQ(ReplaceInvalidUtf8("\xE1\x80\xE2\xF0\x91\x92\xF1\xBF\x41"),
            kR + kR + kR + kR + "A");  // Unicode's own example
}

}  // namespace
}  // namespace daruma
