// Bytes read from a file or the wire, made fit for an error message: a
// message is printed, logged and put into JSON reports (the quarantine
// manifest, `daruma recover --report`), and raw bytes there can break all
// three (control characters, invalid UTF-8, which JSON refuses).
#pragma once

#include <cstddef>
#include <string>
#include <string_view>

namespace daruma {

// `bytes` with printable ASCII kept, a backslash doubled, and every other
// byte written as \xNN; at most `max_bytes` of it, then "..." if cut.
std::string PrintableText(std::string_view bytes, size_t max_bytes = 80);

}  // namespace daruma
