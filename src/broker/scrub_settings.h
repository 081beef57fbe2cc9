// ScrubSettings: the broker's background scrubber (broker/scrubber.h), from
// the daruma.scrub.* keys of server.properties (ServeSettings reads them):
//
//   daruma.scrub.enable               true (default) or false: no scrub thread,
//                                     no reads; findings already on disk are
//                                     still loaded and still keep their bytes
//                                     from being served
//   daruma.scrub.bytes.per.second     read rate bound, default 52428800 (50 MiB/s),
//                                     at least 1
//   daruma.scrub.interval.ms          from the end of one full pass to the start
//                                     of the next, default 86400000 (24 h, as
//                                     Ceph's osd_deep_scrub_interval)
//   daruma.scrub.initial.delay.ms     a broker whose dirs record no completed
//                                     pass starts its first this long after it
//                                     serves, default 300000 (5 min)
#pragma once

#include <cstdint>

namespace daruma::broker {

struct ScrubSettings {
  bool enable = true;
  int64_t bytes_per_second = int64_t(50) << 20;
  int64_t interval_ms = int64_t(24) * 3600 * 1000;
  int64_t initial_delay_ms = int64_t(5) * 60 * 1000;
};

}  // namespace daruma::broker
