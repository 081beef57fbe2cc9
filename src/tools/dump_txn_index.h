// `daruma dump` of a transaction index `<base>.txnindex` (spec §7.4, §12.2):
// one "version: V producerId: P firstOffset: F lastOffset: L
// lastStableOffset: S" line per whole 34-byte entry (a trailing partial entry
// is ignored, as Kafka's reader does). An entry with a version > 0 is
// corruption: printed on stderr, exit 1 (Kafka's tool dies with the
// exception). Only version 0 exists, so V is always 0.
#pragma once

#include <string>

#include "tools/dump_context.h"

namespace daruma::tools {

int DumpTxnIndexFile(const std::string& path, DumpContext& ctx);

}  // namespace daruma::tools
