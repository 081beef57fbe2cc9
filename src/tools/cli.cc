#include "tools/cli.h"

#include <unistd.h>

#include <CLI/CLI.hpp>
#include <iostream>

#include "tools/check_command.h"
#include "tools/dump_command.h"
#include "tools/recover_command.h"
#include "tools/repair_command.h"

namespace daruma::tools {
namespace {

void AddDump(CLI::App& app, DumpOptions& o, int& rc) {
  CLI::App* dump = app.add_subcommand(
      "dump",
      "Print Kafka log-dir files: .log, .index, .timeindex, .txnindex, .snapshot, checkpoints, "
      "partition.metadata (kafka-dump-log compatible; exit 0 clean, 1 problems, 2 usage/I/O)");
  dump->add_option("--files", o.files, "Comma-separated files to dump")->required()->delimiter(',');
  dump->add_flag("--deep-iteration", o.deep_iteration, "Print every record, not just batches");
  dump->add_flag("--print-data-log", o.print_data_log,
                 "Print keys and values (implies --deep-iteration)");
  dump->add_flag("--skip-record-metadata", o.skip_record_metadata,
                 "Print only keys and values of records");
  dump->add_flag("--verify-index-only", o.verify_index_only,
                 "Index files: check entries against the .log, print only mismatches");
  dump->add_flag("--index-sanity-check", o.index_sanity_check,
                 "Index files: run only the start-up sanity checks");
  dump->add_flag("--offsets-decoder", o.offsets_decoder,
                 "Decode __consumer_offsets records (implies --print-data-log)");
  dump->add_flag("--transaction-log-decoder", o.transaction_log_decoder,
                 "Decode __transaction_state records (implies --print-data-log)");
  dump->add_flag("--json", o.json, "One JSON object per line for every item printed");
  dump->add_option("--max-bytes", o.max_bytes, "Read at most this many bytes of each .log file");
  dump->add_option("--max-message-size", o.max_message_size,
                   "Read window when verifying .index entries (default 5242880)");
  dump->callback([&]() { rc = RunDump(o, std::cout, std::cerr); });
}

void AddRecover(CLI::App& app, RecoverOptions& o, int& rc) {
  CLI::App* recover = app.add_subcommand(
      "recover",
      "Run a broker's start-up recovery on log dirs, then shut down cleanly (exit 0 recovered, "
      "1 a dir offline or a partition not loaded, 2 usage/config)");
  recover->add_option("--log-dirs", o.log_dirs, "Comma-separated log dirs (overrides log.dirs)")
      ->delimiter(',');
  recover->add_option("--config", o.config_file, "A Kafka server.properties file")
      ->check(CLI::ExistingFile);
  recover->add_option("--set", o.overrides, "Override one property, key=value (repeatable)");
  recover
      ->add_option("--threads", o.threads,
                   "Recovery threads per log dir (num.recovery.threads.per.data.dir)")
      ->check(CLI::PositiveNumber);
  recover->add_option("--report", o.report_file, "Write the JSON recovery report to this file");
  recover->add_flag("--no-quarantine", o.no_quarantine,
                    "Truncate and delete like Kafka instead of keeping bytes in quarantine");
  recover->add_flag("--quiet", o.quiet, "No progress and no summary; only problems on stderr");
  recover->callback([&]() {
    o.progress = ::isatty(STDERR_FILENO) ? ProgressMode::kTty : ProgressMode::kPlain;
    rc = RunRecover(o, std::cout, std::cerr);
  });
}

void AddCheck(CLI::App& app, CheckCommandOptions& o, int& rc) {
  CLI::App* check = app.add_subcommand(
      "check",
      "Verify every segment, index, checkpoint and snapshot of log dirs; changes and locks "
      "nothing (exit 0 clean, 1 problems, 2 usage/I/O)");
  check->add_option("--log-dirs", o.log_dirs, "Comma-separated log dirs (overrides log.dirs)")
      ->delimiter(',');
  check->add_option("--config", o.config_file, "A Kafka server.properties file")
      ->check(CLI::ExistingFile);
  check->add_option("--set", o.overrides, "Override one property, key=value (repeatable)");
  check->add_option("--threads", o.threads, "Partitions checked in parallel")
      ->check(CLI::PositiveNumber);
  check->add_option("--json", o.json_file, "Write the JSON report to this file");
  check->add_flag("--quiet", o.quiet, "No progress and no summary; only problems");
  check->callback([&]() {
    o.progress = ::isatty(STDERR_FILENO) ? ProgressMode::kTty : ProgressMode::kPlain;
    rc = RunCheck(o, std::cout, std::cerr);
  });
}

void AddRepair(CLI::App& app, RepairCommandOptions& o, int& rc) {
  CLI::App* repair = app.add_subcommand(
      "repair",
      "Fix what `check` finds, keeping dropped bytes in quarantine; refuses beyond "
      "--max-corrupt-bytes (exit 0 repaired or nothing to do, 1 refused/dry run with changes, "
      "2 usage/I/O)");
  repair->add_option("--log-dirs", o.log_dirs, "Comma-separated log dirs (overrides log.dirs)")
      ->delimiter(',');
  repair->add_option("--config", o.config_file, "A Kafka server.properties file")
      ->check(CLI::ExistingFile);
  repair->add_option("--set", o.overrides, "Override one property, key=value (repeatable)");
  repair->add_option("--max-corrupt-bytes", o.max_corrupt_bytes,
                     "Most segment-data bytes one partition may lose (0 = none, -1 = no limit)");
  repair->add_flag("--dry-run", o.dry_run, "Print the plan and change nothing");
  repair->add_option("--report", o.report_file, "Write the JSON report to this file");
  repair->add_option("--threads", o.threads, "Partitions processed in parallel")
      ->check(CLI::PositiveNumber);
  repair->callback([&]() {
    o.progress = ::isatty(STDERR_FILENO) ? ProgressMode::kTty : ProgressMode::kPlain;
    rc = RunRepair(o, std::cout, std::cerr);
  });
}

}  // namespace

int RunCli(int argc, char** argv, const std::vector<SubcommandRegistrar>& extra) {
  CLI::App app{"daruma: a Kafka-compatible log layer that always gets back up"};
  app.require_subcommand(1);
  int rc = 0;
  DumpOptions dump_options;
  AddDump(app, dump_options, rc);
  RecoverOptions recover_options;
  AddRecover(app, recover_options, rc);
  CheckCommandOptions check_options;
  AddCheck(app, check_options, rc);
  RepairCommandOptions repair_options;
  AddRepair(app, repair_options, rc);
  for (const SubcommandRegistrar& add : extra) add(app, &rc);
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    int code = app.exit(e);
    return code == 0 ? 0 : 2;
  }
  return rc;
}

}  // namespace daruma::tools
