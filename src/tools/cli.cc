#include "tools/cli.h"

#include <fmt/format.h>
#include <unistd.h>

#include <CLI/CLI.hpp>
#include <charconv>
#include <iostream>
#include <nlohmann/json.hpp>

#include "tools/check_command.h"
#include "tools/dump_command.h"
#include "tools/recover_command.h"
#include "tools/repair_command.h"

namespace daruma::tools {
namespace {

constexpr int kMaxThreads = 1024;

constexpr char kExitRule[] =
    "Exit codes, the same for every subcommand: 0 success, the data is healthy afterwards; 1 the "
    "command ran and found or left problems; 2 it could not run (usage, configuration, a missing "
    "or wrong-kind input, an I/O error; nothing was changed).";

// CLI11's own range checks print their bounds as doubles (a 300-digit
// number for "positive"); this one says the range in words.
CLI::Validator ThreadCount() {
  return CLI::Validator(
      [](std::string& text) -> std::string {
        int value = 0;
        const auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), value);
        if (text.empty() || ec != std::errc() || end != text.data() + text.size() || value < 1 ||
            value > kMaxThreads) {
          return fmt::format("must be a whole number from 1 to {}, not \"{}\"", kMaxThreads, text);
        }
        return "";
      },
      fmt::format("1..{}", kMaxThreads), "THREADS");
}

// The subcommand's own meaning of each code, then the shared rule.
std::string ExitFooter(const char* meaning) {
  return std::string("Exit codes: ") + meaning + "\n" + kExitRule;
}

void AddDump(CLI::App& app, DumpOptions& o, int& rc) {
  CLI::App* dump = app.add_subcommand(
      "dump",
      "Print Kafka log-dir files: .log, .index, .timeindex, .txnindex, .snapshot, checkpoints, "
      "partition.metadata (kafka-dump-log compatible)");
  dump->footer(ExitFooter(
      "0 every file read and valid; 1 a file is corrupt or its index disagrees with its .log "
      "(named on stderr with the byte position); 2 a file is missing, unreadable or not a kind "
      "of file dump knows, or usage."));
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
  dump->add_option("--max-bytes", o.max_bytes, "Read at most this many bytes of each .log file")
      ->capture_default_str();
  dump->add_option("--max-message-size", o.max_message_size,
                   "Read window when verifying .index entries")
      ->capture_default_str();
  dump->callback([&]() { rc = RunDump(o, std::cout, std::cerr); });
}

void AddRecover(CLI::App& app, RecoverOptions& o, int& rc) {
  CLI::App* recover = app.add_subcommand(
      "recover", "Run a broker's start-up recovery on existing log dirs, then shut down cleanly");
  recover->footer(ExitFooter(
      "0 every partition loaded and shut down cleanly (whatever was fixed on the way); 1 a log "
      "dir went offline or a partition could not be loaded; 2 usage, configuration or I/O error "
      "(a missing log dir, an unknown --set key, a dir locked by a broker): nothing was "
      "changed."));
  recover->add_option("--log-dirs", o.log_dirs, "Comma-separated log dirs (overrides log.dirs)")
      ->delimiter(',');
  CLI::Option* config =
      recover->add_option("--config", o.config_file, "A Kafka server.properties file")
          ->check(CLI::ExistingFile);
  recover
      ->add_option("--kafka-config", o.kafka_config_file,
                   "A stopped Kafka broker's own server.properties: its log dirs and settings; "
                   "the KRaft metadata log is left untouched; refuses while the broker runs")
      ->check(CLI::ExistingFile)
      ->excludes(config);
  recover->add_option("--set", o.overrides, "Override one property, key=value (repeatable)");
  recover->add_flag("--full", o.full,
                    "Rescan every segment from the log start, whatever the clean-shutdown marker "
                    "and recovery points say");
  recover
      ->add_option("--threads", o.threads,
                   "Recovery threads per log dir [default: num.recovery.threads.per.data.dir, "
                   "itself 1]")
      ->check(ThreadCount());
  recover->add_option("--report", o.report_file, "Write the JSON recovery report to this file");
  recover->add_flag("--no-quarantine", o.no_quarantine,
                    "Truncate and delete like Kafka instead of keeping bytes in quarantine");
  recover->add_flag("--quiet", o.quiet, "No progress and no summary; only problems on stderr");
  recover->callback([&]() {
    o.progress = ::isatty(STDERR_FILENO) ? ProgressMode::kTty : ProgressMode::kPlain;
    o.exits_after = true;
    rc = RunRecover(o, std::cout, std::cerr);
  });
}

