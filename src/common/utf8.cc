#include "common/utf8.h"

#include <cstdint>

namespace daruma {
namespace {

constexpr std::string_view kReplacement = "\xEF\xBF\xBD";  // U+FFFD

// The length of the sequence `lead` starts and the range its second byte
// must fall in (Unicode Table 3-7); 0 when `lead` starts none.
struct Lead {
  int length;
  uint8_t low, high;
};

Lead LeadOf(uint8_t lead) {
  if (lead >= 0xC2 && lead <= 0xDF) return {2, 0x80, 0xBF};
  if (lead == 0xE0) return {3, 0xA0, 0xBF};  // no overlong form
  if (lead == 0xED) return {3, 0x80, 0x9F};  // no surrogate
  if (lead >= 0xE1 && lead <= 0xEF) return {3, 0x80, 0xBF};
  if (lead == 0xF0) return {4, 0x90, 0xBF};  // no overlong form
  if (lead == 0xF4) return {4, 0x80, 0x8F};  // nothing above U+10FFFF
  if (lead >= 0xF1 && lead <= 0xF3) return {4, 0x80, 0xBF};
  return {0, 0, 0};
}

}  // namespace

std::string ReplaceInvalidUtf8(std::string_view bytes) {
  std::string out;
  out.reserve(bytes.size());
  size_t i = 0;
  while (i < bytes.size()) {
    const uint8_t b = uint8_t(bytes[i]);
    if (b < 0x80) {
      out.push_back(char(b));
      ++i;
      continue;
    }
    const Lead lead = LeadOf(b);
    // How many bytes from i form a valid prefix of a sequence.
    size_t valid = lead.length == 0 ? 0 : 1;
    if (valid == 1 && i + 1 < bytes.size()) {
      const uint8_t second = uint8_t(bytes[i + 1]);
      if (second >= lead.low && second <= lead.high) {
        valid = 2;
        while (valid < size_t(lead.length) && i + valid < bytes.size() &&
               (uint8_t(bytes[i + valid]) & 0xC0) == 0x80) {
          ++valid;
        }
      }
    }
    if (lead.length != 0 && valid == size_t(lead.length)) {
      out.append(bytes.substr(i, valid));
      i += valid;
    } else {
      // The maximal ill-formed subsequence: the valid prefix, or the one byte.
      out.append(kReplacement);
      i += valid == 0 ? 1 : valid;
    }
  }
  return out;
}

}  // namespace daruma
