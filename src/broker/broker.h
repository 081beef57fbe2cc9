// Broker: the `daruma serve` process — start-up order, signals, shutdown.
//
// Run(), in order:
//   0. The first line says whether the last shutdown was unclean and how many
//      unclean starts remain before the crash-loop guard refuses. SIGPIPE is
//      ignored (a departed client costs only its connection), and with
//      handle_signals fatal signals are reported (fatal_signals.h).
//      The broker identity (node id, cluster id) is resolved against the
//      meta.properties already in the log dirs (broker_identity.h); a node id
//      mismatch fails here, before anything is touched.
//   1. HTTP (/health, /metrics) binds first and answers "recovering" with the
//      KIP-831 counters while the logs load.
//   2. The crash-loop guard counts this start (or refuses it).
//   3. LogManager::Startup runs on its own thread (progress lines on `log`);
//      the io_context keeps serving HTTP meanwhile. Then every online log dir
//      without meta.properties gets one (written atomically).
//   4. Only after recovery succeeds the Kafka port binds, the request handler
//      pool (num.io.threads threads) starts, the scrubber loads its findings
//      (scrubber.h), the request handler is built (it may need the bound
//      port), the scrubber's thread starts and the state becomes "serving".
//   5. A stop (SIGTERM/SIGINT with handle_signals, or RequestStop()) sets
//      "stopping": the acceptor closes, the handler completes parked fetches,
//      in-flight requests are answered, connections close, the io_context
//      stops. A stop during recovery waits for recovery to finish.
//   6. The request pool drains (requests still running after the drain
//      timeout finish, their answers dropped) and joins; the handler goes,
//      then the scrubber stops.
//   7. LogManager::Shutdown (flush, checkpoints, clean-shutdown marker last);
//      when it succeeds the crash-loop guard is reset.
// Run() returns the first fatal error (HTTP or Kafka bind, fatal recovery
// error, handler construction, shutdown failure), else OK.
//
// Threading (Kafka's network threads vs num.io.threads request handler
// threads): Run() owns the calling thread; the io_context runs there and does
// all network I/O (accepts, Kafka connections, HTTP, signals) and every
// Broker member marked "io thread only". Requests are handled on the request
// pool, so a slow disk never stalls the network thread; deadlines (fetch max
// waits, group sessions) run on the request handler's scheduler thread. RequestStop(), state(),
// http_port() and kafka_port() may be called from any thread at any time, including before Run().
#pragma once

#include <asio.hpp>
#include <atomic>
#include <chrono>
#include <functional>
#include <memory>
#include <ostream>
#include <string>
#include <vector>

#include "broker/broker_identity.h"
#include "broker/broker_state.h"
#include "broker/crash_loop_guard.h"
#include "broker/event_log.h"
#include "broker/frame_handler.h"
#include "broker/http_server.h"
#include "broker/kafka_server.h"
#include "broker/request_metrics.h"
#include "broker/scrubber.h"
#include "broker/serve_settings.h"
#include "recovery/log_manager.h"
#include "recovery/server_config.h"

namespace daruma::broker {

// What a FrameHandler factory gets once the Kafka port is bound.
struct HandlerArgs {
  LogManager* log_manager = nullptr;  // started
  const ServerConfig* config = nullptr;
  std::string advertised_host;
  int32_t advertised_port = 0;
  asio::any_io_executor executor;  // the network io_context (timers, sockets)
  BrokerIdentity identity;         // node id and cluster id, as in meta.properties
  // The request handler pool (num.io.threads threads): where requests run.
  // It drains before the handler is destroyed.
  asio::any_io_executor request_executor;
  FileSystem* fs = nullptr;      // the log manager's (BrokerContext::zero_copy_fs)
  EventLog* log = nullptr;       // request lines (BrokerContext::log); outlives the handler
  Scrubber* scrubber = nullptr;  // BrokerContext::scrubber; outlives the handler
};

using HandlerFactory = std::function<Result<std::unique_ptr<FrameHandler>>(const HandlerArgs&)>;

// The production factory: a RequestHandler over a BrokerContext resolved from
// the config (ResolveBrokerSettings).
Result<std::unique_ptr<FrameHandler>> MakeRequestHandler(const HandlerArgs& args);

struct BrokerOptions {
  ServerConfig config;  // log_dirs must not be empty
  ServeSettings settings;
  LogManagerOptions log_manager;
  HandlerFactory make_handler = MakeRequestHandler;
  bool handle_signals = true;
  std::chrono::milliseconds drain_timeout{30000};
  std::ostream* log = nullptr;  // progress and life-cycle lines; null = silent
};

class Broker {
 public:
  explicit Broker(BrokerOptions options);
  ~Broker();
  Broker(const Broker&) = delete;
  Broker& operator=(const Broker&) = delete;

