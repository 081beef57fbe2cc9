#include "log/clean_shutdown_file.h"

#include <nlohmann/json.hpp>

#include "common/bytes.h"

namespace daruma {

CleanShutdownFile::CleanShutdownFile(const std::string& log_dir, FileSystem* fs)
    : path_(JoinPath(log_dir, kCleanShutdownFileName)), fs_(fs) {}

std::string CleanShutdownFile::Serialize(int64_t broker_epoch) {
  // Written by hand: Kafka's field order is version, brokerEpoch.
  return "{\"version\":" + std::to_string(kVersion) +
         ",\"brokerEpoch\":" + std::to_string(broker_epoch) + "}";
}

std::optional<int64_t> CleanShutdownFile::ParseBrokerEpoch(std::string_view content) {
  const nlohmann::json json = nlohmann::json::parse(content, nullptr, /*allow_exceptions=*/false);
  if (!json.is_object()) return std::nullopt;
  auto it = json.find("brokerEpoch");
  if (it == json.end() || !it->is_number_integer()) return std::nullopt;
  return it->get<int64_t>();
}

Result<std::optional<int64_t>> CleanShutdownFile::ReadBrokerEpoch() const {
  DARUMA_ASSIGN_OR_RETURN(std::vector<uint8_t> bytes, fs_->ReadFile(path_));
  return ParseBrokerEpoch(AsStringView(bytes));
}

Status CleanShutdownFile::Write(int64_t broker_epoch) const {
  const std::string content = Serialize(broker_epoch);
  {
    DARUMA_ASSIGN_OR_RETURN(auto file, fs_->Open(path_, OpenMode::kTruncate));
    DARUMA_RETURN_IF_ERROR(file->WriteAt(0, AsBytes(content)));
    DARUMA_RETURN_IF_ERROR(file->Sync());
  }
  return fs_->SyncDir(ParentDir(path_));
}

Status CleanShutdownFile::Remove() const {
  Status st = fs_->Remove(path_);
  if (st.IsNotFound()) return Status::Ok();
  return st;
}

}  // namespace daruma
