// `daruma repair`: fixes what `daruma check` finds, within limits (issue 5).
//
// 1. Plan: LogChecker on every partition (the start-up loader on a
//    copy-on-write overlay, as after an unclean shutdown from offset 0, plus
//    the extra checks). Printed per partition: what would change and the
//    segment-data bytes dropped.
// 2. Refuse, changing nothing (exit 1), when any partition would drop more
//    than --max-corrupt-bytes of segment data: default 0 refuses whenever any
//    data would be dropped and names the flag; -1 means no limit. Also refuse
//    when a partition cannot be loaded at all.
// 3. --dry-run stops here (exit 0 nothing to do, 1 repairs needed).
// 4. Apply (recovery/log_repairer.h), per log dir: take the dir lock (refuse if a broker holds it);
//    remove `.kafka_cleanshutdown` (a crash during repair must count as
//    unclean); run LoadLog for real with recovery point 0 and quarantine on,
//    so every segment is re-scanned and its indexes, .txnindex and producer
//    state rebuilt, and every dropped byte is kept in quarantine; fsync and
//    close each log (indexes trimmed, producer snapshot at the LEO); rewrite
//    the three checkpoints (recovery point = LEO, log start and high
//    watermark clamped to [log start, LEO]) atomically; write the marker
//    again, with its old contents, only if the dir had one.
// A second run finds nothing to do. `-delete`/`-stray` directories and
// unparsable names are reported and left alone (Kafka deals with the former;
// the others need an operator's decision).
// Configuration: --config/--set/--log-dirs as in tools/tool_config.h; the
// rebuilt indexes use the broker's index.interval.bytes and friends.
// --report FILE gets a JSON report: the plan (checker JSON) and, when
// applied, the recovery report of the real load (recovery report names).
// Problems only an operator can fix (CheckProblem::operator_only: unknown
// keys, bad values or stale topics in daruma-topic-configs.json, which repair
// never rewrites) are printed marked "[left for an operator]" and left alone;
// an unparsable daruma-topic-configs.json is renamed to
// daruma-topic-configs.json.corrupt only within --max-corrupt-bytes.
// --salvage (issue 22, rule 6): instead of truncating a partition at its
// first damaged batch, drop only the damaged byte ranges and keep every valid
// batch after them (recovery/salvage_plan.h): offsets are not renumbered, so
// the log has a gap there, as after compaction. The plan, the text output
// and the report (JSON "salvage") list each dropped range with its kind, the
// bytes and batches kept after the damage and the offset gaps; the
// --max-corrupt-bytes limit counts the bytes salvage drops. Without it,
// repair truncates, as Kafka's recovery does.
// Exit codes (the rule of every subcommand, tools/cli.h): 0 repaired or
// nothing to do, 1 refused / repairs needed in a dry run / a failure while
// applying / problems left for an operator, 2 usage, configuration or I/O
// error that kept the plan from being made (a missing log dir, an unknown
// --set key: nothing was changed) or the report not written.
#pragma once

#include <cstdint>
#include <iosfwd>
#include <string>
#include <vector>

#include "recovery/progress_reporter.h"

namespace daruma::tools {

struct RepairCommandOptions {
  std::vector<std::string> log_dirs;   // --log-dirs (over log.dirs)
  std::string config_file;             // --config: a server.properties (tools/tool_config.h)
  std::vector<std::string> overrides;  // --set key=value, in order
  int64_t max_corrupt_bytes = 0;       // --max-corrupt-bytes; -1 = no limit
  bool dry_run = false;                // --dry-run
  bool salvage = false;                // --salvage
  std::string report_file;             // --report FILE
  int threads = 1;                     // --threads
  // --quiet: no progress, no plan and no summary when all went well; on a
  // refusal, a failure or problems left for an operator, the plan goes to
  // stderr with the reason.
  bool quiet = false;
  ProgressMode progress = ProgressMode::kPlain;
};

int RunRepair(const RepairCommandOptions& options, std::ostream& out, std::ostream& err);

}  // namespace daruma::tools
