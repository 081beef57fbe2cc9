#include "support/mem_file_system.h"

#include <algorithm>
#include <chrono>

namespace daruma::testing {
namespace {

int64_t NowMs() {
  return std::chrono::duration_cast<std::chrono::milliseconds>(
             std::chrono::system_clock::now().time_since_epoch())
      .count();
}

// An open handle. It keeps the node alive after the path is unlinked, like an
// fd; the file system's mutex (shared) guards the node's bytes.
class MemFile final : public File {
 public:
  MemFile(std::shared_ptr<MemFileSystem::Node> node, std::string path, std::mutex* mu)
      : node_(std::move(node)), path_(std::move(path)), mu_(mu) {}

  Result<size_t> ReadAt(uint64_t pos, std::span<uint8_t> out) const override {
    std::lock_guard<std::mutex> lock(*mu_);
    const auto& data = node_->data;
    if (pos >= data.size()) return size_t{0};
    const size_t n = std::min<size_t>(out.size(), data.size() - pos);
    std::copy_n(data.begin() + int64_t(pos), n, out.begin());
    return n;
  }

  Status WriteAt(uint64_t pos, std::span<const uint8_t> in) override {
    std::lock_guard<std::mutex> lock(*mu_);
    auto& data = node_->data;
    if (data.size() < pos + in.size()) data.resize(pos + in.size());
    std::copy(in.begin(), in.end(), data.begin() + int64_t(pos));
    node_->mtime_ms = NowMs();
    return Status::Ok();
  }

  Status Sync() override { return Status::Ok(); }

  Status Truncate(uint64_t size) override {
    std::lock_guard<std::mutex> lock(*mu_);
    node_->data.resize(size);
    node_->mtime_ms = NowMs();
    return Status::Ok();
  }

  Result<uint64_t> Size() const override {
    std::lock_guard<std::mutex> lock(*mu_);
    return uint64_t(node_->data.size());
  }

  const std::string& path() const override { return path_; }

