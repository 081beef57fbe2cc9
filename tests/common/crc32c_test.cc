#include "common/crc32c.h"

#include <gtest/gtest.h>

#include <random>
#include <string>
#include <vector>

#include "common/crc32.h"

namespace daruma {
namespace {

using crc32c_internal::ExtendHardwareClmul;
using crc32c_internal::ExtendHardwareInterleaved;
using crc32c_internal::ExtendHardwareSingleStream;
using crc32c_internal::ExtendPortable;

TEST(Crc32cTest, CheckValueOf123456789) {
  EXPECT_EQ(Crc32c("123456789", 9), 0xE3069283u);
}

// RFC 3720 (iSCSI) appendix B.4 test vectors.
TEST(Crc32cTest, Rfc3720Vectors) {
  std::vector<uint8_t> buf(32, 0);
  EXPECT_EQ(Crc32c(buf.data(), buf.size()), 0x8A9136AAu);
  std::fill(buf.begin(), buf.end(), 0xff);
  EXPECT_EQ(Crc32c(buf.data(), buf.size()), 0x62A8AB43u);
  for (int i = 0; i < 32; ++i) buf[i] = uint8_t(i);
  EXPECT_EQ(Crc32c(buf.data(), buf.size()), 0x46DD794Eu);
  for (int i = 0; i < 32; ++i) buf[i] = uint8_t(31 - i);
  EXPECT_EQ(Crc32c(buf.data(), buf.size()), 0x113FDB5Cu);
}

TEST(Crc32cTest, EmptyInputIsZero) {
  EXPECT_EQ(Crc32c("", 0), 0u);
}

TEST(Crc32cTest, AllImplementationsAgreeOnEveryLengthAndAlignment) {
  std::mt19937 rng(42);
  std::vector<uint8_t> data(3 * 4096 * 2 + 777);
  for (auto& b : data) b = uint8_t(rng());
  std::vector<size_t> lengths;
  for (size_t n = 0; n < 1100; ++n) lengths.push_back(n);
  for (size_t n : std::initializer_list<size_t>{3 * 256 - 1, 3 * 256, 3 * 256 + 1, 3 * 4096 - 1,
                                                3 * 4096, 3 * 4096 + 9, data.size() - 8})
    lengths.push_back(n);
  for (size_t offset : std::initializer_list<size_t>{0, 1, 3, 7}) {
    for (size_t n : lengths) {
      const uint8_t* p = data.data() + offset;
      uint32_t expected = ExtendPortable(0, p, n);
      ASSERT_EQ(ExtendHardwareSingleStream(0, p, n), expected) << "n=" << n;
      ASSERT_EQ(ExtendHardwareInterleaved(0, p, n), expected) << "n=" << n;
      if (crc32c_internal::ClmulAvailable()) {
        ASSERT_EQ(ExtendHardwareClmul(0, p, n), expected) << "n=" << n;
      }
      ASSERT_EQ(Crc32c(p, n), expected) << "n=" << n;
    }
  }
}

// Every length up to past two long blocks (each split into three streams of
// its own length, merged with its own shift constants), from a random
// register, against the bitwise-table reference.
TEST(Crc32cTest, ClmulMergeAgreesFromAnyRegisterOnEveryLength) {
  if (!crc32c_internal::ClmulAvailable()) GTEST_SKIP() << "no PCLMULQDQ on this CPU";
  std::mt19937 rng(7);
  std::vector<uint8_t> data(3 * 4096 * 2 + 64);
  for (auto& b : data) b = uint8_t(rng());
  for (size_t n = 0; n <= data.size() - 5; ++n) {
    const uint32_t crc = uint32_t(rng());
    const size_t offset = n % 5;
    ASSERT_EQ(ExtendHardwareClmul(crc, data.data() + offset, n),
              ExtendPortable(crc, data.data() + offset, n))
        << "n=" << n << " crc=" << crc;
  }
}

TEST(Crc32cTest, ExtendEqualsCrcOfConcatenation) {
  std::string a = "hello, ", b = "daruma";
  EXPECT_EQ(Crc32cExtend(Crc32c(a.data(), a.size()), b.data(), b.size()),
            Crc32c((a + b).data(), a.size() + b.size()));
}

TEST(Crc32Test, IeeeCheckValue) {
  EXPECT_EQ(Crc32("123456789", 9), 0xCBF43926u);
}

}  // namespace
}  // namespace daruma
