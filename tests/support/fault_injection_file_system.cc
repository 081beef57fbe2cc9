#include "support/fault_injection_file_system.h"

#include <algorithm>

#include "support/mem_file_system.h"

namespace daruma::testing {
namespace {

std::vector<std::string> Components(const std::string& normalized) {
  std::vector<std::string> out;
  size_t start = 0;
  while (start <= normalized.size()) {
    size_t end = normalized.find('/', start);
    if (end == std::string::npos) end = normalized.size();
    if (end > start) out.push_back(normalized.substr(start, end - start));
    start = end + 1;
  }
  return out;
}

bool IsUnder(const std::string& path, const std::string& root) {
  return path == root || (path.size() > root.size() && path.compare(0, root.size(), root) == 0 &&
                          (root.back() == '/' || path[root.size()] == '/'));
}

std::string Norm(const std::string& path) {
  return MemFileSystem::Normalize(path);
}

}  // namespace

// A handle whose every operation goes through the owner's fault checks.
class FaultInjectionFileSystem::FaultFile final : public File {
 public:
  FaultFile(FaultInjectionFileSystem* fs, NodeId node, std::unique_ptr<File> base)
      : fs_(fs), node_(node), base_(std::move(base)) {}

  Result<size_t> ReadAt(uint64_t pos, std::span<uint8_t> out) const override {
    std::lock_guard<std::mutex> lock(fs_->mu_);
    DARUMA_RETURN_IF_ERROR(fs_->CheckAliveLocked(path()));
    return base_->ReadAt(pos, out);
  }

  Status WriteAt(uint64_t pos, std::span<const uint8_t> data) override {
    std::lock_guard<std::mutex> lock(fs_->mu_);
    DARUMA_RETURN_IF_ERROR(fs_->CheckAliveLocked(path()));
    DARUMA_RETURN_IF_ERROR(fs_->BeginOpLocked(
        "write", path() + " @" + std::to_string(pos) + "+" + std::to_string(data.size())));
    DARUMA_RETURN_IF_ERROR(base_->WriteAt(pos, data));
    fs_->last_unsynced_write_ = PendingWrite{node_, pos, {data.begin(), data.end()}};
    return Status::Ok();
  }

  Status Sync() override {
    std::lock_guard<std::mutex> lock(fs_->mu_);
    DARUMA_RETURN_IF_ERROR(fs_->CheckAliveLocked(path()));
    DARUMA_RETURN_IF_ERROR(fs_->BeginOpLocked("sync", path()));
    DARUMA_RETURN_IF_ERROR(base_->Sync());
    DARUMA_ASSIGN_OR_RETURN(uint64_t size, base_->Size());
    std::vector<uint8_t> data(size);
    DARUMA_ASSIGN_OR_RETURN(size_t n, base_->ReadAt(0, data));
    data.resize(n);
    fs_->nodes_[node_].data = std::move(data);
    if (fs_->last_unsynced_write_ && fs_->last_unsynced_write_->node == node_) {
      fs_->last_unsynced_write_.reset();
    }
    return Status::Ok();
  }

  Status Truncate(uint64_t size) override {
    std::lock_guard<std::mutex> lock(fs_->mu_);
    DARUMA_RETURN_IF_ERROR(fs_->CheckAliveLocked(path()));
    DARUMA_RETURN_IF_ERROR(fs_->BeginOpLocked("truncate", path() + " to " + std::to_string(size)));
    return base_->Truncate(size);
  }

  Result<uint64_t> Size() const override {
    std::lock_guard<std::mutex> lock(fs_->mu_);
    DARUMA_RETURN_IF_ERROR(fs_->CheckAliveLocked(path()));
    return base_->Size();
  }

  void DropCache(uint64_t pos, uint64_t len) override { base_->DropCache(pos, len); }
  const std::string& path() const override { return base_->path(); }

