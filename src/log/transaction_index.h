// TransactionIndex: the aborted-transaction index `<base>.txnindex` of one
// segment (spec §7.4).
//
// Format (34-byte entries, big-endian, no header, not preallocated):
//   0   int16  version = 0
//   2   int64  producerId
//   10  int64  firstOffset       (may lie in an earlier segment)
//   18  int64  lastOffset        (offset of the ABORT marker, in this segment)
//   26  int64  lastStableOffset  (the LSO when the abort was applied)
//
// Contract:
//  * One entry per aborted transaction whose marker is in this segment, in
//    strictly increasing lastOffset order.
//  * The file is created lazily by the first Append; until then it does not
//    exist and reads as empty. Reset truncates an existing file to 0 bytes.
//  * Readers take whole 34-byte entries from position 0; a trailing partial
//    entry is ignored. Kafka quirk kept on purpose: the version is the FIRST
//    BYTE only, as a signed int8; a value > 0 is corruption.
//  * Entries are written with WriteAt at the end of the file ("appended");
//    they are durable after Flush(). The end is read from the file once per
//    open handle and then kept (end_).
//  * AppendBuffered() checks an entry as Append() does but keeps its bytes in
//    memory; WritePending() writes all of them with one WriteAt, and every
//    other mutation writes them first, while reads see them, so the index
//    behaves as if each had been appended at once (recovery's replay buffers
//    the aborted transactions of a segment: one pwrite each was 8 % of
//    recovering transactional data).
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "common/bytes.h"
#include "common/file_system.h"
#include "common/status.h"

namespace daruma {

struct AbortedTxn {
  static constexpr size_t kSize = 34;

  int64_t producer_id = -1;
  int64_t first_offset = 0;
  int64_t last_offset = 0;
  int64_t last_stable_offset = 0;

  bool operator==(const AbortedTxn&) const = default;
  std::string ToString() const;
};

// Result of a fetch-time search: the matching transactions and whether the
// search may stop (an entry's lastStableOffset reached the upper bound).
struct TxnIndexSearchResult {
  std::vector<AbortedTxn> aborted;
  bool is_complete = false;
};

class TransactionIndex {
 public:
  // Never creates the file. `writable` = false makes every mutation fail.
  TransactionIndex(const std::string& path, int64_t base_offset,
                   FileSystem* fs = FileSystem::Default(), bool writable = true)
      : fs_(fs), path_(path), base_offset_(base_offset), writable_(writable) {}

  TransactionIndex(const TransactionIndex&) = delete;
  TransactionIndex& operator=(const TransactionIndex&) = delete;

  // Appends one entry, creating the file if needed. kInvalidOffset unless
  // txn.last_offset is greater than the last entry's (read from the file on
  // first use, so a re-opened index keeps the rule).
  Status Append(const AbortedTxn& txn);
  // The same check as Append; the entry reaches the file with WritePending.
  Status AppendBuffered(const AbortedTxn& txn);
  Status WritePending();
  Result<std::vector<AbortedTxn>> AllAbortedTxns() const;
  // Entries with last_offset >= fetch_offset and first_offset < upper_bound;
  // complete once an entry's last_stable_offset >= upper_bound.
  Result<TxnIndexSearchResult> CollectAbortedTxns(int64_t fetch_offset, int64_t upper_bound) const;
  // Drops the first entry with last_offset >= offset and all after it.
  Status TruncateTo(int64_t offset);
  // Truncates an existing file to 0 bytes (no file is created).
  Status Reset();
  // §7.5: every entry's last_offset >= base offset; Corruption naming the file.
  Status SanityCheck() const;
  Status Flush();
  Status Close();
  Status DeleteIfExists(bool* existed = nullptr);
  Status RenameTo(const std::string& new_path);

  bool FileExists() const { return !known_absent_ && fs_->Exists(path_); }
  // The caller listed the directory and found no file at path(): reads and
  // Reset skip the existence check until this index creates or renames its
  // file. (A load of 10,000 partitions would otherwise stat 40,000 absent
  // files, and every read_committed fetch one per segment it reads.)
  void AssumeAbsent() { known_absent_ = true; }
  const std::string& path() const { return path_; }
  int64_t base_offset() const { return base_offset_; }

 private:
  // Reads every whole entry; `positions` (optional) receives their file positions.
  Result<std::vector<AbortedTxn>> ReadEntries(std::vector<uint64_t>* positions) const;
  Status OpenForWrite();
  Status CheckWritable() const;
  // Append's checks.
  Status CheckAppend(const AbortedTxn& txn);
  // Writes whole encoded entries at the file's end (creating the file).
  Status WriteAtEnd(ByteSpan entries);

  FileSystem* fs_;
  std::string path_;
  int64_t base_offset_;
  bool writable_;
  std::unique_ptr<File> file_;  // open only after a write
  // The file's size while file_ is open, once an Append asked for it: every
  // change to the file goes through this object (the segment owns its index),
  // so an Append needs no fstat. A recovery that rebuilds a segment's
  // transactions appended one fstat and one pwrite per aborted transaction.
  std::optional<uint64_t> end_;
  std::optional<int64_t> last_offset_;
  bool last_offset_known_ = false;  // last_offset_ was read from the file
  bool known_absent_ = false;       // see AssumeAbsent
  // Entries appended with AppendBuffered and not yet written, encoded; they
  // follow the file's bytes.
  std::vector<uint8_t> pending_;
};

}  // namespace daruma
