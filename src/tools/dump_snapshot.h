// `daruma dump` of a producer-state snapshot `<offset>.snapshot` (spec §9.7,
// §10.6, §12.2): kafka-dump-log's dumpProducerIdSnapshot. One line per
// producer, in file order:
//
//   producerId: P producerEpoch: E coordinatorEpoch: C currentTxnFirstOffset:
//   OptionalLong[F]|OptionalLong.empty lastTimestamp: T <space>
//
// followed, when the entry caches a batch (lastOffset >= 0), by
// "firstSequence: F lastSequence: L lastOffset: O offsetDelta: D timestamp: T"
// (firstSequence = lastSequence - offsetDelta with wrap-around). Without a
// batch the line keeps Kafka's trailing space. A corrupt snapshot (bad
// version, CRC, size) is printed on stderr, exit 1.
#pragma once

#include <string>

#include "tools/dump_context.h"

namespace daruma::tools {

int DumpProducerSnapshotFile(const std::string& path, DumpContext& ctx);

}  // namespace daruma::tools
