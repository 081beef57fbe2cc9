#include "coordinator/producer_id_manager.h"

#include <fmt/format.h>

#include <algorithm>
#include <limits>
#include <nlohmann/json.hpp>

#include "common/bytes.h"

namespace daruma {
namespace {

constexpr int kVersion = 0;

}  // namespace

std::string ProducerIdManager::Serialize(int64_t block_end) {
  return fmt::format("{{\"version\":{},\"nextBlockStartId\":{}}}\n", kVersion, block_end);
}

Result<int64_t> ProducerIdManager::Parse(const std::string& path, std::string_view content) {
  const nlohmann::json json = nlohmann::json::parse(content, nullptr, /*allow_exceptions=*/false);
  if (!json.is_object()) {
    return Status::Corruption(fmt::format("producer id file {}: not a JSON object", path));
  }
  auto version = json.find("version");
  if (version == json.end() || !version->is_number_integer() || version->get<int>() != kVersion) {
    return Status::Corruption(
        fmt::format("producer id file {}: field version: expected {}", path, kVersion));
  }
  auto end = json.find("nextBlockStartId");
  if (end == json.end() || !end->is_number_integer() || end->get<int64_t>() < 0) {
    return Status::Corruption(
        fmt::format("producer id file {}: field nextBlockStartId: expected an integer >= 0", path));
  }
  return end->get<int64_t>();
}

Result<std::unique_ptr<ProducerIdManager>> ProducerIdManager::Open(
    FileSystem* fs, const std::string& dir, const std::vector<std::string>& read_dirs,
    int64_t first_free, int32_t block_size) {
  if (block_size <= 0) return Status::InvalidArgument("producer id block size must be > 0");
  int64_t durable = 0;  // the largest end any file holds
  std::vector<std::string> dirs = read_dirs;
  dirs.push_back(dir);
  for (const std::string& d : dirs) {
    const std::string path = JoinPath(d, kFileName);
    if (!fs->Exists(path)) continue;
    DARUMA_ASSIGN_OR_RETURN(std::vector<uint8_t> bytes, fs->ReadFile(path));
    DARUMA_ASSIGN_OR_RETURN(int64_t end, Parse(path, AsStringView(bytes)));
    durable = std::max(durable, end);
  }
  const std::string path = JoinPath(dir, kFileName);
  if (first_free > durable) {
    // A floor the caller learned from elsewhere (data Kafka wrote, whose
    // metadata the first start reads once): durable now, so a restart before
    // the first block still starts above it. Ids Daruma handed out are all
    // below a durable end, so its own runs never write here.
    const std::string content = Serialize(first_free);
    Status st = fs->WriteFileAtomically(path, AsBytes(content));
    if (!st.ok()) {
      return Status(st.code(), fmt::format("recording producer ids below {} as taken in {}: {}",
                                           first_free, path, st.message()));
    }
  }
  return std::unique_ptr<ProducerIdManager>(
      new ProducerIdManager(fs, path, std::max(first_free, durable), block_size));
}

Result<int64_t> ProducerIdManager::Generate() {
  std::lock_guard<std::mutex> lock(mu_);
  if (next_ >= block_end_) {
    if (next_ > std::numeric_limits<int64_t>::max() - block_size_) {
      return Status::OutOfRange(fmt::format("producer ids exhausted at {}", next_));
    }
    const int64_t end = next_ + block_size_;
    const std::string content = Serialize(end);
    Status st = fs_->WriteFileAtomically(path_, AsBytes(content));
    if (!st.ok()) {
      return Status(st.code(), fmt::format("reserving producer ids {} to {} in {}: {}", next_,
                                           end - 1, path_, st.message()));
    }
    block_end_ = end;
  }
  return next_++;
}

void ProducerIdManager::RaiseFloor(int64_t first_free) {
  std::lock_guard<std::mutex> lock(mu_);
  // Past block_end_, Generate makes a block starting at next_ durable first.
  next_ = std::max(next_, first_free);
  floor_known_.store(true);
}

}  // namespace daruma
