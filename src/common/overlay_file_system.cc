#include "common/overlay_file_system.h"

#include <algorithm>
#include <chrono>
#include <cstring>
#include <functional>
#include <optional>

namespace daruma {

namespace {

int64_t WallClockMs() {
  return std::chrono::duration_cast<std::chrono::milliseconds>(
             std::chrono::system_clock::now().time_since_epoch())
      .count();
}

std::string StripTrailingSlash(std::string path) {
  while (path.size() > 1 && path.back() == '/') path.pop_back();
  return path;
}

bool IsUnder(const std::string& path, const std::string& dir) {
  return path == dir || (path.size() > dir.size() && path.compare(0, dir.size(), dir) == 0 &&
                         path[dir.size()] == '/');
}

}  // namespace

// One file as the overlay sees it. Invariants: extents never overlap or touch
// (adjacent writes are merged); every extent lies below `size`; base bytes are
// visible only below `base_limit` (<= the base file's size).
struct OverlayFileSystem::Node {
  std::mutex* mu = nullptr;
  FileSystem* base_fs = nullptr;
  bool drop_cache = false;
  std::string path;       // current path in the overlay
  std::string base_path;  // the base file backing it; "" for a new file
  uint64_t base_limit = 0;
  uint64_t size = 0;
  std::map<uint64_t, std::vector<uint8_t>> extents;  // start -> bytes
  bool dirty = false;                                // written, truncated, created or renamed
  std::optional<int64_t> mtime_ms;
  int64_t last_mutation_ms = 0;
  std::unique_ptr<File> base_file;  // opened kRead on first base read

  Result<size_t> Read(uint64_t pos, std::span<uint8_t> out) {
    if (pos >= size) return size_t{0};
    const size_t n = size_t(std::min<uint64_t>(out.size(), size - pos));
    size_t got = 0;
    if (pos < base_limit) {
      const size_t from_base = size_t(std::min<uint64_t>(n, base_limit - pos));
      if (base_file == nullptr) {
        DARUMA_ASSIGN_OR_RETURN(base_file, base_fs->Open(base_path, OpenMode::kRead));
      }
      DARUMA_ASSIGN_OR_RETURN(got,
                              base_file->ReadAt(pos, std::span<uint8_t>(out.data(), from_base)));
      if (drop_cache && got > 0) base_file->DropCache(pos, got);
    }
    // Bytes the base did not supply (past base_limit, or a short base read)
    // read as zeros; only they are cleared, not the whole buffer first.
    if (n > got) std::memset(out.data() + got, 0, n - got);  // out may be empty (null data)
    const uint64_t end = pos + n;
    auto it = extents.upper_bound(pos);
    if (it != extents.begin()) --it;
    for (; it != extents.end() && it->first < end; ++it) {
      const uint64_t e_start = it->first;
      const uint64_t e_end = e_start + it->second.size();
      const uint64_t lo = std::max(pos, e_start);
      const uint64_t hi = std::min(end, e_end);
      if (lo >= hi) continue;
      std::memcpy(out.data() + (lo - pos), it->second.data() + (lo - e_start), hi - lo);
    }
    return n;
  }

  void Write(uint64_t pos, std::span<const uint8_t> data) {
    if (data.empty()) return;
    const uint64_t end = pos + data.size();
    auto first = extents.upper_bound(pos);
    if (first != extents.begin()) {
      auto prev = std::prev(first);
      if (prev->first + prev->second.size() >= pos) first = prev;
    }
    auto last = first;
    uint64_t new_start = pos, new_end = end;
    while (last != extents.end() && last->first <= end) {
      new_start = std::min(new_start, last->first);
      new_end = std::max(new_end, last->first + last->second.size());
      ++last;
    }
    if (first != last && std::next(first) == last && first->first <= pos) {
      // Fast path (appends, in-place rewrites): grow the one extent in place.
      std::vector<uint8_t>& bytes = first->second;
      if (bytes.size() < new_end - first->first) bytes.resize(new_end - first->first);
      std::memcpy(bytes.data() + (pos - first->first), data.data(), data.size());
    } else {
      std::vector<uint8_t> merged(new_end - new_start);
      for (auto it = first; it != last; ++it) {
        std::memcpy(merged.data() + (it->first - new_start), it->second.data(), it->second.size());
      }
      std::memcpy(merged.data() + (pos - new_start), data.data(), data.size());
      extents.erase(first, last);
      extents.emplace(new_start, std::move(merged));
    }
    size = std::max(size, end);
    Touch();
  }