 private:
  FaultInjectionFileSystem* fs_;
  NodeId node_;
  std::unique_ptr<File> base_;
};

FaultInjectionFileSystem::FaultInjectionFileSystem(FileSystem* base, uint64_t seed)
    : base_(base), rng_(seed) {
  nodes_[0].is_dir = true;
}

FaultInjectionFileSystem::~FaultInjectionFileSystem() = default;

void FaultInjectionFileSystem::CrashAt(uint64_t op) {
  std::lock_guard<std::mutex> lock(mu_);
  crash_at_ = op;
}

void FaultInjectionFileSystem::FailAt(uint64_t op, InjectedError kind) {
  std::lock_guard<std::mutex> lock(mu_);
  fail_at_ = op;
  fail_kind_ = kind;
}

void FaultInjectionFileSystem::FailPathsUnder(const std::string& prefix) {
  std::lock_guard<std::mutex> lock(mu_);
  failing_prefixes_.push_back(Norm(prefix));
}

bool FaultInjectionFileSystem::crashed() const {
  std::lock_guard<std::mutex> lock(mu_);
  return crashed_;
}

uint64_t FaultInjectionFileSystem::op_count() const {
  std::lock_guard<std::mutex> lock(mu_);
  return ops_;
}

std::vector<std::string> FaultInjectionFileSystem::op_log() const {
  std::lock_guard<std::mutex> lock(mu_);
  return op_log_;
}

Status FaultInjectionFileSystem::CheckAliveLocked(const std::string& path) const {
  if (crashed_) return Status::IoError("injected crash: process is dead (" + path + ")");
  const std::string p = Norm(path);
  for (const auto& prefix : failing_prefixes_) {
    if (IsUnder(p, prefix)) return Status::IoError("injected EIO on " + path);
  }
  return Status::Ok();
}

Status FaultInjectionFileSystem::BeginOpLocked(const std::string& what, const std::string& path) {
  ++ops_;
  const std::string desc = std::to_string(ops_) + " " + what + " " + path;
  op_log_.push_back(desc);
  if (crash_at_ && ops_ >= *crash_at_) {
    crashed_ = true;
    return Status::IoError("injected crash at op " + desc);
  }
  if (fail_at_ && ops_ == *fail_at_) {
    const char* text = fail_kind_ == InjectedError::kEio ? "Input/output error (injected EIO)"
                                                         : "No space left on device (injected "
                                                           "ENOSPC)";
    return Status::IoError(what + " " + path + ": " + text);
  }
  return Status::Ok();
}

FaultInjectionFileSystem::NodeId FaultInjectionFileSystem::NewNodeLocked(bool is_dir) {
  const NodeId id = next_id_++;
  nodes_[id].is_dir = is_dir;
  return id;
}

FaultInjectionFileSystem::NodeId FaultInjectionFileSystem::AdoptLocked(const std::string& path,
                                                                       bool is_dir) {
  const NodeId id = NewNodeLocked(is_dir);
  if (!is_dir) {
    auto data = base_->ReadFile(path);
    if (data.ok()) nodes_[id].data = std::move(*data);
    return id;
  }
  auto entries = base_->ListDir(path);
  if (!entries.ok()) return id;
  for (const auto& e : *entries) {
    const NodeId child = AdoptLocked(JoinPath(path, e.name), e.is_directory);
    nodes_[id].live[e.name] = child;
    nodes_[id].durable[e.name] = child;
  }
  return id;
}

std::optional<FaultInjectionFileSystem::NodeId> FaultInjectionFileSystem::ResolveLocked(
    const std::string& path) {
  const std::string norm = Norm(path);
  NodeId cur = 0;
  std::string prefix = norm.starts_with("/") ? "" : ".";
  for (const auto& name : Components(norm)) {
    prefix = prefix.empty() ? "/" + name : prefix + "/" + name;
    if (prefix.starts_with("./")) prefix = prefix.substr(2);
    Node& node = nodes_[cur];
    if (!node.is_dir) return std::nullopt;
    auto it = node.live.find(name);
    if (it != node.live.end()) {
      cur = it->second;
      continue;
    }
    if (!base_->Exists(prefix)) return std::nullopt;
    const bool is_dir = base_->ListDir(prefix).ok();
    const NodeId child = AdoptLocked(prefix, is_dir);
    nodes_[cur].live[name] = child;
    nodes_[cur].durable[name] = child;
    cur = child;
  }
  return cur;
}

std::optional<std::pair<FaultInjectionFileSystem::NodeId, std::string>>
FaultInjectionFileSystem::ParentLocked(const std::string& path) {
  const std::string norm = Norm(path);
  auto parent = ResolveLocked(ParentDir(norm));
  if (!parent || !nodes_[*parent].is_dir) return std::nullopt;
  return std::make_pair(*parent, BaseName(norm));
}

Result<std::unique_ptr<File>> FaultInjectionFileSystem::Open(const std::string& path,
                                                             OpenMode mode) {
  std::lock_guard<std::mutex> lock(mu_);
  DARUMA_RETURN_IF_ERROR(CheckAliveLocked(path));
  std::optional<NodeId> node = ResolveLocked(path);
  const bool creating = mode == OpenMode::kCreate || mode == OpenMode::kCreateExclusive ||
                        mode == OpenMode::kTruncate;
  std::optional<std::pair<NodeId, std::string>> parent;
  if (!node && creating) {
    parent = ParentLocked(path);
    DARUMA_RETURN_IF_ERROR(BeginOpLocked("create", path));
  } else if (node && mode == OpenMode::kTruncate) {
    DARUMA_RETURN_IF_ERROR(BeginOpLocked("truncate", path + " to 0"));
  }
  DARUMA_ASSIGN_OR_RETURN(auto file, base_->Open(path, mode));
  if (!node) {
    node = NewNodeLocked(false);
    if (parent) nodes_[parent->first].live[parent->second] = *node;
  }
  return std::unique_ptr<File>(new FaultFile(this, *node, std::move(file)));
}

Status FaultInjectionFileSystem::Rename(const std::string& from, const std::string& to) {
  std::lock_guard<std::mutex> lock(mu_);
  DARUMA_RETURN_IF_ERROR(CheckAliveLocked(from));
  DARUMA_RETURN_IF_ERROR(CheckAliveLocked(to));
  const std::optional<NodeId> node = ResolveLocked(from);
  ResolveLocked(to);  // adopt an existing target before it is replaced
  const auto from_parent = ParentLocked(from);
  const auto to_parent = ParentLocked(to);
  DARUMA_RETURN_IF_ERROR(BeginOpLocked("rename", from + " -> " + to));
  DARUMA_RETURN_IF_ERROR(base_->Rename(from, to));
  if (node && from_parent && to_parent) {
    nodes_[from_parent->first].live.erase(from_parent->second);
    nodes_[to_parent->first].live[to_parent->second] = *node;
  }
  return Status::Ok();
}

Status FaultInjectionFileSystem::Remove(const std::string& path) {
  std::lock_guard<std::mutex> lock(mu_);
  DARUMA_RETURN_IF_ERROR(CheckAliveLocked(path));
  ResolveLocked(path);
  const auto parent = ParentLocked(path);
  DARUMA_RETURN_IF_ERROR(BeginOpLocked("remove", path));
  DARUMA_RETURN_IF_ERROR(base_->Remove(path));
  if (parent) nodes_[parent->first].live.erase(parent->second);
  return Status::Ok();
}

Status FaultInjectionFileSystem::RemoveAll(const std::string& path) {
  std::lock_guard<std::mutex> lock(mu_);
  DARUMA_RETURN_IF_ERROR(CheckAliveLocked(path));
  ResolveLocked(path);
  const auto parent = ParentLocked(path);
  DARUMA_RETURN_IF_ERROR(BeginOpLocked("remove-all", path));
  DARUMA_RETURN_IF_ERROR(base_->RemoveAll(path));
  if (parent) nodes_[parent->first].live.erase(parent->second);
  return Status::Ok();
}

Status FaultInjectionFileSystem::CreateDir(const std::string& path) {
  std::lock_guard<std::mutex> lock(mu_);
  DARUMA_RETURN_IF_ERROR(CheckAliveLocked(path));
  // Adopt every ancestor that already exists, so the walk below only creates
  // what this call creates.
  const std::string norm = Norm(path);
  for (std::string p = norm; !p.empty() && p != "/" && p != "."; p = ParentDir(p)) {
    if (ResolveLocked(p)) break;
  }
  DARUMA_RETURN_IF_ERROR(BeginOpLocked("create-dir", path));
  DARUMA_RETURN_IF_ERROR(base_->CreateDir(path));
  NodeId cur = 0;
  for (const auto& name : Components(norm)) {
    auto it = nodes_[cur].live.find(name);
    if (it != nodes_[cur].live.end()) {
      cur = it->second;
      continue;
    }
    const NodeId child = NewNodeLocked(true);
    nodes_[cur].live[name] = child;
    cur = child;
  }
  return Status::Ok();
}

Status FaultInjectionFileSystem::SyncDir(const std::string& path) {
  std::lock_guard<std::mutex> lock(mu_);
  DARUMA_RETURN_IF_ERROR(CheckAliveLocked(path));
  const std::optional<NodeId> node = ResolveLocked(path);
  DARUMA_RETURN_IF_ERROR(BeginOpLocked("sync-dir", path));
  DARUMA_RETURN_IF_ERROR(base_->SyncDir(path));
  if (node) nodes_[*node].durable = nodes_[*node].live;
  return Status::Ok();
}

// syncfs: every live name and every file's current content become durable.
Status FaultInjectionFileSystem::SyncFileSystem(const std::string& path) {
  std::lock_guard<std::mutex> lock(mu_);
  DARUMA_RETURN_IF_ERROR(CheckAliveLocked(path));
  DARUMA_RETURN_IF_ERROR(BeginOpLocked("sync-fs", path));
  Status base = base_->SyncFileSystem(path);
  if (!base.ok() && base.code() != StatusCode::kUnsupported) return base;
  DARUMA_RETURN_IF_ERROR(SyncTreeLocked(0, "/"));
  last_unsynced_write_.reset();
  return Status::Ok();
}

Status FaultInjectionFileSystem::SyncTreeLocked(NodeId id, const std::string& path) {
  Node& node = nodes_[id];
  if (!node.is_dir) {
    auto data = base_->ReadFile(path);
    if (data.ok()) node.data = std::move(*data);
    return Status::Ok();
  }
  node.durable = node.live;
  const std::map<std::string, NodeId> children = node.live;
  for (const auto& [name, child] : children) {
    DARUMA_RETURN_IF_ERROR(SyncTreeLocked(child, path == "/" ? "/" + name : path + "/" + name));
  }
  return Status::Ok();
}

Result<std::vector<DirEntry>> FaultInjectionFileSystem::ListDir(const std::string& path) {
  std::lock_guard<std::mutex> lock(mu_);
  DARUMA_RETURN_IF_ERROR(CheckAliveLocked(path));
  return base_->ListDir(path);
}

bool FaultInjectionFileSystem::Exists(const std::string& path) {
  std::lock_guard<std::mutex> lock(mu_);
  if (!CheckAliveLocked(path).ok()) return false;
  return base_->Exists(path);
}

Result<uint64_t> FaultInjectionFileSystem::FileSize(const std::string& path) {
  std::lock_guard<std::mutex> lock(mu_);
  DARUMA_RETURN_IF_ERROR(CheckAliveLocked(path));
  return base_->FileSize(path);
}

Result<int64_t> FaultInjectionFileSystem::ModifiedTimeMs(const std::string& path) {
  std::lock_guard<std::mutex> lock(mu_);
  DARUMA_RETURN_IF_ERROR(CheckAliveLocked(path));
  return base_->ModifiedTimeMs(path);
}

Status FaultInjectionFileSystem::SetModifiedTimeMs(const std::string& path, int64_t ms) {
  std::lock_guard<std::mutex> lock(mu_);
  DARUMA_RETURN_IF_ERROR(CheckAliveLocked(path));
  return base_->SetModifiedTimeMs(path, ms);
}

Status FaultInjectionFileSystem::MaterializeDurableState(FileSystem* target,
                                                         const std::string& root, bool tear) const {
  std::lock_guard<std::mutex> lock(mu_);
  NodeId cur = 0;
  for (const auto& name : Components(Norm(root))) {
    const Node& node = nodes_.at(cur);
    auto it = node.durable.find(name);
    if (it == node.durable.end()) return Status::Ok();  // nothing durable below root
    cur = it->second;
  }
  return MaterializeNode(target, Norm(root), cur, tear);
}

Status FaultInjectionFileSystem::MaterializeNode(FileSystem* target, const std::string& path,
                                                 NodeId id, bool tear) const {
  const Node& node = nodes_.at(id);
  if (node.is_dir) {
    DARUMA_RETURN_IF_ERROR(target->CreateDir(path));
    for (const auto& [name, child] : node.durable) {
      DARUMA_RETURN_IF_ERROR(MaterializeNode(target, JoinPath(path, name), child, tear));
    }
    return Status::Ok();
  }
  std::vector<uint8_t> data = node.data;
  if (tear && last_unsynced_write_ && last_unsynced_write_->node == id) {
    const PendingWrite& w = *last_unsynced_write_;
    std::uniform_int_distribution<size_t> dist(0, w.bytes.size());
    const size_t keep = dist(rng_);
    if (keep > 0 && data.size() < w.pos + keep) data.resize(w.pos + keep);
    std::copy_n(w.bytes.begin(), keep, data.begin() + int64_t(w.pos));
  }
  DARUMA_ASSIGN_OR_RETURN(auto file, target->Open(path, OpenMode::kTruncate));
  if (!data.empty()) DARUMA_RETURN_IF_ERROR(file->WriteAt(0, data));
  return Status::Ok();
}

}  // namespace daruma::testing
