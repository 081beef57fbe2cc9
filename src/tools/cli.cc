#include "tools/cli.h"

#include <unistd.h>

#include <CLI/CLI.hpp>
#include <iostream>

#include "tools/dump_command.h"
#include "tools/recover_command.h"

namespace daruma::tools {
namespace {

void AddDump(CLI::App& app, DumpOptions& o, int& rc) {
  CLI::App* dump = app.add_subcommand(
      "dump", "Print the batches of Kafka .log files (kafka-dump-log compatible)");
  dump->add_option("--files", o.files, "Comma-separated files to dump")->required()->delimiter(',');
  dump->add_flag("--deep-iteration", o.deep_iteration, "Print every record, not just batches");
  dump->add_flag("--print-data-log", o.print_data_log,
                 "Print keys and values (implies --deep-iteration)");
  dump->add_flag("--skip-record-metadata", o.skip_record_metadata,
                 "Print only keys and values of records");
  dump->add_flag("--json", o.json, "One JSON object per batch (and per record when deep)");
  dump->add_option("--max-bytes", o.max_bytes, "Read at most this many bytes of each .log file");
  dump->callback([&]() {
    if (o.print_data_log) o.deep_iteration = true;
    rc = RunDump(o, std::cout, std::cerr);
  });
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

}  // namespace

int RunCli(int argc, char** argv, const std::vector<SubcommandRegistrar>& extra) {
  CLI::App app{"daruma: a Kafka-compatible log layer that always gets back up"};
  app.require_subcommand(1);
  int rc = 0;
  DumpOptions dump_options;
  AddDump(app, dump_options, rc);
  RecoverOptions recover_options;
  AddRecover(app, recover_options, rc);
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
