#include "tools/dump_txn_index.h"

#include <fmt/format.h>

#include <nlohmann/json.hpp>
#include <ostream>

#include "log/log_file_names.h"
#include "log/transaction_index.h"

namespace daruma::tools {

int DumpTxnIndexFile(const std::string& path, DumpContext& ctx) {
  auto base = OffsetFromFileName(FileNameOf(path));
  if (!base.ok()) {
    ctx.err << "daruma dump: " << base.status().ToString() << "\n";
    return kDumpUsageOrIo;
  }
  TransactionIndex index(path, *base, FileSystem::Default(), /*writable=*/false);
  auto txns = index.AllAbortedTxns();
  if (!txns.ok()) {
    ctx.err << txns.status().message() << "\n";
    return txns.status().code() == StatusCode::kIoError ? kDumpUsageOrIo : kDumpCorrupt;
  }
  for (const AbortedTxn& t : *txns) {
    if (ctx.options.json) {
      ctx.out << nlohmann::ordered_json{{"type", "abortedTxn"},
                                        {"file", path},
                                        {"version", 0},
                                        {"producerId", t.producer_id},
                                        {"firstOffset", t.first_offset},
                                        {"lastOffset", t.last_offset},
                                        {"lastStableOffset", t.last_stable_offset}}
                     .dump()
              << "\n";
    } else {
      ctx.out << fmt::format(
          "version: 0 producerId: {} firstOffset: {} lastOffset: {} lastStableOffset: {}\n",
          t.producer_id, t.first_offset, t.last_offset, t.last_stable_offset);
    }
  }
  return kDumpClean;
}

}  // namespace daruma::tools
