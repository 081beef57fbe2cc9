#include "common/printable_text.h"

#include <fmt/format.h>

namespace daruma {

std::string PrintableText(std::string_view bytes, size_t max_bytes) {
  std::string out;
  const size_t n = bytes.size() < max_bytes ? bytes.size() : max_bytes;
  out.reserve(n);
  for (size_t i = 0; i < n; ++i) {
    const auto c = static_cast<unsigned char>(bytes[i]);
    if (c == '\\') {
      out += "\\\\";
    } else if (c >= 0x20 && c < 0x7f) {
      out.push_back(char(c));
    } else {
      out += fmt::format("\\x{:02x}", c);
    }
  }
  if (n < bytes.size()) out += "...";
  return out;
}

}  // namespace daruma
