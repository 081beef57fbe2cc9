#include "recovery/load_journal.h"

#include <fmt/format.h>

#include <algorithm>
#include <cstring>
#include <functional>
#include <map>
#include <set>
#include <span>
#include <utility>

#include "common/bytes.h"
#include "common/crc32c.h"
#include "log/log_file_names.h"
#include "recovery/load_undo_pack.h"

namespace daruma {

namespace {

// The journal's name inside the undo dir before kLoadJournalFileName.
constexpr char kOldJournalFileName[] = "JOURNAL";
// Saved bytes are read in chunks of this size; an all-zero chunk is saved as
// a length only (preallocated index files are mostly zeros).
constexpr uint64_t kSaveChunk = 64 * 1024;

// The length of `bytes` without its trailing zeros. Saving a preallocated
// index scans up to a chunk of zeros per file, so this compares a word at a
// time.
size_t WithoutTrailingZeros(std::span<const uint8_t> bytes) {
  size_t n = bytes.size();
  // Byte by byte down to a multiple of 8, then word by word, then byte by
  // byte inside the last word that is not zero.
  for (; n % 8 != 0; --n) {
    if (bytes[n - 1] != 0) return n;
  }
  for (uint64_t word = 0; n >= 8; n -= 8) {
    std::memcpy(&word, bytes.data() + n - 8, 8);
    if (word != 0) break;
  }
  while (n > 0 && bytes[n - 1] == 0) --n;
  return n;
}

void PutU64(std::vector<uint8_t>* out, uint64_t v) {
  uint8_t b[8];
  StoreBe64(b, v);
  out->insert(out->end(), b, b + 8);
}

void PutString(std::vector<uint8_t>* out, const std::string& s) {
  uint8_t b[4];
  StoreBe32(b, uint32_t(s.size()));
  out->insert(out->end(), b, b + 4);
  out->insert(out->end(), s.begin(), s.end());
}

// Bounds-checked reads over one payload; any overrun marks it bad.
struct PayloadReader {
  const uint8_t* p;
  size_t left;
  bool bad = false;
  bool Need(size_t n) {
    if (left < n) bad = true;
    return !bad;
  }
  uint8_t U8() {
    if (!Need(1)) return 0;
    --left;
    return *p++;
  }
  uint64_t U64() {
    if (!Need(8)) return 0;
    const uint64_t v = LoadBe64(p);
    p += 8;
    left -= 8;
    return v;
  }
  std::string String() {
    if (!Need(4)) return {};
    const uint32_t n = LoadBe32(p);
    p += 4;
    left -= 4;
    if (!Need(n)) return {};
    std::string s(reinterpret_cast<const char*>(p), n);
    p += n;
    left -= n;
    return s;
  }
};

bool Exists(FileSystem* fs, const std::string& path) {
  return !path.empty() && fs->Exists(path);
}

// Where the saved zero ranges that run on to the file's end begin (r.size
// when the last saved bytes are not zeros).
uint64_t ZeroTailStart(const UndoRecord& r) {
  std::vector<const SavedRange*> ranges;
  for (const SavedRange& range : r.ranges) ranges.push_back(&range);
  std::sort(ranges.begin(), ranges.end(),
            [](const SavedRange* a, const SavedRange* b) { return a->position > b->position; });
  uint64_t start = r.size;
  for (const SavedRange* range : ranges) {
    if (!range->zeros || range->position + range->length != start) break;
    start = range->position;
  }
  return start;
}

Status RestoreSaved(FileSystem* fs, const UndoRecord& r) {
  DARUMA_ASSIGN_OR_RETURN(auto file, fs->Open(r.path, OpenMode::kReadWrite));
  DARUMA_RETURN_IF_ERROR(file->Truncate(r.size));
  // Zeros that run on to the end (a preallocated index, typically sparse,
  // of up to segment.index.bytes) are put back by cutting the file there and
  // extending it again, which leaves a hole as preallocation did. Writing
  // them would take disk space the file never had, and a rollback after
  // ENOSPC could then never finish: every start would fill the disk again.
  const uint64_t zero_tail = ZeroTailStart(r);
  static const std::vector<uint8_t> kZeros(kSaveChunk, 0);
  for (const SavedRange& range : r.ranges) {
    if (!range.zeros) {
      DARUMA_RETURN_IF_ERROR(file->WriteAt(range.position, range.bytes));
      continue;
    }
    if (range.position >= zero_tail) continue;
    for (uint64_t done = 0; done < range.length;) {
      const uint64_t n = std::min<uint64_t>(kSaveChunk, range.length - done);
      DARUMA_RETURN_IF_ERROR(
          file->WriteAt(range.position + done, std::span<const uint8_t>(kZeros.data(), n)));
      done += n;
    }
  }
  if (zero_tail < r.size) {
    DARUMA_RETURN_IF_ERROR(file->Truncate(zero_tail));
    DARUMA_RETURN_IF_ERROR(file->Truncate(r.size));
  }
  return file->Sync();
}

// Moves a file set aside in the undo dir back to `path`. Both names exist
// only after a power loss that kept the undo dir's new entry but not the
// removal from the partition dir (the two directories are synced apart):
// `path` then still names the original (any later file under that name was
// removed by a newer record's inverse), and the undo copy is a duplicate.
Status PutBack(FileSystem* fs, const std::string& undo, const std::string& path) {
  if (!Exists(fs, undo)) return Status::Ok();
  if (fs->Exists(path)) return fs->Remove(undo);
  return fs->Rename(undo, path);
}

// kCreateAny's inverse: the files created in r.path since the listing.
Status RemoveFilesNotListed(FileSystem* fs, const UndoRecord& r) {
  if (!Exists(fs, r.path)) return Status::Ok();
  std::set<std::string> listed;
  for (size_t start = 0; start < r.to.size();) {
    const size_t end = r.to.find('\0', start);
    if (end == std::string::npos) break;
    listed.insert(r.to.substr(start, end - start));
    start = end + 1;
  }
  DARUMA_ASSIGN_OR_RETURN(std::vector<DirEntry> entries, fs->ListDir(r.path));
  for (const DirEntry& e : entries) {
    // The journal being rolled back stays until the rollback is complete.
    if (e.is_regular && listed.count(e.name) == 0 && e.name != kLoadJournalFileName) {
      DARUMA_RETURN_IF_ERROR(fs->Remove(JoinPath(r.path, e.name)));
    }
  }
  return Status::Ok();
}

}  // namespace

std::vector<uint8_t> EncodeUndoRecord(const UndoRecord& r) {
  // The payload is written once, in place after the 8-byte frame header: a
  // kSave record carries a whole index file (Presave), and growing a
  // separate payload and copying it behind the header copied it three times.
  size_t payload_size = 1 + 3 * 4 + r.path.size() + r.to.size() + r.undo.size() + 2 * 8;
  for (const SavedRange& range : r.ranges) {
    payload_size += 2 * 8 + 1 + (range.zeros ? 0 : range.bytes.size());
  }
  std::vector<uint8_t> out(8);
  out.reserve(8 + payload_size);
  out.push_back(uint8_t(r.kind));
  PutString(&out, r.path);
  PutString(&out, r.to);
  PutString(&out, r.undo);
  PutU64(&out, r.size);
  PutU64(&out, r.ranges.size());
  for (const SavedRange& range : r.ranges) {
    PutU64(&out, range.position);
    PutU64(&out, range.length);
    out.push_back(range.zeros ? 1 : 0);
    if (!range.zeros) out.insert(out.end(), range.bytes.begin(), range.bytes.end());
  }
  const size_t payload = out.size() - 8;
  StoreBe32(out.data(), uint32_t(payload));
  StoreBe32(out.data() + 4, Crc32c(out.data() + 8, payload));
  return out;
}

std::vector<UndoRecord> DecodeUndoRecords(const std::vector<uint8_t>& journal) {
  std::vector<UndoRecord> records;
  size_t pos = 0;
  while (journal.size() - pos >= 8) {
    const uint32_t len = LoadBe32(journal.data() + pos);
    const uint32_t crc = LoadBe32(journal.data() + pos + 4);
    if (journal.size() - pos - 8 < len) break;
    const uint8_t* payload = journal.data() + pos + 8;
    if (Crc32c(payload, len) != crc) break;
    PayloadReader in{payload, len};
    UndoRecord r;
    const uint8_t kind = in.U8();
    if (kind < uint8_t(UndoRecord::Kind::kCreate) || kind > uint8_t(UndoRecord::Kind::kReplace)) {
      break;
    }
    r.kind = UndoRecord::Kind(kind);
    r.path = in.String();
    r.to = in.String();
    r.undo = in.String();
    r.size = in.U64();
    const uint64_t n = in.U64();
    for (uint64_t i = 0; i < n && !in.bad; ++i) {
      SavedRange range;
      range.position = in.U64();
      range.length = in.U64();
      range.zeros = in.U8() != 0;
      if (!range.zeros && in.Need(range.length)) {
        range.bytes.assign(in.p, in.p + range.length);
        in.p += range.length;
        in.left -= range.length;
      }
      r.ranges.push_back(std::move(range));
    }
    if (in.bad) break;
    records.push_back(std::move(r));
    pos += 8 + len;
  }
  return records;
}

Status ApplyUndoRecords(FileSystem* fs, const std::vector<UndoRecord>& records) {
  // Rolling back must be idempotent: a rollback interrupted by a crash (with
  // the page cache kept) is applied again from the start. A file the load
  // removed and then created again has two records, and the first pass may
  // already have put the original back from its undo copy; removing "the
  // created file" again would then remove the original. So a created file is
  // removed only while the undo copy of the nearest earlier record that puts
  // a file back at that path still exists (the original is not back yet).
  std::vector<const std::string*> restored_by(records.size(), nullptr);
  {
    std::map<std::string, const std::string*> latest_undo;
    for (size_t i = 0; i < records.size(); ++i) {
      const UndoRecord& r = records[i];
      if (r.kind == UndoRecord::Kind::kCreate) {
        auto found = latest_undo.find(r.path);
        if (found != latest_undo.end()) restored_by[i] = found->second;
      } else if (r.kind == UndoRecord::Kind::kRemove || r.kind == UndoRecord::Kind::kReplace) {
        latest_undo[r.path] = &r.undo;
      } else if (r.kind == UndoRecord::Kind::kRename) {
        latest_undo[r.to] = &r.undo;
      }
    }
  }
  std::set<std::string> dirs;
  for (size_t i = records.size(); i-- > 0;) {
    const UndoRecord& r = records[i];
    dirs.insert(ParentDir(r.path));
    switch (r.kind) {
      case UndoRecord::Kind::kCreate:
        if (restored_by[i] != nullptr && !restored_by[i]->empty() && !Exists(fs, *restored_by[i])) {
          break;  // the original is back: this is not the created file
        }
        if (Exists(fs, r.path)) DARUMA_RETURN_IF_ERROR(fs->Remove(r.path));
        break;
      case UndoRecord::Kind::kCreateDir:
        if (Exists(fs, r.path)) DARUMA_RETURN_IF_ERROR(fs->RemoveAll(r.path));
        break;
      case UndoRecord::Kind::kRename:
        dirs.insert(ParentDir(r.to));
        if (Exists(fs, r.to) && !Exists(fs, r.path)) {
          DARUMA_RETURN_IF_ERROR(fs->Rename(r.to, r.path));
        }
        DARUMA_RETURN_IF_ERROR(PutBack(fs, r.undo, r.to));
        break;
      case UndoRecord::Kind::kRemove:
        DARUMA_RETURN_IF_ERROR(PutBack(fs, r.undo, r.path));
        break;
      case UndoRecord::Kind::kSave:
        if (Exists(fs, r.path)) DARUMA_RETURN_IF_ERROR(RestoreSaved(fs, r));
        break;
      case UndoRecord::Kind::kModTime:
        if (Exists(fs, r.path))
          DARUMA_RETURN_IF_ERROR(fs->SetModifiedTimeMs(r.path, int64_t(r.size)));
        break;
      case UndoRecord::Kind::kCreateAny:
        dirs.insert(r.path);
        DARUMA_RETURN_IF_ERROR(RemoveFilesNotListed(fs, r));
        break;
      case UndoRecord::Kind::kReplace:
        dirs.insert(ParentDir(r.undo));
        if (Exists(fs, r.undo)) {
          if (fs->Exists(r.path)) DARUMA_RETURN_IF_ERROR(fs->Remove(r.path));
          DARUMA_RETURN_IF_ERROR(fs->Rename(r.undo, r.path));
        }
        break;
    }
  }
  // Deepest first, so a restored sub-directory's entry is durable before its
  // parent's.
  for (auto it = dirs.rbegin(); it != dirs.rend(); ++it) {
    if (fs->Exists(*it)) DARUMA_RETURN_IF_ERROR(fs->SyncDir(*it));
  }
  return Status::Ok();
}

// ---- LoadJournal --------------------------------------------------------------

LoadJournal::LoadJournal(FileSystem* base, std::string partition_dir, FileSystem* data)
    : base_(base),
      data_(data != nullptr ? data : base),
      dir_(std::move(partition_dir)),
      undo_dir_(JoinPath(dir_, kLoadUndoDirName)),
      journal_path_(JoinPath(dir_, kLoadJournalFileName)) {}

bool LoadJournal::recording() const {
  return recording_.load(std::memory_order_acquire);
}

bool LoadJournal::changed() const {
  std::lock_guard<std::mutex> lock(mu_);
  return journal_ != nullptr || packed_size_ > 0;
}

uint64_t LoadJournal::packed_size() const {
  std::lock_guard<std::mutex> lock(mu_);
  return packed_size_;
}

Result<std::vector<uint8_t>> LoadJournal::PackedLocked() const {
  std::vector<uint8_t> out(packed_size_);
  uint64_t at = 0;
  for (const auto& [offset, length] : packed_) {
    DARUMA_RETURN_IF_ERROR(pack_->Read(offset, std::span<uint8_t>(out.data() + at, length)));
    at += length;
  }
  return out;
}

bool LoadJournal::HasFilesOfItsOwn() const {
  std::lock_guard<std::mutex> lock(mu_);
  return journal_ != nullptr || undo_dir_made_;
}

void LoadJournal::StopRecording() {
  std::lock_guard<std::mutex> lock(mu_);
  recording_.store(false, std::memory_order_release);
  cells_.clear();
  paths_.clear();
}

bool LoadJournal::Covers(const std::string& path) const {
  std::lock_guard<std::mutex> lock(mu_);
  return CoversLocked(path);
}

bool LoadJournal::CoversLocked(const std::string& path) const {
  if (!recording_ || path.size() <= dir_.size() || path.compare(0, dir_.size(), dir_) != 0 ||
      path[dir_.size()] != '/') {
    return false;
  }
  return !(path == undo_dir_ || path == journal_path_ ||
           (path.size() > undo_dir_.size() && path.compare(0, undo_dir_.size(), undo_dir_) == 0 &&
            path[undo_dir_.size()] == '/'));
}

std::shared_ptr<OpenPathCell> LoadJournal::Track(const std::string& path) {
  auto cell = std::make_shared<OpenPathCell>(OpenPathCell{path});
  std::lock_guard<std::mutex> lock(mu_);
  std::erase_if(cells_, [](const std::weak_ptr<OpenPathCell>& c) { return c.expired(); });
  cells_.push_back(cell);
  return cell;
}

// One file in the partition dir, no directory: a crashed start of many
// partitions paid a mkdir and an rmdir per partition for the undo dir that
// held it, most of the start's time on ext4, while most loads never move a
// file aside.
Status LoadJournal::EnsureJournalLocked() {
  if (journal_) return Status::Ok();
  DARUMA_ASSIGN_OR_RETURN(auto file, base_->Open(journal_path_, OpenMode::kTruncate));
  if (!defer_record_syncs_) DARUMA_RETURN_IF_ERROR(base_->SyncDir(dir_));
  // A journal begun after a packed presave starts with those records: the
  // file then undoes the whole load on its own, also once the pack is gone.
  // They become durable with the record that follows (AppendLocked syncs).
  if (packed_size_ > 0) {
    DARUMA_ASSIGN_OR_RETURN(std::vector<uint8_t> packed, PackedLocked());
    DARUMA_RETURN_IF_ERROR(file->WriteAt(0, packed));
  }
  journal_ = std::move(file);
  journal_size_ = packed_size_;
  return Status::Ok();
}

// With `sync`, the undo dir's name is durable before a file moved into it
// can be. Without (a presaved kReplace): its name, like the moved file's
// removal from the partition dir, becomes durable only with the caller's
// SyncFileSystem, which takes both along.
Status LoadJournal::EnsureUndoDirLocked(bool sync) {
  if (undo_dir_made_) return Status::Ok();
  if (!base_->Exists(undo_dir_)) {
    DARUMA_RETURN_IF_ERROR(base_->CreateDir(undo_dir_));
    if (sync) DARUMA_RETURN_IF_ERROR(base_->SyncDir(dir_));
  }
  undo_dir_made_ = true;
  return Status::Ok();
}

// Removing the journal is the commit point: a crash after it finds no
// journal, and the next load finishes the commit by removing the moved-aside
// originals left in the undo dir (RollBackUndoDir). The originals must not
// go before the journal does, or a rollback would restore the rest without
// them: with `sync`, the journal's removal is made durable first; without,
// the caller relies on the file system keeping the order of metadata
// changes (ext4's journal does), as a batched commit, which syncs the whole
// file system right after, does.
Status LoadJournal::RemoveUndoLogLocked(bool sync) {
  journal_.reset();
  DARUMA_RETURN_IF_ERROR(base_->Remove(journal_path_));
  if (!undo_dir_made_) return Status::Ok();
  if (sync) DARUMA_RETURN_IF_ERROR(base_->SyncDir(dir_));
  undo_dir_made_ = false;
  return base_->RemoveAll(undo_dir_);
}

Status LoadJournal::AppendLocked(const UndoRecord& r) {
  const std::vector<uint8_t> bytes = EncodeUndoRecord(r);
  if (packing_) {
    if (bytes.size() < kPackWriteBytes) {
      to_pack_.insert(to_pack_.end(), bytes.begin(), bytes.end());
      return to_pack_.size() >= kPackWriteBytes ? FlushPackLocked() : Status::Ok();
    }
    // A whole index, say: written from where it was encoded, not copied.
    DARUMA_RETURN_IF_ERROR(FlushPackLocked());
    return WritePackLocked(bytes);
  }
  DARUMA_RETURN_IF_ERROR(EnsureJournalLocked());
  DARUMA_RETURN_IF_ERROR(journal_->WriteAt(journal_size_, bytes));
  journal_size_ += bytes.size();
  // The record must be durable before the mutation it undoes can be (under
  // Presave, the caller's SyncFileSystem does it before the load starts).
  if (defer_record_syncs_) return Status::Ok();
  return journal_->Sync();
}

std::string LoadJournal::NextUndoPathLocked() {
  return JoinPath(undo_dir_, std::to_string(next_undo_++));
}

Result<LoadJournal::PathState*> LoadJournal::StateLocked(const std::string& path, File* file) {
  auto it = paths_.find(path);
  if (it != paths_.end()) return &it->second;
  PathState state;
  if (file != nullptr) {
    DARUMA_ASSIGN_OR_RETURN(state.original_size, file->Size());
  } else {
    DARUMA_ASSIGN_OR_RETURN(state.original_size, base_->FileSize(path));
  }
  return &paths_.emplace(path, std::move(state)).first->second;
}

void LoadJournal::MoveNameLocked(const std::string& from, const std::string& to) {
  // A kReplace names the original under `from`: once that file moves (or
  // `to` is replaced), the record no longer describes a removal to come.
  replaceable_.erase(from);
  replaceable_.erase(to);
  // The file's content keeps its sync state under its new name.
  for (auto* m : {&changed_at_, &synced_at_}) {
    auto moved = m->find(from);
    m->erase(to);
    if (moved != m->end()) {
      (*m)[to] = moved->second;
      m->erase(moved);
    }
  }
  auto it = paths_.find(from);
  paths_.erase(to);
  if (it != paths_.end()) {
    paths_.emplace(to, std::move(it->second));
    paths_.erase(from);
  }
  for (auto& weak : cells_) {
    if (auto cell = weak.lock()) {
      if (cell->path == to) cell->path.clear();  // the replaced file's name is gone
      if (cell->path == from) cell->path = to;
    }
  }
}

Status LoadJournal::SaveLocked(const std::string& path, File* file, uint64_t from, uint64_t to) {
  DARUMA_ASSIGN_OR_RETURN(PathState * state, StateLocked(path, file));
  if (state->fresh) return Status::Ok();
  to = std::min(to, state->original_size);
  // The parts of [from, to) not saved yet (`saved` is sorted and disjoint).
  std::vector<std::pair<uint64_t, uint64_t>> missing;
  uint64_t cursor = from;
  auto it = state->saved.upper_bound(from);
  if (it != state->saved.begin()) cursor = std::max(cursor, std::prev(it)->second);
  while (cursor < to) {
    if (it == state->saved.end() || it->first >= to) {
      missing.emplace_back(cursor, to);
      break;
    }
    if (it->first > cursor) missing.emplace_back(cursor, it->first);
    cursor = std::max(cursor, it->second);
    ++it;
  }
  if (missing.empty() && state->size_recorded) return Status::Ok();

  UndoRecord r;
  r.kind = UndoRecord::Kind::kSave;
  r.path = path;
  r.size = state->original_size;
  std::vector<uint8_t> chunk;
  auto add_zeros = [&r](uint64_t pos, uint64_t n) {
    if (!r.ranges.empty() && r.ranges.back().zeros &&
        r.ranges.back().position + r.ranges.back().length == pos) {
      r.ranges.back().length += n;
    } else {
      r.ranges.push_back({pos, n, true, {}});
    }
  };
  for (const auto& [start, end] : missing) {
    for (uint64_t pos = start; pos < end;) {
      // A hole (a preallocated index never written: 10 MiB of it per
      // crashed active segment) reads as zeros; SEEK_DATA says so without
      // reading it.
      DARUMA_ASSIGN_OR_RETURN(uint64_t data, file->DataFrom(pos));
      if (data > pos) {
        const uint64_t hole_end = std::min(data, end);
        add_zeros(pos, hole_end - pos);
        pos = hole_end;
        continue;
      }
      const uint64_t n = std::min(kSaveChunk, end - pos);
      chunk.resize(n);
      DARUMA_ASSIGN_OR_RETURN(size_t got, file->ReadAt(pos, chunk));
      if (got != n) {
        return Status::IoError(
            fmt::format("{}: short read at byte {} while saving it for undo", path, pos + got));
      }
      // Trailing zeros (the entries of an index end, its preallocated rest
      // follows) are saved as a run, not as bytes.
      const uint64_t data_len = WithoutTrailingZeros(chunk);
      if (data_len > 0) {
        r.ranges.push_back(
            {pos, data_len, false,
             std::vector<uint8_t>(chunk.begin(), chunk.begin() + int64_t(data_len))});
      }
      if (data_len < n) add_zeros(pos + data_len, n - data_len);
      pos += n;
    }
  }
  DARUMA_RETURN_IF_ERROR(AppendLocked(r));
  state->size_recorded = true;
  for (const auto& [start, end] : missing) state->saved[start] = end;
  // Merge neighbours so lookups stay short.
  for (auto it = state->saved.begin(); it != state->saved.end();) {
    auto next = std::next(it);
    if (next != state->saved.end() && next->first <= it->second) {
      it->second = std::max(it->second, next->second);
      state->saved.erase(next);
    } else {
      it = next;
    }
  }
  return Status::Ok();
}

uint64_t LoadJournal::ChangeCounter() const {
  std::lock_guard<std::mutex> lock(mu_);
  return changes_;
}

void LoadJournal::NoteSynced(const std::string& path, uint64_t counter) {
  std::lock_guard<std::mutex> lock(mu_);
  uint64_t& at = synced_at_[path];
  at = std::max(at, counter);
}

void LoadJournal::NoteSynced(const OpenPathCell& cell, uint64_t counter) {
  std::lock_guard<std::mutex> lock(mu_);
  if (cell.path.empty()) return;
  uint64_t& at = synced_at_[cell.path];
  at = std::max(at, counter);
}

void LoadJournal::NoteChangeLocked(const std::string& path) {
  changed_at_[path] = ++changes_;
}

// Called on every write of a rebuilt index: no allocation.
bool LoadJournal::DerivedLocked(const std::string& path) const {
  if (path.size() <= dir_.size() + 1 || path.compare(0, dir_.size(), dir_) != 0 ||
      path[dir_.size()] != '/') {
    return false;
  }
  const std::string_view name = std::string_view(path).substr(dir_.size() + 1);
  if (name.find('/') != std::string_view::npos) return false;
  return IsIndexFileName(name) || HasSuffix(name, kProducerSnapshotFileSuffix);
}

void LoadJournal::NoteFileChangeLocked(const std::string& path) {
  if (!only_derived_) return;  // nothing more to track
  if (DerivedLocked(path)) {
    derived_changed_.insert(path);
  } else {
    only_derived_ = false;
  }
}

bool LoadJournal::ChangedOnlyDerivedFiles(std::vector<std::string>* files) const {
  std::lock_guard<std::mutex> lock(mu_);
  if (!only_derived_) return false;
  files->assign(derived_changed_.begin(), derived_changed_.end());
  return true;
}

Status LoadJournal::BeforeCreate(const std::string& path) {
  std::lock_guard<std::mutex> lock(mu_);
  if (!CoversLocked(path)) return Status::Ok();
  NoteFileChangeLocked(path);
  NoteChangeLocked(path);
  NoteChangeLocked(ParentDir(path));
  // A name the presaved listing lacks is removed by its kCreateAny record.
  // A listed name (a file this load removed and now recreates) still needs
  // its own record: its removal's inverse only puts the original back once
  // the new file is gone.
  if (UnlistedLocked(path) || replaced_.count(path) > 0) {
    paths_[path] = PathState{.fresh = true};
    return Status::Ok();
  }
  DARUMA_RETURN_IF_ERROR(AppendLocked({UndoRecord::Kind::kCreate, path, "", "", 0, {}}));
  paths_[path] = PathState{.fresh = true};
  return Status::Ok();
}

bool LoadJournal::UnlistedLocked(const std::string& path) const {
  return listed_ && ParentDir(path) == dir_ && listing_.count(BaseName(path)) == 0;
}

bool LoadJournal::CreatesUnlisted(const std::string& path) const {
  std::lock_guard<std::mutex> lock(mu_);
  return CoversLocked(path) && UnlistedLocked(path);
}

void LoadJournal::AfterUnlistedCreate(const std::string& path) {
  std::lock_guard<std::mutex> lock(mu_);
  NoteFileChangeLocked(path);
  NoteChangeLocked(path);
  NoteChangeLocked(ParentDir(path));
  paths_[path] = PathState{.fresh = true};
}

Status LoadJournal::BeforeCreateDir(const std::string& path) {
  std::lock_guard<std::mutex> lock(mu_);
  if (!CoversLocked(path)) return Status::Ok();
  only_derived_ = false;
  NoteChangeLocked(path);
  NoteChangeLocked(ParentDir(path));
  return AppendLocked({UndoRecord::Kind::kCreateDir, path, "", "", 0, {}});
}

Status LoadJournal::BeforeOverwrite(const OpenPathCell& cell, File* file, uint64_t position,
                                    uint64_t length) {
  std::lock_guard<std::mutex> lock(mu_);
  if (!CoversLocked(cell.path)) return Status::Ok();
  NoteFileChangeLocked(cell.path);
  NoteChangeLocked(cell.path);
  return SaveLocked(cell.path, file, position, position + length);
}

Status LoadJournal::BeforeTruncate(const OpenPathCell& cell, File* file, uint64_t new_size) {
  std::lock_guard<std::mutex> lock(mu_);
  if (!CoversLocked(cell.path)) return Status::Ok();
  NoteFileChangeLocked(cell.path);
  NoteChangeLocked(cell.path);
  return SaveLocked(cell.path, file, new_size, UINT64_MAX);
}

Status LoadJournal::BeforeSetModTime(const std::string& path) {
  std::lock_guard<std::mutex> lock(mu_);
  if (!CoversLocked(path)) return Status::Ok();
  if (!DerivedLocked(path)) only_derived_ = false;
  auto it = paths_.find(path);
  if (it != paths_.end() && it->second.fresh) return Status::Ok();
  DARUMA_ASSIGN_OR_RETURN(int64_t ms, base_->ModifiedTimeMs(path));
  return AppendLocked({UndoRecord::Kind::kModTime, path, "", "", uint64_t(ms), {}});
}

Status LoadJournal::Remove(const std::string& path) {
  std::lock_guard<std::mutex> lock(mu_);
  auto it = paths_.find(path);
  const bool fresh = it != paths_.end() && it->second.fresh;
  if (CoversLocked(path)) {
    // A removed derived file that a power loss brings back is one the
    // segments still agree with: it needs no sync.
    if (!DerivedLocked(path)) only_derived_ = false;
    derived_changed_.erase(path);
    NoteChangeLocked(ParentDir(path));
  }
  if (!CoversLocked(path) || fresh || !base_->Exists(path)) {
    if (it != paths_.end()) paths_.erase(it);
    return base_->Remove(path);
  }
  auto replace = replaceable_.find(path);
  if (replace != replaceable_.end()) {
    // Its kReplace record is durable already. The rename needs no sync of
    // the undo dir: the partition dir's side of it becomes durable only with
    // the caller's SyncFileSystem, which takes the undo dir's side along; if
    // a sync of the undo dir alone makes it durable first, both names hold
    // the original, and the record's inverse keeps the one in the undo dir.
    const std::string undo = replace->second;
    replaceable_.erase(replace);
    DARUMA_RETURN_IF_ERROR(EnsureUndoDirLocked(/*sync=*/false));
    DARUMA_RETURN_IF_ERROR(base_->Rename(path, undo));
    MoveNameLocked(path, undo);
    paths_.erase(undo);
    replaced_.insert(path);
    return Status::Ok();
  }
  // The file goes into the undo dir instead of away.
  const std::string undo = NextUndoPathLocked();
  DARUMA_RETURN_IF_ERROR(AppendLocked({UndoRecord::Kind::kRemove, path, "", undo, 0, {}}));
  DARUMA_RETURN_IF_ERROR(EnsureUndoDirLocked(/*sync=*/true));
  DARUMA_RETURN_IF_ERROR(base_->Rename(path, undo));
  // Durable in the undo dir before the partition dir's removal can be.
  DARUMA_RETURN_IF_ERROR(base_->SyncDir(undo_dir_));
  MoveNameLocked(path, undo);
  paths_.erase(undo);
  return Status::Ok();
}

Status LoadJournal::Rename(const std::string& from, const std::string& to) {
  std::lock_guard<std::mutex> lock(mu_);
  if (!CoversLocked(from) && !CoversLocked(to)) return base_->Rename(from, to);
  if (DerivedLocked(from) && DerivedLocked(to)) {
    derived_changed_.erase(from);
    derived_changed_.insert(to);
  } else {
    only_derived_ = false;
  }
  NoteChangeLocked(ParentDir(from));
  NoteChangeLocked(ParentDir(to));
  auto to_state = paths_.find(to);
  const bool to_fresh = to_state != paths_.end() && to_state->second.fresh;
  std::string undo;
  if (CoversLocked(to) && !to_fresh && base_->Exists(to)) undo = NextUndoPathLocked();
  DARUMA_RETURN_IF_ERROR(AppendLocked({UndoRecord::Kind::kRename, from, to, undo, 0, {}}));
  if (!undo.empty()) {
    DARUMA_RETURN_IF_ERROR(EnsureUndoDirLocked(/*sync=*/true));
    DARUMA_RETURN_IF_ERROR(base_->Rename(to, undo));
    DARUMA_RETURN_IF_ERROR(base_->SyncDir(undo_dir_));
    MoveNameLocked(to, undo);
    paths_.erase(undo);
  }
  DARUMA_RETURN_IF_ERROR(base_->Rename(from, to));
  MoveNameLocked(from, to);
  return Status::Ok();
}

Status LoadJournal::Presave(const std::vector<DirEntry>& listing,
                            const std::vector<std::string>& paths,
                            const std::vector<std::string>& removable,
                            std::shared_ptr<LoadUndoPackWriter> pack) {
  std::lock_guard<std::mutex> lock(mu_);
  if (!recording_) return Status::Ok();
  defer_record_syncs_ = true;
  packing_ = pack != nullptr && journal_ == nullptr;
  if (packing_) pack_ = std::move(pack);
  Status st = [&]() -> Status {
    UndoRecord record{UndoRecord::Kind::kCreateAny, dir_, "", "", 0, {}};
    std::set<std::string> names;
    for (const DirEntry& e : listing) {
      if (!e.is_regular) continue;
      names.insert(e.name);
      record.to += e.name;
      record.to.push_back('\0');
    }
    DARUMA_RETURN_IF_ERROR(AppendLocked(record));
    listing_ = std::move(names);
    listed_ = true;
    for (const std::string& path : paths) {
      if (!CoversLocked(path) || listing_.count(BaseName(path)) == 0) continue;
      // The size comes with the open (one stat, where the open is deferred)
      // rather than from a stat of its own.
      uint64_t size = 0;
      DARUMA_ASSIGN_OR_RETURN(auto file, base_->OpenWithSize(path, OpenMode::kRead, &size));
      if (paths_.count(path) == 0) paths_[path].original_size = size;
      DARUMA_RETURN_IF_ERROR(SaveLocked(path, file.get(), 0, UINT64_MAX));
    }
    for (const std::string& path : removable) {
      if (!CoversLocked(path) || listing_.count(BaseName(path)) == 0) continue;
      const std::string undo = NextUndoPathLocked();
      DARUMA_RETURN_IF_ERROR(AppendLocked({UndoRecord::Kind::kReplace, path, "", undo, 0, {}}));
      replaceable_[path] = undo;
    }
    return Status::Ok();
  }();
  defer_record_syncs_ = false;
  if (packing_ && st.ok()) st = FlushPackLocked();
  packing_ = false;
  to_pack_ = {};
  return st;
}

// A crashed partition's records (its indexes' few entries, the listing) are
// a few hundred bytes: one write for them all. A partition recovered from
// its first segment saves every index whole, megabytes: written as they
// come, so that memory holds no more than kPackWriteBytes and one record.
Status LoadJournal::FlushPackLocked() {
  if (to_pack_.empty()) return Status::Ok();
  DARUMA_RETURN_IF_ERROR(WritePackLocked(to_pack_));
  to_pack_.clear();
  return Status::Ok();
}

Status LoadJournal::WritePackLocked(std::span<const uint8_t> records) {
  DARUMA_ASSIGN_OR_RETURN(uint64_t at, pack_->Append(records));
  packed_.emplace_back(at, records.size());
  packed_size_ += records.size();
  return Status::Ok();
}

void LoadJournal::Seal() {
  std::lock_guard<std::mutex> lock(mu_);
  recording_.store(false, std::memory_order_release);
  cells_.clear();
  paths_.clear();
  changed_at_.clear();
  synced_at_.clear();
}

Status LoadJournal::FinishSealed() {
  std::lock_guard<std::mutex> lock(mu_);
  if (!journal_) {
    // Packed records only: the pack's removal was the commit point (the
    // caller made it durable first); what this load moved aside can go.
    if (!undo_dir_made_) return Status::Ok();
    undo_dir_made_ = false;
    return base_->RemoveAll(undo_dir_);
  }
  return RemoveUndoLogLocked(/*sync=*/false);
}

Status LoadJournal::Commit() {
  std::lock_guard<std::mutex> lock(mu_);
  recording_.store(false, std::memory_order_release);
  cells_.clear();
  paths_.clear();
  if (!journal_) return Status::Ok();
  // Every file and name the load changed is made durable before the undo log
  // goes: after that point a power loss must find the whole new state. What
  // the load synced itself after its last change is not synced again.
  std::vector<std::string> dirs;
  for (const auto& [path, changed] : changed_at_) {
    auto synced = synced_at_.find(path);
    if (synced != synced_at_.end() && synced->second >= changed) continue;
    if (!base_->Exists(path)) continue;  // removed or renamed away later
    if (base_->ListDir(path).ok()) {
      dirs.push_back(path);  // names in a directory: synced after the files
      continue;
    }
    DARUMA_ASSIGN_OR_RETURN(auto file, base_->Open(path, OpenMode::kRead));
    DARUMA_RETURN_IF_ERROR(file->Sync());
  }
  // Deepest first, so a sub-directory's entry is durable before its parent's.
  std::sort(dirs.begin(), dirs.end(), std::greater<>());
  for (const std::string& dir : dirs) DARUMA_RETURN_IF_ERROR(base_->SyncDir(dir));
  changed_at_.clear();
  synced_at_.clear();
  DARUMA_RETURN_IF_ERROR(RemoveUndoLogLocked(/*sync=*/true));
  return base_->SyncDir(dir_);
}

Status LoadJournal::Rollback() {
  std::lock_guard<std::mutex> lock(mu_);
  recording_.store(false, std::memory_order_release);
  cells_.clear();
  paths_.clear();
  if (!journal_ && packed_size_ == 0) return Status::Ok();
  journal_.reset();
  std::vector<uint8_t> packed;
  if (packed_size_ > 0) {
    DARUMA_ASSIGN_OR_RETURN(packed, PackedLocked());
  }
  // A journal file holds the packed records too; without one, they are read
  // back from the pack. Either way the pack keeps them until the dir's loads
  // finish: applying them again there changes nothing.
  return RollBackUndoDir(base_, dir_, DecodeUndoRecords(packed)).status();
}

Result<bool> RollBackUndoDir(FileSystem* fs, const std::string& partition_dir,
                             const std::vector<UndoRecord>& packed) {
  const std::string undo_dir = JoinPath(partition_dir, kLoadUndoDirName);
  const std::string journal = JoinPath(partition_dir, kLoadJournalFileName);
  const std::string old_journal = JoinPath(undo_dir, kOldJournalFileName);
  const bool has_journal = fs->Exists(journal);
  if (!has_journal && packed.empty() && !fs->Exists(undo_dir)) return false;
  const bool has_old = !has_journal && fs->Exists(old_journal);
  if (has_journal || has_old || !packed.empty()) {
    const std::string& path = has_journal ? journal : old_journal;
    // The packed records are the oldest: the journal file, if the load began
    // one, was written after them (and may repeat them, which is harmless:
    // each inverse can be applied again).
    std::vector<UndoRecord> records = packed;
    if (has_journal || has_old) {
      DARUMA_ASSIGN_OR_RETURN(std::vector<uint8_t> bytes, fs->ReadFile(path));
      std::vector<UndoRecord> own = DecodeUndoRecords(bytes);
      records.insert(records.end(), std::make_move_iterator(own.begin()),
                     std::make_move_iterator(own.end()));
    }
    DARUMA_RETURN_IF_ERROR(
        ApplyUndoRecords(fs, records).WithContext(has_journal || has_old ? path : partition_dir));
    // Every moved file is back in place, so the undo dir is empty; if it is
    // not (a file the journal does not explain), it stays, and so do its
    // bytes.
    if (fs->Exists(undo_dir)) {
      DARUMA_ASSIGN_OR_RETURN(std::vector<DirEntry> left, fs->ListDir(undo_dir));
      std::erase_if(left, [](const DirEntry& e) { return e.name == kOldJournalFileName; });
      if (!left.empty()) {
        return Status::Corruption(
            fmt::format("{}: {} file(s) the journal does not restore were kept there (first: {})",
                        undo_dir, left.size(), left.front().name));
      }
    }
    if (has_journal || has_old) DARUMA_RETURN_IF_ERROR(fs->Remove(path));
    if (fs->Exists(undo_dir)) DARUMA_RETURN_IF_ERROR(fs->RemoveAll(undo_dir));
    DARUMA_RETURN_IF_ERROR(fs->SyncDir(partition_dir));
    return true;
  }
  // An undo dir without a journal: a load committed (its journal removed)
  // and stopped before it removed the originals it had moved aside, or one
  // stopped before its first record. Either way the dir's state is final:
  // finish the removal.
  DARUMA_RETURN_IF_ERROR(fs->RemoveAll(undo_dir));
  DARUMA_RETURN_IF_ERROR(fs->SyncDir(partition_dir));
  return false;
}

}  // namespace daruma
