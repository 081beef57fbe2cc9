// `daruma dump` of an offset index `<base>.index` (spec §7.2, §12.2):
// kafka-dump-log's dumpIndex.
//
//  * No entries (file length < 8): "<path> is empty.".
//  * --index-sanity-check: only the §7.5 checks, then
//    "<path> passed sanity check." (a failure is printed on stderr, exit 1).
//  * Otherwise one "offset: O position: P" line per entry (none with
//    --verify-index-only), stopping at the first entry after slot 0 whose
//    offset equals the base offset (a zeroed preallocated slot). Each entry is
//    compared with the last offset of the first batch at its position in the
//    `.log` beside it (read window: --max-message-size); a difference is a
//    mismatch for the "Mismatches in :<path>" summary, and with no batch there
//    the log offset is -1 (Kafka's tool dies with an exception instead).
//  * Deviation: a missing `.log` is reported on stderr and the entries are
//    printed unverified (Kafka's tool dies).
//  * Deviation: bytes that cannot be an offset index (a size that is not a
//    multiple of 8, an offset below the base or not above the previous one,
//    a negative or non-increasing position) stop the dump with an error
//    naming the file and the byte position (exit 1), where Kafka prints
//    whatever the bytes decode to. A file shorter than one entry is such an
//    error too, not "is empty.".
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>

#include "tools/dump_context.h"

namespace daruma::tools {

// Returns a DumpExitCode; mismatches make it kDumpCorrupt.
int DumpOffsetIndexFile(const std::string& path, DumpContext& ctx);

// "at byte P: the size, N bytes, is not a multiple of the E-byte entry", or
// "" when `length` is a whole number of entries.
std::string IndexSizeProblem(uint64_t length, size_t entry_size);
// "daruma dump: <path> <problem>; not a valid <kind>, stopped here" on stderr.
void ReportInvalidIndex(const std::string& path, const std::string& problem, const char* kind,
                        DumpContext& ctx);

// The `.log` file of the segment an index/txnindex file belongs to: same
// directory, the name's part before its first '.' + ".log" (as Kafka).
std::string SegmentLogPathFor(const std::string& index_path);

}  // namespace daruma::tools
