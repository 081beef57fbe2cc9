#include "broker/serve_command.h"

#include <CLI/CLI.hpp>
#include <filesystem>
#include <iostream>
#include <memory>

#include "broker/broker.h"
#include "broker/crash_loop_guard.h"

namespace daruma::broker {
namespace {

constexpr int kExitOk = 0;
constexpr int kExitFailed = 1;
constexpr int kExitUsage = 2;

// Kafka creates a missing log dir with its parents (Files.createDirectories);
// a path that exists and is not a directory is a configuration error, found
// before anything is bound or counted.
Status PrepareLogDirs(const std::vector<std::string>& log_dirs) {
  for (const std::string& dir : log_dirs) {
    std::error_code ec;
    const std::filesystem::file_status st = std::filesystem::status(dir, ec);
    if (st.type() == std::filesystem::file_type::not_found) {
      std::filesystem::create_directories(dir, ec);
      if (ec) return Status::InvalidArgument("log dir " + dir + ": cannot create: " + ec.message());
      continue;
    }
    if (ec) return Status::InvalidArgument("log dir " + dir + ": " + ec.message());
    if (st.type() != std::filesystem::file_type::directory) {
      return Status::InvalidArgument("log dir " + dir + ": not a directory");
    }
  }
  return Status::Ok();
}

Result<ServerConfig> ResolveConfig(const ServeOptions& o) {
  DARUMA_ASSIGN_OR_RETURN(ServerConfig config, LoadServerConfig(o.config_file, o.overrides));
  if (config.log_dirs.empty()) {
    return Status::InvalidArgument("no log directory: set log.dirs in --config or with --set");
  }
  return config;
}

}  // namespace

int RunServe(const ServeOptions& o, std::ostream& err) {
  Result<ServerConfig> config = ResolveConfig(o);
  if (!config.ok()) {
    err << "daruma serve: " << config.status().message() << "\n";
    return kExitUsage;
  }
  Result<ServeSettings> settings = ServeSettings::FromConfig(*config);
  if (!settings.ok()) {
    err << "daruma serve: " << settings.status().message() << "\n";
    return kExitUsage;
  }
  if (Status st = PrepareLogDirs(config->log_dirs); !st.ok()) {
    err << "daruma serve: " << st.message() << "\n";
    return kExitUsage;
  }
  for (const std::string& w : config->warnings) err << "daruma serve: warning: " << w << "\n";
  if (o.clear_crash_loop) {
    if (Status st = RefuseIfLogDirsHeld(config->log_dirs); !st.ok()) {
      err << "daruma serve: " << st.message() << "\n";
      return kExitFailed;
    }
    CrashLoopGuard guard(FileSystem::Default(), config->log_dirs, settings->max_unclean_starts);
    Status st = guard.Clear();
    if (!st.ok()) {
      err << "daruma serve: cannot clear the crash-loop guard: " << st.ToString() << "\n";
      return kExitFailed;
    }
    err << "daruma serve: crash-loop guard cleared (" << guard.path() << ")\n";
  }
  BrokerOptions options;
  options.config = *config;
  options.settings = *settings;
  options.log_manager.jobs = LogManagerJobsConfig::From(*config);
  options.log_manager.max_open_files = size_t(config->max_open_files);
  options.log_manager.import_kafka_topic_configs = true;
  if (auto dir = config->other.find("metadata.log.dir"); dir != config->other.end()) {
    options.log_manager.kafka_metadata_log_dir = dir->second;
  }
  options.log = &err;
  Broker broker(std::move(options));
  Status st = broker.Run();
  if (!st.ok()) {
    err << "daruma serve: " << st.message() << "\n";
    return kExitFailed;
  }
  return kExitOk;
}

void AddServeCommand(CLI::App& app, int* rc) {
  auto options = std::make_shared<ServeOptions>();
  CLI::App* serve = app.add_subcommand(
      "serve",
      "Run a single-node Kafka-compatible broker on the log dirs of a server.properties "
      "(HTTP /health and /metrics first, the Kafka port after recovery; SIGTERM/SIGINT shut "
      "down cleanly)");
  serve->footer(
      "Exit codes: 0 clean shutdown after SIGTERM/SIGINT; 1 the broker failed or refused to start "
      "(crash-loop guard, a port in use, no usable log dir) or did not shut down cleanly; 2 "
      "usage or configuration error (an unknown --set key, a bad value, a log dir that is a "
      "file): nothing was started.\n"
      "Exit codes, the same for every subcommand: 0 success, the data is healthy afterwards; 1 "
      "the command ran and found or left problems; 2 it could not run (usage, configuration, a "
      "missing or wrong-kind input, an I/O error; nothing was changed).");
  serve->add_option("--config", options->config_file, "A Kafka server.properties file")
      ->required()
      ->check(CLI::ExistingFile);
  serve->add_option("--set", options->overrides, "Override one property, key=value (repeatable)");
  serve->add_flag("--clear-crash-loop", options->clear_crash_loop,
                  "Reset the crash-loop guard (after investigating repeated crashes), then start");
  serve->callback([options, rc] { *rc = RunServe(*options, std::cerr); });
}

}  // namespace daruma::broker