  Status Run();
  void RequestStop();

  BrokerState state() const { return state_.load(); }
  uint16_t http_port() const { return http_port_.load(); }    // 0 until bound
  uint16_t kafka_port() const { return kafka_port_.load(); }  // 0 until bound

 private:
  HttpResponse Route(std::string_view method, std::string_view path) const;
  void OnRecovered(const Status& status);
  Status StartServing();
  Status WriteMetaProperties();
  // The configured log dirs that are not offline (trailing '/' removed).
  std::vector<std::string> OnlineLogDirs() const;
  // On the io thread after a dir went offline: stops the broker, not
  // cleanly, once serving with no log dir left (Kafka halts).
  void HaltIfNoLogDirOnline();
  std::string RecoveredLine() const;
  // A WARN per partition whose start-up recovery met damage (cut, set aside
  // or rebuilt), up to kMaxDamageLines, then one line for the rest.
  void ReportRecoveredDamage();
  void ReportKafkaConfigImport();
  void BeginStop(std::string_view why);
  void WaitForSignal();  // on signals_: SIGTERM/SIGINT begin the stop
  void Finish();
  void Log(std::string_view line) const;
  // Logs it, and keeps the count for /health (unclean_starts_before_).
  void ReportLastShutdown(const CrashLoopGuard& guard);

  BrokerOptions options_;
  asio::io_context io_;
  // Every line the broker writes to options_.log goes through it, so lines of
  // the io thread and of the request threads never interleave. Before
  // log_manager_: the manager's listeners (retention, a dir going offline)
  // write here until the manager is gone.
  EventLog event_log_;
  LogManager log_manager_;
  RequestMetrics metrics_;
  NetworkCounters counters_;
  std::unique_ptr<HttpServer> http_;
  std::unique_ptr<asio::signal_set> signals_;
  std::unique_ptr<KafkaServer> kafka_;
  // Built once the logs are recovered; stopped after the handler is gone
  // (fetches consult it) and before the logs shut down (it reads them).
  std::unique_ptr<Scrubber> scrubber_;
  std::unique_ptr<FrameHandler> handler_;
  // Run() joins it before destroying handler_ (queued requests hold the
  // handler); declared after handler_ so that, failing that, it still goes
  // first.
  std::unique_ptr<asio::thread_pool> request_pool_;
  std::atomic<BrokerState> state_{BrokerState::kRecovering};
  std::atomic<uint16_t> http_port_{0};
  // Starts in a row before this one that did not end in a clean shutdown
  // (0: the last shutdown was clean); unset if the guard's file could not be
  // read. Set before the HTTP server starts, read-only after.
  std::optional<int> unclean_starts_before_;
  std::atomic<uint16_t> kafka_port_{0};
  std::string kafka_listener_;  // "host:port" once bound (io thread only)
  bool recovered_ = false;      // io thread only
  bool recovery_ok_ = false;
  bool stop_requested_ = false;
  bool finished_ = false;
  bool all_dirs_failed_ = false;  // io thread only
  Status fatal_;
  BrokerIdentity identity_;
};

}  // namespace daruma::broker
