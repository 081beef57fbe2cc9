#include "common/clock.h"

#include <chrono>

namespace daruma {
namespace {

class SystemClock final : public Clock {
 public:
  int64_t NowMs() const override {
    using namespace std::chrono;
    return duration_cast<milliseconds>(system_clock::now().time_since_epoch()).count();
  }
  int64_t NowNanos() const override {
    using namespace std::chrono;
    return duration_cast<nanoseconds>(steady_clock::now().time_since_epoch()).count();
  }
};

}  // namespace

Clock* Clock::System() {
  static SystemClock clock;
  return &clock;
}

}  // namespace daruma
