// Whether this build runs under AddressSanitizer, for the few places whose
// behaviour must differ there: ASan's allocator is not glibc's (no mallopt
// tuning, no heap to reserve huge pages in), its leak check must see every
// block freed, and it handles fatal signals itself. g++ defines
// __SANITIZE_ADDRESS__; clang before 22 answers only to
// __has_feature(address_sanitizer). One test, so that the code and its tests
// agree on it.
#pragma once

#if defined(__SANITIZE_ADDRESS__)
#define DARUMA_ADDRESS_SANITIZER 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define DARUMA_ADDRESS_SANITIZER 1
#endif
#endif

namespace daruma {

#if defined(DARUMA_ADDRESS_SANITIZER)
inline constexpr bool kAddressSanitizer = true;
#else
inline constexpr bool kAddressSanitizer = false;
#endif

}  // namespace daruma
