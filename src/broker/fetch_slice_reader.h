// FetchSliceReader: a Fetch's log bytes as ranges of segment files (for
// sendfile, Kafka's FileRecords.slice) instead of a copy into memory.
//
// What it returns is what Log::Read(offset, max_bytes, isolation, min_one)
// returns as records: whole batches from the one containing `fetch_offset`,
// below the high watermark (kHighWatermark) or the last stable offset
// (kTxnCommitted, librdkafka's default), at most `max_bytes` (the first batch even when
// larger if `min_one`), possibly continuing into later segments. It reads
// only batch headers (offset, length, magic, last offset delta), through its
// own read-only Files, so it never takes the Log's lock across I/O and never
// touches the Log's segment objects:
//   * bytes below the high watermark are immutable (appends only add above
//     it), so a range found now still holds the same batches when sent;
//   * a segment found by name through Log::segment_base_offsets() and then
//     deleted (retention renames it) simply fails to open: the fetch falls
//     back to Log::Read; an open File stays readable after a rename.
// Where it is: consumers fetch sequentially, so after each read it keeps a
// cursor (open File + position) for the offset that follows (the least
// recently stored cursors are dropped beyond max_cursors); a fetch at any
// other offset binary-searches the segment's .index file (only entries below
// the high watermark, which are completely written) and scans batch headers
// from there, as LogSegment::TranslateOffset does.
//
// nullopt means "not served here, use Log::Read": no FileSystem (zero copy
// off), files without a descriptor (File::fd() < 0: test and fault-injecting
// file systems), an offset outside [log start, upper bound), kLogEnd, a
// segment whose .index is not on disk (an index a load rebuilt stays in
// memory until its segment is flushed or closed, IndexFile's deferred files:
// Log::Read looks it up there instead of scanning every header), or
// anything unexpected in the headers. `upper` (optional) receives the bound
// used, for the aborted transactions of a kTxnCommitted fetch.
//
// Thread-safe: one mutex around the cursor table; the reads themselves run
// outside it.
#pragma once

#include <cstdint>
#include <list>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include "common/file_system.h"
#include "log/log.h"
#include "log/topic_partition.h"
#include "protocol/response_frame.h"

namespace daruma::broker {

class HeaderScanner;  // fetch_slice_reader.cc

class FetchSliceReader {
 public:
  // `fs` opens the segment files (the log manager's FileSystem); null turns
  // zero copy off. At most `max_cursors` cursors are kept; cursors on the same
  // segment share its two open files (.log and .index).
  explicit FetchSliceReader(FileSystem* fs, size_t max_cursors = 256)
      : fs_(fs), max_cursors_(max_cursors) {}

  std::optional<std::vector<FileSlice>> Read(
      Log& log, int64_t fetch_offset, int64_t max_bytes, bool min_one,
      FetchIsolation isolation = FetchIsolation::kHighWatermark, int64_t* upper = nullptr);

  // Drops the cursors of a deleted topic: a topic created again under the
  // same name has new segment files at the same offsets.
  void ForgetTopic(const std::string& topic);

  // Cursors held now (tests).
  size_t cursors() const;

 private:
  // Where the batch containing `offset` starts.
  struct Cursor {
    const Log* log = nullptr;  // a recreated topic's Log is another object
    int64_t segment_base = 0;
    std::shared_ptr<const File> file;
    // The segment's .index (never null in a stored cursor), kept with the cursor:
    // opening it for each fetch made a single consumer 15-30% slower.
    std::shared_ptr<const File> index;
    uint64_t position = 0;
  };
  using Key = std::pair<TopicPartition, int64_t>;

  std::optional<Cursor> FindCursor(const Log& log, int64_t offset);
  void PutCursor(const TopicPartition& tp, int64_t offset, Cursor cursor);
  // Opens segment `base` of `log` and finds the batch containing `offset`.
  std::optional<Cursor> Locate(Log& log, int64_t base, int64_t offset, int64_t hw);
  // A cursor at the start of segment `base`, with its .log and .index open;
  // nullopt when either does not open or the .log has no descriptor (see
  // the class comment on what is not served here).
  std::optional<Cursor> OpenCursor(const Log& log, int64_t base);
  // The open File of `path` that a cursor or an in-flight response still
  // holds, if `path` still names it (a compaction swaps a new file in under
  // the same name), else a new one. Without this every cursor (one per
  // fetched-to offset, up to max_cursors) held two descriptors of its own.
  std::shared_ptr<const File> OpenShared(const std::string& path);
  // Adds to `out`, unread, the batches from the cursor up to the last offset
  // index entry that fits `budget` (bytes) and lies below `hw`, and moves the
  // cursor, `next` and `total` past them; nothing if no entry qualifies.
  void SkipIndexedBatches(Cursor& cursor, HeaderScanner& scanner, uint64_t budget, int64_t hw,
                          int64_t& next, std::vector<FileSlice>& out, uint64_t& total);
  static void AppendRange(std::vector<FileSlice>& out, const std::shared_ptr<const File>& file,
                          uint64_t position, uint64_t length);

  FileSystem* fs_;
  size_t max_cursors_;
  mutable std::mutex mu_;
  std::map<Key, Cursor> cursors_;
  std::list<Key> order_;  // oldest first, for eviction
  // path -> the File cursors share (expired entries are pruned lazily)
  std::map<std::string, std::weak_ptr<const File>> open_files_;
};

}  // namespace daruma::broker
