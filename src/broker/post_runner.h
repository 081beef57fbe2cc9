// PostRunner: a DelayedOperationPurgatory::Runner that posts each completion
// to an Asio executor (the request pool), so a forced operation's disk read
// never runs on the scheduler's thread. Kept out of delayed_fetch.h, which
// every request handler includes, so that only the code that owns an
// executor parses Asio.
#pragma once

#include <asio/post.hpp>
#include <functional>
#include <utility>

#include "common/delayed_operation.h"

namespace daruma::broker {

template <typename Executor>
DelayedOperationPurgatory::Runner PostRunner(Executor executor) {
  return [executor = std::move(executor)](std::function<void()> complete) {
    asio::post(executor, std::move(complete));
  };
}

}  // namespace daruma::broker