 private:
  std::shared_ptr<MemFileSystem::Node> node_;
  std::string path_;
  std::mutex* mu_;
};

}  // namespace

std::string MemFileSystem::Normalize(const std::string& path) {
  std::string out;
  for (char c : path) {
    if (c == '/' && !out.empty() && out.back() == '/') continue;
    out.push_back(c);
  }
  while (out.size() > 1 && out.back() == '/') out.pop_back();
  return out;
}

bool MemFileSystem::IsUnder(const std::string& path, const std::string& root) {
  if (root == "/") return !path.empty() && path[0] == '/';
  return path == root || (path.size() > root.size() && path.compare(0, root.size(), root) == 0 &&
                          path[root.size()] == '/');
}

bool MemFileSystem::DirExistsLocked(const std::string& path) const {
  return path == "/" || path == "." || dirs_.count(path) > 0;
}

Result<std::unique_ptr<File>> MemFileSystem::Open(const std::string& raw, OpenMode mode) {
  const std::string path = Normalize(raw);
  std::lock_guard<std::mutex> lock(mu_);
  if (dirs_.count(path)) return Status::IoError("open " + path + ": is a directory");
  auto it = files_.find(path);
  if (it == files_.end()) {
    if (mode == OpenMode::kRead || mode == OpenMode::kReadWrite) {
      return Status::NotFound("open " + path + ": no such file");
    }
    if (!DirExistsLocked(ParentDir(path))) {
      return Status::NotFound("open " + path + ": no such directory " + ParentDir(path));
    }
    auto node = std::make_shared<Node>();
    node->mtime_ms = NowMs();
    it = files_.emplace(path, std::move(node)).first;
  } else if (mode == OpenMode::kCreateExclusive) {
    return Status::IoError("open " + path + ": File exists");
  } else if (mode == OpenMode::kTruncate) {
    it->second->data.clear();
    it->second->mtime_ms = NowMs();
  }
  return std::unique_ptr<File>(new MemFile(it->second, path, &mu_));
}

Status MemFileSystem::Rename(const std::string& raw_from, const std::string& raw_to) {
  const std::string from = Normalize(raw_from);
  const std::string to = Normalize(raw_to);
  std::lock_guard<std::mutex> lock(mu_);
  if (!DirExistsLocked(ParentDir(to))) {
    return Status::IoError("rename " + from + " -> " + to + ": No such file or directory");
  }
  auto file = files_.find(from);
  if (file != files_.end()) {
    if (dirs_.count(to))
      return Status::IoError("rename " + from + " -> " + to + ": Is a directory");
    auto node = file->second;
    files_.erase(file);
    files_[to] = std::move(node);
    return Status::Ok();
  }
  if (!dirs_.count(from)) {
    return Status::IoError("rename " + from + " -> " + to + ": No such file or directory");
  }
  if (files_.count(to))
    return Status::IoError("rename " + from + " -> " + to + ": Not a directory");
  for (const auto& d : dirs_) {
    if (IsUnder(d, to) && d != to) {
      return Status::IoError("rename " + from + " -> " + to + ": Directory not empty");
    }
  }
  for (const auto& [p, n] : files_) {
    if (IsUnder(p, to)) {
      return Status::IoError("rename " + from + " -> " + to + ": Directory not empty");
    }
  }
  std::set<std::string> dirs;
  for (const auto& d : dirs_) dirs.insert(IsUnder(d, from) ? to + d.substr(from.size()) : d);
  dirs_ = std::move(dirs);
  std::map<std::string, std::shared_ptr<Node>> files;
  for (auto& [p, n] : files_) files[IsUnder(p, from) ? to + p.substr(from.size()) : p] = n;
  files_ = std::move(files);
  return Status::Ok();
}

Status MemFileSystem::Remove(const std::string& raw) {
  const std::string path = Normalize(raw);
  std::lock_guard<std::mutex> lock(mu_);
  if (dirs_.count(path)) return Status::IoError("remove " + path + ": Is a directory");
  if (files_.erase(path) == 0) return Status::NotFound("remove " + path + ": no such file");
  return Status::Ok();
}

Status MemFileSystem::RemoveAll(const std::string& raw) {
  const std::string path = Normalize(raw);
  std::lock_guard<std::mutex> lock(mu_);
  std::erase_if(dirs_, [&](const std::string& d) { return IsUnder(d, path); });
  std::erase_if(files_, [&](const auto& kv) { return IsUnder(kv.first, path); });
  return Status::Ok();
}

Status MemFileSystem::CreateDir(const std::string& raw) {
  const std::string path = Normalize(raw);
  std::lock_guard<std::mutex> lock(mu_);
  for (std::string p = path; !p.empty() && p != "/" && p != "."; p = ParentDir(p)) {
    if (files_.count(p)) return Status::IoError("mkdir " + path + ": File exists");
    dirs_.insert(p);
  }
  return Status::Ok();
}

Status MemFileSystem::SyncDir(const std::string& raw) {
  const std::string path = Normalize(raw);
  std::lock_guard<std::mutex> lock(mu_);
  if (!DirExistsLocked(path)) return Status::IoError("open dir " + path + ": no such directory");
  return Status::Ok();
}

Result<std::vector<DirEntry>> MemFileSystem::ListDir(const std::string& raw) {
  const std::string path = Normalize(raw);
  std::lock_guard<std::mutex> lock(mu_);
  if (!DirExistsLocked(path)) return Status::NotFound("list " + path + ": no such directory");
  const std::string prefix = path == "/" ? "/" : path + "/";
  std::vector<DirEntry> out;
  for (auto it = dirs_.lower_bound(prefix); it != dirs_.end() && it->starts_with(prefix); ++it) {
    const std::string rest = it->substr(prefix.size());
    if (!rest.empty() && rest.find('/') == std::string::npos) out.push_back({rest, true, false});
  }
  for (auto it = files_.lower_bound(prefix); it != files_.end() && it->first.starts_with(prefix);
       ++it) {
    const std::string rest = it->first.substr(prefix.size());
    if (rest.find('/') == std::string::npos) out.push_back({rest, false, true});
  }
  return out;
}

bool MemFileSystem::Exists(const std::string& raw) {
  const std::string path = Normalize(raw);
  std::lock_guard<std::mutex> lock(mu_);
  return DirExistsLocked(path) || files_.count(path) > 0;
}

Result<uint64_t> MemFileSystem::FileSize(const std::string& raw) {
  const std::string path = Normalize(raw);
  std::lock_guard<std::mutex> lock(mu_);
  auto it = files_.find(path);
  if (it == files_.end()) {
    if (dirs_.count(path)) return uint64_t{4096};
    return Status::IoError("stat " + path + ": No such file or directory");
  }
  return uint64_t(it->second->data.size());
}

Result<int64_t> MemFileSystem::ModifiedTimeMs(const std::string& raw) {
  const std::string path = Normalize(raw);
  std::lock_guard<std::mutex> lock(mu_);
  auto it = files_.find(path);
  if (it == files_.end()) {
    if (DirExistsLocked(path)) return int64_t{0};
    return Status::IoError("stat " + path + ": No such file or directory");
  }
  return it->second->mtime_ms;
}

Status MemFileSystem::SetModifiedTimeMs(const std::string& raw, int64_t ms) {
  const std::string path = Normalize(raw);
  std::lock_guard<std::mutex> lock(mu_);
  auto it = files_.find(path);
  if (it == files_.end()) {
    if (DirExistsLocked(path)) return Status::Ok();
    return Status::IoError("utimes " + path + ": No such file or directory");
  }
  it->second->mtime_ms = ms;
  return Status::Ok();
}

std::map<std::string, std::vector<uint8_t>> MemFileSystem::Files(const std::string& raw) const {
  const std::string root = Normalize(raw);
  std::lock_guard<std::mutex> lock(mu_);
  std::map<std::string, std::vector<uint8_t>> out;
  for (const auto& [p, n] : files_) {
    if (IsUnder(p, root)) out[p] = n->data;
  }
  return out;
}

std::vector<std::string> MemFileSystem::Dirs(const std::string& raw) const {
  const std::string root = Normalize(raw);
  std::lock_guard<std::mutex> lock(mu_);
  std::vector<std::string> out;
  for (const auto& d : dirs_) {
    if (IsUnder(d, root)) out.push_back(d);
  }
  return out;
}

Status CopyTreeBetween(FileSystem* from, FileSystem* to, const std::string& root) {
  DARUMA_RETURN_IF_ERROR(to->CreateDir(root));
  DARUMA_ASSIGN_OR_RETURN(auto entries, from->ListDir(root));
  for (const auto& e : entries) {
    const std::string path = JoinPath(root, e.name);
    if (e.is_directory) {
      DARUMA_RETURN_IF_ERROR(CopyTreeBetween(from, to, path));
      continue;
    }
    DARUMA_ASSIGN_OR_RETURN(auto data, from->ReadFile(path));
    DARUMA_ASSIGN_OR_RETURN(auto file, to->Open(path, OpenMode::kTruncate));
    DARUMA_RETURN_IF_ERROR(file->WriteAt(0, data));
  }
  return Status::Ok();
}

}  // namespace daruma::testing