  void Truncate(uint64_t new_size) {
    base_limit = std::min(base_limit, new_size);
    while (!extents.empty()) {
      auto last = std::prev(extents.end());
      if (last->first >= new_size) {
        extents.erase(last);
        continue;
      }
      if (last->first + last->second.size() > new_size) {
        last->second.resize(new_size - last->first);
      }
      break;
    }
    size = new_size;
    Touch();
  }

  void Touch() {
    dirty = true;
    last_mutation_ms = WallClockMs();
  }
};

namespace {

class OverlayFile final : public File {
 public:
  OverlayFile(std::shared_ptr<OverlayFileSystem::Node> node, bool writable,
              std::function<void(PlannedChange)> record)
      : node_(std::move(node)), writable_(writable), record_(std::move(record)) {
    path_ = node_->path;
  }

  Result<size_t> ReadAt(uint64_t pos, std::span<uint8_t> out) const override {
    std::lock_guard<std::mutex> lock(*node_->mu);
    return node_->Read(pos, out);
  }

  Status WriteAt(uint64_t pos, std::span<const uint8_t> data) override {
    std::lock_guard<std::mutex> lock(*node_->mu);
    if (!writable_) return Status::IoError("write " + path_ + ": file opened read-only");
    node_->Write(pos, data);
    PlannedChange c;
    c.kind = PlannedChange::Kind::kWrite;
    c.path = node_->path;
    c.position = pos;
    c.length = data.size();
    record_(std::move(c));
    return Status::Ok();
  }

  Status Sync() override { return Status::Ok(); }

  Status Truncate(uint64_t size) override {
    std::lock_guard<std::mutex> lock(*node_->mu);
    if (!writable_) return Status::IoError("truncate " + path_ + ": file opened read-only");
    node_->Truncate(size);
    PlannedChange c;
    c.kind = PlannedChange::Kind::kTruncate;
    c.path = node_->path;
    c.size = size;
    record_(std::move(c));
    return Status::Ok();
  }

  Result<uint64_t> Size() const override {
    std::lock_guard<std::mutex> lock(*node_->mu);
    return node_->size;
  }

  void DropCache(uint64_t pos, uint64_t len) override {
    std::lock_guard<std::mutex> lock(*node_->mu);
    if (node_->base_file != nullptr) node_->base_file->DropCache(pos, len);
  }

  const std::string& path() const override { return path_; }

