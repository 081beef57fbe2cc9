// MD5 (RFC 1321): the 16-byte digest Kafka's log cleaner uses to key its
// offset map (spec §11.6). Not used for security; only the cleaner's key
// hashing, so equal keys map to equal digests exactly as in Kafka.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>

namespace daruma {

using Md5Digest = std::array<uint8_t, 16>;

// The MD5 digest of [data, data + n).
Md5Digest Md5(const void* data, size_t n);

}  // namespace daruma