void AddCheck(CLI::App& app, CheckCommandOptions& o, int& rc) {
  CLI::App* check = app.add_subcommand(
      "check",
      "Verify every segment, index, checkpoint and snapshot of log dirs; changes and locks "
      "nothing");
  check->footer(
      ExitFooter("0 no problems; 1 problems found (each with one recommended action); 2 usage, "
                 "configuration or I/O error (a missing log dir, an unknown --set key)."));
  check->add_option("--log-dirs", o.log_dirs, "Comma-separated log dirs (overrides log.dirs)")
      ->delimiter(',');
  check->add_option("--config", o.config_file, "A Kafka server.properties file")
      ->check(CLI::ExistingFile);
  check->add_option("--set", o.overrides, "Override one property, key=value (repeatable)");
  check->add_option("--threads", o.threads, "Partitions checked in parallel")
      ->check(ThreadCount())
      ->capture_default_str();
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
      "--max-corrupt-bytes");
  repair->footer(ExitFooter(
      "0 repaired, or nothing to do; 1 refused (beyond --max-corrupt-bytes, or a partition it "
      "cannot load), a dry run with changes to make, a failure while applying, or problems left "
      "for an operator; 2 usage, configuration or I/O error (a missing log dir, an unknown --set "
      "key): nothing was changed."));
  repair->add_option("--log-dirs", o.log_dirs, "Comma-separated log dirs (overrides log.dirs)")
      ->delimiter(',');
  repair->add_option("--config", o.config_file, "A Kafka server.properties file")
      ->check(CLI::ExistingFile);
  repair->add_option("--set", o.overrides, "Override one property, key=value (repeatable)");
  repair
      ->add_option("--max-corrupt-bytes", o.max_corrupt_bytes,
                   "Most segment-data bytes one partition may lose (0 = none, -1 = no limit)")
      ->capture_default_str();
  repair->add_flag("--dry-run", o.dry_run, "Print the plan and change nothing");
  repair->add_flag("--salvage", o.salvage,
                   "Keep the valid batches after damaged bytes (an offset gap, as after "
                   "compaction) instead of truncating the log there");
  repair->add_option("--report", o.report_file, "Write the JSON report to this file");
  repair->add_option("--threads", o.threads, "Partitions processed in parallel")
      ->check(ThreadCount())
      ->capture_default_str();
  repair->add_flag("--quiet", o.quiet,
                   "No progress and no summary; the plan and problems only when something is "
                   "refused, fails or is left for an operator (on stderr)");
  repair->callback([&]() {
    o.progress = ::isatty(STDERR_FILENO) ? ProgressMode::kTty : ProgressMode::kPlain;
    rc = RunRepair(o, std::cout, std::cerr);
  });
}

}  // namespace

int RunCli(int argc, char** argv, const std::vector<SubcommandRegistrar>& extra,
           const BuildInfo& build) {
  CLI::App app{"daruma: a Kafka-compatible log layer that always gets back up"};
  app.require_subcommand(1);
  app.footer(kExitRule);
  app.set_version_flag("--version", fmt::format("daruma {} (commit {}, {} build)", build.version,
                                                build.commit, build.build_type));
  int rc = kExitSuccess;
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
    // --help and --version are successes; every other parse error is usage.
    const int code = app.exit(e);
    return code == 0 ? kExitSuccess : kExitCannotRun;
  }
  return rc;
}

}  // namespace daruma::tools
