// gzip codec (spec §4.1): RFC 1952 members, as the JDK's GZIPOutputStream
// writes them and GZIPInputStream reads them.
//
// Writer: a 10-byte header with no optional fields
//   1f 8b | 08 (deflate) | 00 (FLG) | 00 00 00 00 (MTIME) | 00 (XFL) | ff (OS, JDK >= 16)
// then raw deflate data, then CRC-32 and ISIZE, both little-endian.
//
// Reader: any valid gzip stream, including several concatenated members. Like
// the JDK reader, bytes after a complete member that do not start another gzip
// header end the stream and are ignored.
//
// Contract: GzipDecompress never returns or buffers more than max_output bytes
// of output (plus one chunk of scratch); exceeding it yields kTooLarge.
#pragma once

#include <cstddef>

#include "common/bytes.h"
#include "common/status.h"

namespace daruma {

inline constexpr int kGzipDefaultLevel = 6;

Result<Bytes> GzipDecompress(ByteSpan input, size_t max_output);

// level in 1..9 (0 stores); level < 0 selects kGzipDefaultLevel.
Result<Bytes> GzipCompress(ByteSpan input, int level);

}  // namespace daruma
