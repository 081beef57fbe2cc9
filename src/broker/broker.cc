#include "broker/broker.h"

#include <fmt/format.h>

#include <csignal>
#include <iostream>
#include <nlohmann/json.hpp>
#include <thread>

#include "broker/broker_context.h"
#include "broker/crash_loop_guard.h"
#include "broker/fatal_signals.h"
#include "broker/health.h"
#include "broker/metrics.h"
#include "broker/request_handler.h"
#include "recovery/progress_reporter.h"

namespace daruma::broker {
namespace {

// The host clients should connect to when the listener binds every interface.
std::string AdvertisedHost(const ListenerAddress& bound) {
  if (!bound.host.empty() && bound.host != "0.0.0.0" && bound.host != "::") return bound.host;
  asio::error_code ec;
  std::string name = asio::ip::host_name(ec);
  return ec || name.empty() ? "localhost" : name;
}

// Kafka logs each retention deletion ("Deleting segments due to retention
// time 60000ms breach ..."): an operator who finds old messages gone looks for
// it. One line per breach, whatever the number of segments it removed.
void LogRetention(const EventLog& events, const daruma::Log& log,
                  const daruma::Log::RetentionResult& removed) {
  if (!events.Enabled(LogLevel::kInfo)) return;
  for (const daruma::Log::RetentionBreach& breach : removed.breaches) {
    if (breach.count == 0) continue;
    int64_t bytes = 0;
    for (size_t i = breach.first; i < breach.first + breach.count; ++i) {
      bytes += removed.segments[i]->size();
    }
    LogFields fields;
    fields.Add("topic", log.topic_partition().topic)
        .Add("partition", log.topic_partition().partition)
        .Add("cause", daruma::Log::RetentionCauseName(breach.cause))
        .Add("limit", breach.limit)
        .Add("segments", int64_t(breach.count))
        .Add("first_base_offset", removed.segments[breach.first]->base_offset())
        .Add("last_base_offset", removed.segments[breach.first + breach.count - 1]->base_offset())
        .Add("bytes", bytes)
        .Add("log_start_offset", removed.log_start_offset);
    events.Write(LogLevel::kInfo, "segments_deleted", fields);
  }
}

}  // namespace

Result<std::unique_ptr<FrameHandler>> MakeRequestHandler(const HandlerArgs& args) {
  BrokerContext ctx;
  ctx.log_manager = args.log_manager;
  ctx.config = *args.config;
  ctx.host = args.advertised_host;
  ctx.port = args.advertised_port;
  DARUMA_RETURN_IF_ERROR(ResolveBrokerSettings(&ctx));
  ctx.node_id = args.identity.node_id;
  ctx.zero_copy_fs = args.fs;
  ctx.cluster_id = args.identity.cluster_id;
  ctx.log = args.log;
  ctx.scrubber = args.scrubber;
  auto handler = std::make_unique<RequestHandler>(std::move(ctx), args.request_executor);
  DARUMA_RETURN_IF_ERROR(handler->init_status());
  return std::unique_ptr<FrameHandler>(std::move(handler));
}

Broker::Broker(BrokerOptions options)
    : options_(std::move(options)),
      event_log_(EventLog::Options{options_.log, options_.settings.log_level}),
      log_manager_(options_.log_manager) {
  log_manager_.SetRetentionListener(
      [this](const daruma::Log& log, const daruma::Log::RetentionResult& removed) {
        LogRetention(event_log_, log, removed);
      });
  // Kafka logs "Stopped serving replicas in dir ...": a dir that fails, at
  // start-up or while serving, is named with its error, once.
  log_manager_.failure_channel().SetListener([this](const std::string& dir, const Status& error) {
    event_log_.Write(LogLevel::kError, "log_dir_offline",
                     LogFields()
                         .Add("dir", dir)
                         .Add("error", error.ToString())
                         .Add("effect",
                              "its partitions are not served (KAFKA_STORAGE_ERROR) and it gets no "
                              "new partition until a restart finds it healthy"));
    asio::post(io_, [this] { HaltIfNoLogDirOnline(); });
  });
}

Broker::~Broker() = default;

void Broker::Log(std::string_view line) const {
  event_log_.WriteText(line);
}

// Re-arms itself, so a second SIGTERM/SIGINT during the drain is seen too.
// (It used to re-arm through a reference to a local std::function that was
// gone by the first signal: a crash at shutdown in an -O3 build.)
void Broker::WaitForSignal() {
  signals_->async_wait([this](const asio::error_code& ec, int signo) {
    if (ec) return;
    BeginStop(signo == SIGTERM ? "SIGTERM" : "SIGINT");
    WaitForSignal();
  });
}

Status Broker::Run() {
  if (options_.config.log_dirs.empty()) {
    return Status::InvalidArgument("no log directory: set log.dirs");
  }
  IgnoreSigpipe();
  if (options_.handle_signals) InstallFatalSignalReporting("daruma serve");
  // Every return from Run() is an expected end; only an exit() from inside
  // it is reported as unexpected.
  struct ExpectExitOnReturn {
    bool armed;
    ~ExpectExitOnReturn() {
      if (armed) ExpectExit();
    }
  } expect_exit{options_.handle_signals};
  DARUMA_RETURN_IF_ERROR(RefuseIfLogDirsHeld(options_.config.log_dirs));
  CrashLoopGuard guard(options_.log_manager.fs, options_.config.log_dirs,
                       options_.settings.max_unclean_starts);
  ReportLastShutdown(guard);
  DARUMA_ASSIGN_OR_RETURN(identity_,
                          ResolveBrokerIdentity(options_.config, options_.log_manager.fs));
  http_ = std::make_unique<HttpServer>(
      io_, [this](std::string_view method, std::string_view path) { return Route(method, path); });
  DARUMA_RETURN_IF_ERROR(http_->Listen(options_.settings.http_listener));
  http_port_ = http_->port();
  Log(fmt::format("HTTP /health and /metrics on {}:{}", options_.settings.http_listener.host,
                  http_->port()));

  if (Status recorded = guard.RecordStart(); !recorded.ok()) {
    // A refusal, or a count that cannot be parsed, stops the start; no dir
    // that can hold the count does not (start-up takes unusable dirs
    // offline, or fails when none is left).
    if (!recorded.IsIoError()) return recorded;
    event_log_.Write(LogLevel::kWarn, "crash_loop_guard_off",
                     LogFields()
                         .Add("error", recorded.ToString())
                         .Add("effect",
                              "this start is not counted; the broker runs without the "
                              "crash-loop guard"));
  }

  if (options_.handle_signals) {
    signals_ = std::make_unique<asio::signal_set>(io_, SIGINT, SIGTERM);
    WaitForSignal();
  }

  Log(fmt::format("recovering {} log dir(s)", options_.config.log_dirs.size()));
  std::thread recovery([this] {
    Status st;
    {
      ProgressReporter progress(
          [this] { return log_manager_.Progress(); },
          options_.log != nullptr ? ProgressMode::kPlain : ProgressMode::kQuiet,
          options_.log != nullptr ? *options_.log : std::cerr);
      progress.Start();
      st = log_manager_.Startup(options_.config.log_dirs, options_.config.log,
                                options_.config.num_recovery_threads_per_data_dir);
    }
    if (st.ok()) st = WriteMetaProperties();
    asio::post(io_, [this, st] { OnRecovered(st); });
  });
  io_.run();
  recovery.join();

  // Requests still on the pool (only after a drain timeout) finish here, so
  // nothing touches a log once it shuts down. Handlers hold Log pointers and
  // timers: gone before the logs shut down.
  if (request_pool_ != nullptr) request_pool_->join();
  handler_.reset();
  request_pool_.reset();
  if (scrubber_ != nullptr) scrubber_->Stop();
  kafka_.reset();
  signals_.reset();
  // Every dir failed: nothing can be flushed or marked clean, and the
  // crash-loop guard keeps counting this start, as after Kafka's halt.
  if (!recovery_ok_ || all_dirs_failed_) return fatal_;
  Log("flushing logs and writing checkpoints");
  Status shutdown = log_manager_.Shutdown();
  if (!shutdown.ok()) {
    Log("shutdown failed: " + shutdown.ToString());
    return fatal_.ok() ? shutdown : fatal_;
  }
  DARUMA_RETURN_IF_ERROR(guard.RecordCleanShutdown());
  event_log_.Flush();  // what the rate limit held back, before the last line
  std::string offline;
  for (const auto& [dir, error] : log_manager_.failure_channel().OfflineDirs()) {
    offline += (offline.empty() ? "" : ", ") + dir;
  }
  Log(offline.empty()
          ? "clean shutdown complete"
          : fmt::format("clean shutdown complete, but for the offline log dir(s) {}: not marked "
                        "clean, their partitions are recovered at the next start",
                        offline));
  return fatal_;
}

// First lines of a start: was the last shutdown clean, and how close is the
// crash-loop guard to refusing? (Read-only: RecordStart counts this start
// later, once HTTP is up.)
void Broker::ReportLastShutdown(const CrashLoopGuard& guard) {
  Result<int> unclean = guard.UncleanStarts();
  if (!unclean.ok()) {
    Log(fmt::format("cannot read the crash-loop guard: {}", unclean.status().ToString()));
    return;
  }
  unclean_starts_before_ = *unclean;
  if (*unclean == 0) return;
  const int max = options_.settings.max_unclean_starts;
  const std::string remaining =
      max <= 0 ? "the guard is disabled (daruma.crash.loop.max.unclean.starts=0)"
      : *unclean >= max
          ? fmt::format(
                "the crash-loop guard (daruma.crash.loop.max.unclean.starts={}) refuses "
                "this start",
                max)
          : fmt::format(
                "{} more unclean start(s) before the crash-loop guard refuses to start "
                "(daruma.crash.loop.max.unclean.starts={})",
                max - *unclean, max);
  Log(
      fmt::format("the last shutdown was unclean: {} start(s) in a row did not end in a clean "
                  "shutdown ({}); the logs are recovered as after a crash; {}",
                  *unclean, guard.path(), remaining));
}

// What start-up recovery left unserved is named here, not only in a report
// that `daruma recover` cannot write while this broker holds the dirs.
std::string Broker::RecoveredLine() const {
  std::string line = fmt::format("recovered {} partition(s)", log_manager_.AllLogs().size());
  if (!log_manager_.HasFailures()) return line;
  const std::map<std::string, Status> offline = log_manager_.failure_channel().OfflineDirs();
  size_t failed = 0;
  for (const PartitionRecoveryReport& p : log_manager_.report().partitions) {
    if (!p.errors.empty() && offline.count(ParentDir(p.dir)) == 0) ++failed;
  }
  line += "; with failures:";
  for (const auto& [dir, error] : offline) {
    line += fmt::format(" log dir {} is offline ({});", dir, error.ToString());
  }
  if (failed > 0) line += fmt::format(" {} partition(s) failed to load;", failed);
  line += " the partitions not served answer KAFKA_STORAGE_ERROR (details: /health)";
  return line;
}

// What start-up recovery cut or set aside is named here too (helper-54
// found only "recovered N partition(s)" after a torn tail went to the
// quarantine): the operator of a broker cannot run `daruma recover
// --report` on the dirs it holds. Partitions of an offline dir are in the
// recovered line already.
void Broker::ReportRecoveredDamage() {
  constexpr size_t kMaxDamageLines = 20;
  const std::map<std::string, Status> offline = log_manager_.failure_channel().OfflineDirs();
  size_t reported = 0;
  size_t more = 0;
  for (const PartitionRecoveryReport& p : log_manager_.report().partitions) {
    if (p.damage.empty() || offline.count(ParentDir(p.dir)) > 0) continue;
    if (reported == kMaxDamageLines) {
      ++more;
      continue;
    }
    ++reported;
    int64_t quarantined = 0;
    for (const QuarantinedRange& q : p.quarantined) quarantined += q.bytes;
    event_log_.Write(LogLevel::kWarn, "partition_recovered_with_damage",
                     LogFields()
                         .Add("partition", fmt::format("{}-{}", p.topic, p.partition))
                         .Add("dir", p.dir)
                         .Add("damage", int64_t(p.damage.size()))
                         .Add("kind", DamageKindName(p.damage.front().kind))
                         .Add("first", p.damage.front().text)
                         .Add("truncated_bytes", p.truncated_bytes)
                         .Add("quarantined_bytes", quarantined)
                         .Add("log_end_offset", p.log_end_offset));
  }
  if (more > 0) {
    event_log_.Write(LogLevel::kWarn, "partitions_recovered_with_damage",
                     LogFields()
                         .Add("more_partitions", int64_t(more))
                         .Add("effect",
                              "not listed one by one; `daruma check` on the stopped "
                              "broker's dirs lists them all"));
  }
}

// The first start on a KRaft broker's dirs: which topic configs came over
// from its metadata log, and which did not (they run on Daruma's defaults).
void Broker::ReportKafkaConfigImport() {
  const std::optional<KafkaConfigImportReport> report = log_manager_.kafka_config_import();
  if (!report) return;
  constexpr char kPending[] =
      "nothing imported; retention deletes nothing and every start tries again until the "
      "metadata can be read whole (README: Serving dirs a Kafka broker wrote)";
  if (report->metadata_log.empty()) {  // a pending import given up
    for (const std::string& note : report->notes) {
      event_log_.Write(LogLevel::kWarn, "kafka_metadata_replay_note",
                       LogFields().Add("note", note));
    }
    return;
  }
  if (!report->error.empty() || !report->complete) {
    event_log_.Write(LogLevel::kError, "kafka_topic_configs_not_imported",
                     LogFields()
                         .Add("metadata_log", report->metadata_log)
                         .Add("reason", !report->error.empty()
                                            ? report->error
                                            : (report->notes.empty() ? std::string("incomplete")
                                                                     : report->notes.back()))
                         .Add("effect", kPending));
    if (!report->error.empty()) return;
  }
  for (const auto& [topic, configs] : report->imported) {
    std::string rendered;
    // "; " between configs: a value may hold commas (cleanup.policy).
    for (const auto& [name, value] : configs) {
      rendered += fmt::format("{}{}={}", rendered.empty() ? "" : "; ", name, value);
    }
    event_log_.Write(LogLevel::kInfo, "kafka_topic_configs_imported",
                     LogFields().Add("topic", topic).Add("configs", rendered));
  }
  for (const std::string& refused : report->refused) {
    event_log_.Write(
        LogLevel::kWarn, "kafka_topic_config_refused",
        LogFields().Add("config", refused).Add("effect", "the broker default is used"));
  }
  for (const std::string& note : report->notes) {
    event_log_.Write(LogLevel::kWarn, "kafka_metadata_replay_note", LogFields().Add("note", note));
  }
  if (!report->cluster_defaults.empty()) {
    std::string rendered;
    for (const std::string& c : report->cluster_defaults) {
      rendered += (rendered.empty() ? "" : "; ") + c;
    }
    event_log_.Write(LogLevel::kWarn, "kafka_cluster_defaults_imported",
                     LogFields()
                         .Add("configs", rendered)
                         .Add("effect",
                              "imported as every topic's own config; topics created from now on "
                              "take the defaults "
                              "of server.properties, so set them there too"));
  }
  if (!report->broker_configs.empty()) {
    std::string rendered;
    for (const std::string& c : report->broker_configs)
      rendered += (rendered.empty() ? "" : "; ") + c;
    event_log_.Write(
        LogLevel::kWarn, "kafka_broker_configs_not_imported",
        LogFields()
            .Add("configs", rendered)
            .Add("effect",
                 "not applied (Daruma's broker configs come from server.properties): set "
                 "there the ones you need"));
  }
  if (!report->not_recorded.empty()) {
    event_log_.Write(LogLevel::kWarn, "kafka_topic_configs_not_recorded",
                     LogFields()
                         .Add("reason", report->not_recorded)
                         .Add("effect",
                              "they apply until the broker stops; the next start imports them "
                              "again"));
  }
  LogFields summary;
  summary.Add("metadata_log", report->metadata_log)
      .Add("snapshot", report->snapshot.empty() ? std::string("none") : report->snapshot)
      .Add("end_offset", report->end_offset)
      .Add("topics_imported", int64_t(report->imported.size()))
      .Add("refused", int64_t(report->refused.size()))
      .Add("broker_configs_not_imported", int64_t(report->broker_configs.size()))
      .Add("next_producer_id", report->next_producer_id);
  event_log_.Write(LogLevel::kInfo, "kafka_metadata_read", summary);
}

void Broker::RequestStop() {
  asio::post(io_, [this] { BeginStop("stop requested"); });
}

HttpResponse Broker::Route(std::string_view method, std::string_view path) const {
  if (method != "GET" && method != "HEAD") return {405, "text/plain; charset=utf-8", "GET only\n"};
  const BrokerState state = state_.load();
  if (path == "/health") {
    std::optional<CoordinatorStatus> groups;
    std::optional<TxnCoordinatorStatus> txns;
    if (handler_ != nullptr) {
      groups = handler_->GroupCoordinatorStatus();
      txns = handler_->TransactionCoordinatorStatus();
    }
    std::optional<ScrubStatus> scrub;
    if (scrubber_ != nullptr) scrub = scrubber_->Snapshot();
    return {HealthHttpStatus(state), "application/json",
            HealthJson(state, &log_manager_, kafka_listener_, groups, txns, scrub,
                       unclean_starts_before_)
                    .dump(-1, ' ', false, nlohmann::json::error_handler_t::replace) +
                "\n"};
  }
  if (path == "/metrics") {
    MetricsSources sources{state, &log_manager_, recovery_ok_, &metrics_, &counters_};
    if (handler_ != nullptr) {
      sources.parked_requests = int64_t(handler_->ParkedRequests());
      sources.delayed_operations = handler_->DelayedOperations();
    }
    std::optional<ScrubStatus> scrub;
    if (scrubber_ != nullptr) scrub = scrubber_->Snapshot();
    sources.scrub = scrub ? &*scrub : nullptr;
    return {200, "text/plain; version=0.0.4; charset=utf-8", RenderPrometheus(sources)};
  }
  return {404, "text/plain; charset=utf-8", "not found; try /health or /metrics\n"};
}

void Broker::OnRecovered(const Status& status) {
  recovered_ = true;
  if (!status.ok()) {
    fatal_ = status.WithContext("start-up recovery failed, nothing was served");
    Log(fatal_.ToString());
    Finish();
    return;
  }
  recovery_ok_ = true;
  Log(RecoveredLine());
  ReportRecoveredDamage();
  ReportKafkaConfigImport();
  if (stop_requested_) {
    Finish();
    return;
  }
  fatal_ = StartServing();
  if (!fatal_.ok()) {
    Log(fatal_.ToString());
    Finish();
    return;
  }
  // A dir that went offline since Startup returned posted its check before
  // recovery_ok_ was set, and that check did nothing.
  HaltIfNoLogDirOnline();
}

Status Broker::StartServing() {
  KafkaServerOptions server_options;
  server_options.max_request_bytes = options_.settings.socket_request_max_bytes;
  server_options.queued_max_request_bytes = options_.settings.queued_max_request_bytes;
  server_options.log = &event_log_;
  server_options.max_idle = std::chrono::milliseconds(options_.settings.connections_max_idle_ms);
  server_options.drain_timeout = options_.drain_timeout;
  kafka_ = std::make_unique<KafkaServer>(io_, server_options, &metrics_, &counters_);
  DARUMA_RETURN_IF_ERROR(kafka_->Bind(options_.settings.kafka_listener));
  ListenerAddress bound = options_.settings.kafka_listener;
  bound.port = kafka_->port();
  const ListenerAddress advertised = options_.settings.advertised_listener.value_or(
      ListenerAddress{AdvertisedHost(bound), bound.port});
  request_pool_ = std::make_unique<asio::thread_pool>(size_t(options_.settings.num_io_threads));
  HandlerArgs args;
  args.log_manager = &log_manager_;
  args.config = &options_.config;
  args.advertised_host = advertised.host;
  args.advertised_port = advertised.port;
  args.executor = io_.get_executor();
  args.identity = identity_;
  args.request_executor = request_pool_->get_executor();
  args.fs = options_.log_manager.fs;
  args.log = &event_log_;
  ScrubberOptions scrub;
  scrub.settings = options_.settings.scrub;
  scrub.logs = &log_manager_;
  scrub.fs = options_.log_manager.fs;
  scrub.log_dirs = options_.config.log_dirs;
  scrub.log = &event_log_;
  scrubber_ = std::make_unique<Scrubber>(std::move(scrub));
  scrubber_->Load();
  args.scrubber = scrubber_.get();
  DARUMA_ASSIGN_OR_RETURN(handler_, options_.make_handler(args));
  scrubber_->Start();
  kafka_->Start(handler_.get());
  kafka_listener_ = bound.ToString();
  kafka_port_ = bound.port;
  state_ = BrokerState::kServing;
  Log(fmt::format("serving Kafka clients on {} (advertised as {})", bound.ToString(),
                  advertised.ToString()));
  return Status::Ok();
}

std::vector<std::string> Broker::OnlineLogDirs() const {
  std::vector<std::string> online;
  for (std::string dir : options_.config.log_dirs) {
    while (dir.size() > 1 && dir.back() == '/') dir.pop_back();
    if (!log_manager_.failure_channel().IsOffline(dir)) online.push_back(dir);
  }
  return online;
}

// Kafka's LogManager.handleLogDirFailure halts the broker once no log dir is
// left ("Shutdown broker because all log dirs in ... have failed"): a broker
// that can store nothing must not keep its port open and /health "serving".
// Not a clean shutdown: `daruma serve` exits 1 and the next start recovers
// every dir. Dirs offline at start-up are Startup's to judge (it fails when
// none is left).
void Broker::HaltIfNoLogDirOnline() {
  if (!recovery_ok_ || all_dirs_failed_ || !OnlineLogDirs().empty()) return;
  all_dirs_failed_ = true;
  std::string dirs;
  for (const std::string& dir : options_.config.log_dirs) {
    dirs += (dirs.empty() ? "" : ", ") + dir;
  }
  fatal_ = Status::IoError(fmt::format("all log dirs in {} have failed", dirs));
  event_log_.Write(LogLevel::kError, "all_log_dirs_offline",
                   LogFields()
                       .Add("dirs", dirs)
                       .Add("effect",
                            "shutting the broker down (not cleanly): every dir's "
                            "partitions are recovered at the next start"));
  BeginStop("all log dirs offline");
}

// After recovery (the dirs exist and are locked); offline dirs are skipped.
Status Broker::WriteMetaProperties() {
  const std::vector<std::string> online = OnlineLogDirs();
  DARUMA_ASSIGN_OR_RETURN(std::vector<WrittenMetaProperties> written,
                          WriteMissingMetaProperties(online, identity_, options_.log_manager.fs));
  for (const WrittenMetaProperties& w : written) {
    Log(fmt::format("wrote {} (version={}, {}={}, {})", w.path, w.meta.version,
                    w.meta.version == 0 ? "broker.id" : "node.id", identity_.node_id,
                    w.meta.cluster_id ? "cluster.id=" + *w.meta.cluster_id : "no cluster.id"));
  }
  return Status::Ok();
}

void Broker::BeginStop(std::string_view why) {
  if (stop_requested_) {
    Log(fmt::format("{}: already stopping", why));
    return;
  }
  stop_requested_ = true;
  state_ = BrokerState::kStopping;
  if (!recovered_) {
    Log(fmt::format("{}: stopping once recovery finishes", why));
    return;
  }
  Log(fmt::format("{}: stopping, finishing in-flight requests", why));
  if (kafka_ != nullptr && handler_ != nullptr) {
    kafka_->Stop([this] { Finish(); });
  } else {
    Finish();
  }
}

void Broker::Finish() {
  if (finished_) return;
  finished_ = true;
  state_ = BrokerState::kStopping;
  if (http_ != nullptr) http_->Stop();
  if (signals_ != nullptr) {
    asio::error_code ignored;
    signals_->cancel(ignored);
  }
  io_.stop();
}

}  // namespace daruma::broker