 private:
  std::shared_ptr<OverlayFileSystem::Node> node_;
  bool writable_;
  std::function<void(PlannedChange)> record_;  // called with the overlay's mutex held
  std::string path_;
};

}  // namespace

const char* PlannedChangeKindName(PlannedChange::Kind kind) {
  switch (kind) {
    case PlannedChange::Kind::kCreate:
      return "create";
    case PlannedChange::Kind::kWrite:
      return "write";
    case PlannedChange::Kind::kTruncate:
      return "truncate";
    case PlannedChange::Kind::kRename:
      return "rename";
    case PlannedChange::Kind::kRemove:
      return "remove";
    case PlannedChange::Kind::kRemoveAll:
      return "remove-tree";
    case PlannedChange::Kind::kCreateDir:
      return "mkdir";
    case PlannedChange::Kind::kSetModTime:
      return "set-mtime";
  }
  return "?";
}

std::string PlannedChange::ToString() const {
  std::string s = std::string(PlannedChangeKindName(kind)) + " " + path;
  switch (kind) {
    case Kind::kWrite:
      s += " bytes [" + std::to_string(position) + ", " + std::to_string(position + length) + ")";
      break;
    case Kind::kTruncate:
      s += " to " + std::to_string(size) + " bytes";
      break;
    case Kind::kRename:
      s += " -> " + to;
      break;
    default:
      break;
  }
  return s;
}

OverlayFileSystem::OverlayFileSystem(FileSystem* base, Options options)
    : base_(base), options_(options) {}

OverlayFileSystem::~OverlayFileSystem() = default;

void OverlayFileSystem::RecordLocked(PlannedChange change) {
  if (change.kind == PlannedChange::Kind::kWrite && !changes_.empty()) {
    // Merge with the latest write to the same path if nothing else touched
    // that path since and the ranges are contiguous (index rebuilds alternate
    // between .index and .timeindex, so look back a few steps).
    for (size_t i = changes_.size(), steps = 0; i > 0 && steps < 8; --i, ++steps) {
      PlannedChange& prev = changes_[i - 1];
      if (prev.path != change.path && prev.to != change.path) continue;
      if (prev.kind == PlannedChange::Kind::kWrite &&
          prev.position + prev.length == change.position) {
        prev.length += change.length;
        return;
      }
      break;
    }
  }
  changes_.push_back(std::move(change));
}

bool OverlayFileSystem::UnderRemovedTreeLocked(const std::string& path) const {
  for (const std::string& dir : removed_trees_) {
    if (IsUnder(path, dir) && created_dirs_.count(path) == 0) return true;
  }
  return false;
}

bool OverlayFileSystem::DirExistsLocked(const std::string& path) {
  if (created_dirs_.count(path) != 0) return true;
  if (UnderRemovedTreeLocked(path)) return false;
  if (files_.count(path) != 0) return false;  // a file (or whiteout) by that name
  auto entries = base_->ListDir(path);
  return entries.ok();
}

std::shared_ptr<OverlayFileSystem::Node> OverlayFileSystem::FindLocked(const std::string& path) {
  auto it = files_.find(path);
  if (it != files_.end()) return it->second;
  if (UnderRemovedTreeLocked(path)) return nullptr;
  auto size = base_->FileSize(path);
  if (!size.ok() || base_->ListDir(path).ok()) return nullptr;  // missing, or a directory
  auto node = std::make_shared<Node>();
  node->mu = &mu_;
  node->base_fs = base_;
  node->drop_cache = options_.drop_cache_after_read;
  node->path = path;
  node->base_path = path;
  node->base_limit = *size;
  node->size = *size;
  files_[path] = node;
  return node;
}

Result<std::unique_ptr<File>> OverlayFileSystem::Open(const std::string& path, OpenMode mode) {
  std::lock_guard<std::mutex> lock(mu_);
  std::shared_ptr<Node> node = FindLocked(path);
  const bool writable = mode != OpenMode::kRead;
  auto make = [&](std::shared_ptr<Node> n) -> Result<std::unique_ptr<File>> {
    return std::unique_ptr<File>(
        new OverlayFile(std::move(n), writable, [this](PlannedChange c) { RecordLocked(c); }));
  };
  if (mode == OpenMode::kRead || mode == OpenMode::kReadWrite) {
    if (node == nullptr) return Status::NotFound("open " + path + ": no such file");
    return make(node);
  }
  if (node != nullptr) {
    if (mode == OpenMode::kCreateExclusive) {
      return Status::AlreadyExists("open " + path + ": file exists");
    }
    if (mode == OpenMode::kTruncate) {
      node->Truncate(0);
      RecordLocked({PlannedChange::Kind::kTruncate, path, "", 0, 0, 0});
    }
    return make(node);
  }
  if (!DirExistsLocked(ParentDir(path))) {
    return Status::NotFound("open " + path + ": no such directory " + ParentDir(path));
  }
  node = std::make_shared<Node>();
  node->mu = &mu_;
  node->base_fs = base_;
  node->drop_cache = options_.drop_cache_after_read;
  node->path = path;
  node->Touch();
  files_[path] = node;
  RecordLocked({PlannedChange::Kind::kCreate, path, "", 0, 0, 0});
  return make(node);
}

Status OverlayFileSystem::Rename(const std::string& from, const std::string& to) {
  std::lock_guard<std::mutex> lock(mu_);
  std::shared_ptr<Node> node = FindLocked(from);
  if (node == nullptr) {
    if (DirExistsLocked(from)) {
      return Status::Unsupported("rename " + from + ": the overlay renames files only");
    }
    return Status::IoError("rename " + from + " -> " + to + ": No such file or directory");
  }
  files_[to] = node;
  files_[from] = nullptr;
  node->path = to;
  node->Touch();
  RecordLocked({PlannedChange::Kind::kRename, from, to, 0, 0, 0});
  return Status::Ok();
}

Status OverlayFileSystem::Remove(const std::string& path) {
  std::lock_guard<std::mutex> lock(mu_);
  if (FindLocked(path) == nullptr) {
    return Status::NotFound("remove " + path + ": no such file");
  }
  files_[path] = nullptr;
  RecordLocked({PlannedChange::Kind::kRemove, path, "", 0, 0, 0});
  return Status::Ok();
}

Status OverlayFileSystem::RemoveAll(const std::string& raw) {
  std::lock_guard<std::mutex> lock(mu_);
  const std::string path = StripTrailingSlash(raw);
  for (auto& [p, node] : files_) {
    if (IsUnder(p, path)) node = nullptr;
  }
  for (auto it = created_dirs_.begin(); it != created_dirs_.end();) {
    it = IsUnder(*it, path) ? created_dirs_.erase(it) : std::next(it);
  }
  removed_trees_.insert(path);
  RecordLocked({PlannedChange::Kind::kRemoveAll, path, "", 0, 0, 0});
  return Status::Ok();
}

Status OverlayFileSystem::CreateDir(const std::string& raw) {
  std::lock_guard<std::mutex> lock(mu_);
  const std::string path = StripTrailingSlash(raw);
  if (DirExistsLocked(path)) return Status::Ok();
  if (!DirExistsLocked(ParentDir(path))) {
    return Status::IoError("mkdir " + path + ": No such file or directory");
  }
  created_dirs_.insert(path);
  RecordLocked({PlannedChange::Kind::kCreateDir, path, "", 0, 0, 0});
  return Status::Ok();
}

Status OverlayFileSystem::SyncDir(const std::string& path) {
  std::lock_guard<std::mutex> lock(mu_);
  if (!DirExistsLocked(StripTrailingSlash(path))) {
    return Status::IoError("open dir " + path + ": No such file or directory");
  }
  return Status::Ok();
}

Result<std::vector<DirEntry>> OverlayFileSystem::ListDir(const std::string& raw) {
  std::lock_guard<std::mutex> lock(mu_);
  const std::string path = StripTrailingSlash(raw);
  if (!DirExistsLocked(path)) return Status::NotFound("list " + path + ": no such directory");
  std::map<std::string, DirEntry> out;
  if (!UnderRemovedTreeLocked(path) || created_dirs_.count(path) == 0) {
    auto base = base_->ListDir(path);
    if (base.ok() && !UnderRemovedTreeLocked(path)) {
      for (const DirEntry& e : *base) {
        const std::string full = JoinPath(path, e.name);
        auto it = files_.find(full);
        if (it != files_.end() && it->second == nullptr) continue;
        if (UnderRemovedTreeLocked(full)) continue;
        out[e.name] = e;
      }
    }
  }
  for (const auto& [p, node] : files_) {
    if (node == nullptr || ParentDir(p) != path) continue;
    out[BaseName(p)] = DirEntry{BaseName(p), false, true};
  }
  for (const std::string& d : created_dirs_) {
    if (ParentDir(d) == path) out[BaseName(d)] = DirEntry{BaseName(d), true, false};
  }
  std::vector<DirEntry> entries;
  for (auto& [name, e] : out) entries.push_back(std::move(e));
  return entries;
}

bool OverlayFileSystem::Exists(const std::string& raw) {
  std::lock_guard<std::mutex> lock(mu_);
  const std::string path = StripTrailingSlash(raw);
  auto it = files_.find(path);
  if (it != files_.end()) return it->second != nullptr;
  if (created_dirs_.count(path) != 0) return true;
  if (UnderRemovedTreeLocked(path)) return false;
  return base_->Exists(path);
}

Result<uint64_t> OverlayFileSystem::FileSize(const std::string& path) {
  std::lock_guard<std::mutex> lock(mu_);
  auto it = files_.find(path);
  if (it != files_.end()) {
    if (it->second == nullptr) return Status::IoError("stat " + path + ": No such file");
    return it->second->size;
  }
  if (UnderRemovedTreeLocked(path)) return Status::IoError("stat " + path + ": No such file");
  return base_->FileSize(path);
}

Result<int64_t> OverlayFileSystem::ModifiedTimeMs(const std::string& path) {
  std::lock_guard<std::mutex> lock(mu_);
  auto it = files_.find(path);
  if (it != files_.end()) {
    const Node* node = it->second.get();
    if (node == nullptr) return Status::IoError("stat " + path + ": No such file");
    if (node->mtime_ms) return *node->mtime_ms;
    if (node->dirty) return node->last_mutation_ms;
    return base_->ModifiedTimeMs(node->base_path);
  }
  if (UnderRemovedTreeLocked(path)) return Status::IoError("stat " + path + ": No such file");
  return base_->ModifiedTimeMs(path);
}

Status OverlayFileSystem::SetModifiedTimeMs(const std::string& path, int64_t ms) {
  std::lock_guard<std::mutex> lock(mu_);
  std::shared_ptr<Node> node = FindLocked(path);
  if (node == nullptr) return Status::IoError("utimes " + path + ": No such file");
  node->mtime_ms = ms;
  node->dirty = true;
  RecordLocked({PlannedChange::Kind::kSetModTime, path, "", 0, 0, 0});
  return Status::Ok();
}

std::vector<PlannedChange> OverlayFileSystem::changes() const {
  std::lock_guard<std::mutex> lock(mu_);
  return changes_;
}

Result<std::vector<FileDiff>> OverlayFileSystem::Diff() {
  std::lock_guard<std::mutex> lock(mu_);
  std::vector<FileDiff> diffs;
  std::set<std::string> seen;
  auto base_size_of = [this](const std::string& p) -> std::optional<uint64_t> {
    if (base_->ListDir(p).ok()) return std::nullopt;
    auto s = base_->FileSize(p);
    if (!s.ok()) return std::nullopt;
    return *s;
  };
  for (const auto& [path, node] : files_) {
    seen.insert(path);
    const std::optional<uint64_t> base_size = base_size_of(path);
    if (node == nullptr) {
      if (base_size) diffs.push_back({FileDiff::Kind::kRemoved, path, *base_size, 0, 0});
      continue;
    }
    if (!base_size) {
      diffs.push_back({FileDiff::Kind::kAdded, path, 0, node->size, 0});
      continue;
    }
    const bool same_file = node->base_path == path;
    if (same_file && node->extents.empty() && node->base_limit == *base_size &&
        node->size == *base_size) {
      continue;
    }
    // Compare content from the first byte that may differ.
    uint64_t pos = 0;
    if (same_file) {
      pos = node->base_limit;
      if (!node->extents.empty()) pos = std::min(pos, node->extents.begin()->first);
    }
    const uint64_t common = std::min<uint64_t>(*base_size, node->size);
    DARUMA_ASSIGN_OR_RETURN(auto base_file, base_->Open(path, OpenMode::kRead));
    std::vector<uint8_t> a(1 << 20), b(1 << 20);
    std::optional<uint64_t> first;
    while (pos < common && !first) {
      const size_t n = size_t(std::min<uint64_t>(a.size(), common - pos));
      DARUMA_ASSIGN_OR_RETURN(size_t got_a,
                              base_file->ReadAt(pos, std::span<uint8_t>(a.data(), n)));
      DARUMA_ASSIGN_OR_RETURN(size_t got_b, node->Read(pos, std::span<uint8_t>(b.data(), n)));
      const size_t m = std::min(got_a, got_b);
      for (size_t i = 0; i < m; ++i) {
        if (a[i] != b[i]) {
          first = pos + i;
          break;
        }
      }
      if (m == 0) break;
      pos += m;
    }
    if (options_.drop_cache_after_read) base_file->DropCache(0, *base_size);
    if (!first && *base_size == node->size) continue;
    diffs.push_back(
        {FileDiff::Kind::kModified, path, *base_size, node->size, first.value_or(common)});
  }
  return diffs;
}

}  // namespace daruma
