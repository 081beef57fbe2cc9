// RdkafkaAdminClient: a librdkafka handle for the compat tests that drive
// Kafka's admin APIs through librdkafka's C admin API
// (rdkafka_admin_compat_test.cc, consumer_group_admin_compat_test.cc): the
// queue the results arrive on, the options of a request (its timeout), the
// wait for its result event (RdkafkaEvent, destroyed with it) and that
// result's error as a whole (AdminResultError).
//
// Only with librdkafka: tests/CMakeLists.txt defines DARUMA_HAVE_RDKAFKA when
// pkg-config finds it, and without it this header declares nothing.
// Header-only, in daruma::broker::testing.
#pragma once

#ifdef DARUMA_HAVE_RDKAFKA

#include <gtest/gtest.h>
#include <librdkafka/rdkafka.h>

#include <memory>
#include <string>

namespace daruma::broker::testing {

struct RdkafkaEventDeleter {
  void operator()(rd_kafka_event_t* e) const { rd_kafka_event_destroy(e); }
};
using RdkafkaEvent = std::unique_ptr<rd_kafka_event_t, RdkafkaEventDeleter>;

// One librdkafka producer handle (admin requests go through any handle) and
// the queue admin results arrive on. Its requests carry a timeout of
// `request_timeout_ms`; Await gives up after `await_ms` without an event.
class RdkafkaAdminClient {
 public:
  RdkafkaAdminClient(const std::string& bootstrap, int request_timeout_ms, int await_ms)
      : request_timeout_ms_(request_timeout_ms), await_ms_(await_ms) {
    rd_kafka_conf_t* conf = rd_kafka_conf_new();
    char err[512];
    EXPECT_EQ(rd_kafka_conf_set(conf, "bootstrap.servers", bootstrap.c_str(), err, sizeof(err)),
              RD_KAFKA_CONF_OK);
    rk_ = rd_kafka_new(RD_KAFKA_PRODUCER, conf, err, sizeof(err));
    EXPECT_NE(rk_, nullptr) << err;
    queue_ = rd_kafka_queue_new(rk_);
  }
  ~RdkafkaAdminClient() {
    rd_kafka_queue_destroy(queue_);
    rd_kafka_destroy(rk_);
  }
  RdkafkaAdminClient(const RdkafkaAdminClient&) = delete;
  RdkafkaAdminClient& operator=(const RdkafkaAdminClient&) = delete;

  rd_kafka_t* rk() { return rk_; }
  rd_kafka_queue_t* queue() { return queue_; }

  // New options for a request of `op`, with the request timeout; the caller
  // destroys them.
  rd_kafka_AdminOptions_t* Options(rd_kafka_admin_op_t op) {
    rd_kafka_AdminOptions_t* options = rd_kafka_AdminOptions_new(rk_, op);
    char err[512];
    rd_kafka_AdminOptions_set_request_timeout(options, request_timeout_ms_, err, sizeof(err));
    return options;
  }

  // The next admin result of `type`, or null after the wait.
  RdkafkaEvent Await(rd_kafka_event_type_t type) {
    for (;;) {
      RdkafkaEvent e(rd_kafka_queue_poll(queue_, await_ms_));
      if (!e || rd_kafka_event_type(e.get()) == type) return e;
    }
  }

 private:
  int request_timeout_ms_;
  int await_ms_;
  rd_kafka_t* rk_ = nullptr;
  rd_kafka_queue_t* queue_ = nullptr;
};

// The error of a whole admin result: __TIMED_OUT when Await gave up (null),
// else the event's own (NO_ERROR when the per-item results tell).
inline rd_kafka_resp_err_t AdminResultError(const RdkafkaEvent& e) {
  return e ? rd_kafka_event_error(e.get()) : RD_KAFKA_RESP_ERR__TIMED_OUT;
}

}  // namespace daruma::broker::testing

#endif  // DARUMA_HAVE_RDKAFKA
