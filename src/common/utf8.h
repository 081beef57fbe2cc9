// Bytes decoded as UTF-8 the way Java's `new String(bytes, UTF_8)` does,
// which is how Kafka's tools turn keys, values and header keys into text:
// each maximal ill-formed subsequence (Unicode's "best practice" for
// U+FFFD substitution, which the JDK's decoder follows) becomes one U+FFFD.
// Ill-formed: a byte that starts no sequence (0x80-0xC1, 0xF5-0xFF), an
// overlong form, a surrogate (U+D800-U+DFFF), a code point above U+10FFFF,
// or a sequence cut short by a byte that does not continue it or by the end.
#pragma once

#include <string>
#include <string_view>

namespace daruma {

// `bytes` unchanged when it is well-formed UTF-8.
std::string ReplaceInvalidUtf8(std::string_view bytes);

}  // namespace daruma
