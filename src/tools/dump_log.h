// `daruma dump` of a `.log` file (and of a KRaft `.checkpoint` snapshot, which
// holds record batches too): kafka-dump-log's dumpLog (spec §12.2).
//
// Prints "Log starting offset: <base>" (or the snapshot header), one line per
// batch/legacy entry and, with deep iteration, one line per record; keys and
// payloads go through `decoder`. Reads at most options.max_bytes bytes.
// Trailing bytes that do not form an entry are reported ("Found <n> invalid
// bytes at the end of <name>", exit 1) only when --max-bytes is left at its
// default, as Kafka does. Non-consecutive record offsets go to the summary.
#pragma once

#include <string>

#include "tools/dump_context.h"
#include "tools/dump_record_decoder.h"

namespace daruma::tools {

// Returns a DumpExitCode. The caller printed "Dumping <path>" already
// (unless JSON) and checked that the file exists.
int DumpLogFile(const std::string& path, RecordDecoder decoder, DumpContext& ctx);

}  // namespace daruma::tools
