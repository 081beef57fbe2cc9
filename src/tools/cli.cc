#include "tools/cli.h"

#include <CLI/CLI.hpp>
#include <iostream>

#include "tools/dump_command.h"

namespace daruma::tools {
namespace {

void AddDump(CLI::App& app, DumpOptions& o, int& rc) {
  CLI::App* dump = app.add_subcommand(
      "dump", "Print the batches of Kafka .log files (kafka-dump-log compatible)");
  dump->add_option("--files", o.files, "Comma-separated files to dump")
      ->required()
      ->delimiter(',');
  dump->add_flag("--deep-iteration", o.deep_iteration, "Print every record, not just batches");
  dump->add_flag("--print-data-log", o.print_data_log,
                 "Print keys and values (implies --deep-iteration)");
  dump->add_flag("--skip-record-metadata", o.skip_record_metadata,
                 "Print only keys and values of records");
  dump->add_flag("--json", o.json, "One JSON object per batch (and per record when deep)");
  dump->add_option("--max-bytes", o.max_bytes, "Read at most this many bytes of each .log file");
  dump->callback([&]() {
    if (o.print_data_log || o.skip_record_metadata) o.deep_iteration = true;
    rc = RunDump(o, std::cout, std::cerr);
  });
}

}  // namespace

int RunCli(int argc, char** argv) {
  CLI::App app{"daruma: a Kafka-compatible log layer that always gets back up"};
  app.require_subcommand(1);
  int rc = 0;
  DumpOptions dump_options;
  AddDump(app, dump_options, rc);
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    int code = app.exit(e);
    return code == 0 ? 0 : 2;
  }
  return rc;
}

}  // namespace daruma::tools
