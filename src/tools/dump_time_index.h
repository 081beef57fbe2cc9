// `daruma dump` of a time index `<base>.timeindex` (spec §7.3, §12.2):
// kafka-dump-log's dumpTimeIndex.
//
//  * --index-sanity-check: only the §7.5 checks, then
//    "<path> passed sanity check." (a failure is printed on stderr, exit 1).
//  * Otherwise one "timestamp: T offset: O" line per entry (none with
//    --verify-index-only), stopping at the first entry after slot 0 whose
//    offset equals the base offset. Unlike the offset index there is no
//    "is empty." line. Each entry is checked against the `.log`: the scan
//    starts at the `.index` lookup of its offset (position 0 without an
//    `.index`) and takes the first batch whose last offset >= the entry's:
//      - none, or a batch ending at another offset -> "The following indexed
//        offsets are not found in the log." (found log offset, -1 if none);
//      - otherwise the batch's largest record timestamp must equal the
//        entry's ("Found timestamp mismatch in :<path>"), and the entry's
//        timestamp must exceed the previous entry's ("Found out of order
//        timestamp in :<path>").
//  * Deviation: a missing `.log` is reported on stderr and entries are printed
//    unverified (Kafka's tool dies); a missing `.index` is not created.
#pragma once

#include <string>

#include "tools/dump_context.h"

namespace daruma::tools {

// Returns a DumpExitCode; any reported problem makes it kDumpCorrupt.
int DumpTimeIndexFile(const std::string& path, DumpContext& ctx);

}  // namespace daruma::tools
