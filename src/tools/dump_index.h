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
#pragma once

#include <string>

#include "tools/dump_context.h"

namespace daruma::tools {

// Returns a DumpExitCode; mismatches make it kDumpCorrupt.
int DumpOffsetIndexFile(const std::string& path, DumpContext& ctx);

// The `.log` file of the segment an index/txnindex file belongs to: same
// directory, the name's part before its first '.' + ".log" (as Kafka).
std::string SegmentLogPathFor(const std::string& index_path);

}  // namespace daruma::tools
