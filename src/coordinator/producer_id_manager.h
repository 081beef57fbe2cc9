// ProducerIdManager: hands out producer ids, each one at most once, across
// restarts and crashes (Kafka's ProducerIdManager together with the
// controller's ProducerIdControlManager, reduced to one node).
//
// Ids are reserved in blocks of `block_size` (Kafka's 1000). The end of the
// current block is made durable in <dir>/daruma-producer-ids (temp file,
// fsync, rename, dir fsync) before the first id of the block is returned, so
// after a crash the next block starts at or above every id ever returned; the
// unused rest of a block is skipped, never reused. One fsync per block, not
// per id.
//
// Invariants: every id returned is < block_end_, and block_end_ is durable in
// the file of `dir` before it is used. Open starts above the largest end found
// in any of the given dirs and above `first_free`, the caller's lower bound:
// the broker passes one past the largest producer id its logs hold (data
// written by Kafka or copied in, or a file lost with a failed disk) or Kafka's
// metadata names, so a new producer never inherits another one's sequence
// numbers. A `first_free` above every file's end is made durable at Open.
//
// Thread-safe.
#pragma once

#include <atomic>
#include <cstdint>
#include <memory>
#include <mutex>
#include <string>
#include <string_view>
#include <vector>

#include "common/file_system.h"
#include "common/status.h"

namespace daruma {

class ProducerIdManager {
 public:
  static constexpr char kFileName[] = "daruma-producer-ids";
  static constexpr int32_t kDefaultBlockSize = 1000;

  // `dir` keeps the file; every dir in `read_dirs` (which may include `dir`)
  // is read for an end found there. A file that does not parse is
  // kCorruption naming it: starting lower than it says could hand an id out
  // twice, so the broker refuses rather than guesses.
  static Result<std::unique_ptr<ProducerIdManager>> Open(FileSystem* fs, const std::string& dir,
                                                         const std::vector<std::string>& read_dirs,
                                                         int64_t first_free,
                                                         int32_t block_size = kDefaultBlockSize);

  // The next producer id. kIoError (naming the file) when a new block cannot
  // be made durable; no id is returned then, and the next call tries again.
  Result<int64_t> Generate();

  // No id below `first_free` is returned from now on: one the broker learns
  // is taken after Open (MaxProducerIdInTransactionLog). Ids skipped this way
  // are never returned; nothing is written until the next block. Ends a wait
  // ExpectFloor began.
  void RaiseFloor(int64_t first_free);
  // A floor is still to be learned: floor_known() is false until RaiseFloor,
  // and the broker answers an idempotent InitProducerId with
  // COORDINATOR_LOAD_IN_PROGRESS meanwhile.
  void ExpectFloor() { floor_known_.store(false); }
  bool floor_known() const { return floor_known_.load(); }

  // The file's content for a block ending at `block_end` (exclusive), and back.
  static std::string Serialize(int64_t block_end);
  static Result<int64_t> Parse(const std::string& path, std::string_view content);

 private:
  ProducerIdManager(FileSystem* fs, std::string path, int64_t next, int32_t block_size)
      : fs_(fs), path_(std::move(path)), block_size_(block_size), next_(next), block_end_(next) {}

  FileSystem* fs_;
  std::string path_;
  int32_t block_size_;
  std::mutex mu_;
  int64_t next_;       // the next id to return
  int64_t block_end_;  // exclusive; durable in path_
  std::atomic<bool> floor_known_{true};
};

}  // namespace daruma
