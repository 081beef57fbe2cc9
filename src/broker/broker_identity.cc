#include "broker/broker_identity.h"

#include <fmt/format.h>

#include <charconv>
#include <optional>

#include "broker/broker_context.h"
#include "log/meta_properties.h"
#include "log/uuid.h"

namespace daruma::broker {
namespace {

std::string MetaPath(std::string dir) {
  while (dir.size() > 1 && dir.back() == '/') dir.pop_back();
  return dir + "/" + kMetaPropertiesFileName;
}

// node.id wins over broker.id; nullopt when neither is set.
Result<std::optional<int32_t>> ConfiguredNodeId(const PropertyMap& props) {
  for (const char* key : {"node.id", "broker.id"}) {
    auto it = props.find(key);
    if (it == props.end()) continue;
    std::string_view v = it->second;
    while (!v.empty() && (v.front() == ' ' || v.front() == '\t')) v.remove_prefix(1);
    while (!v.empty() && (v.back() == ' ' || v.back() == '\t')) v.remove_suffix(1);
    int32_t id = 0;
    const auto [end, ec] = std::from_chars(v.data(), v.data() + v.size(), id);
    if (ec != std::errc() || end != v.data() + v.size() || id < 0) {
      return Status::InvalidArgument(fmt::format(
          "invalid value \"{}\" for {}: expected an integer of at least 0", it->second, key));
    }
    return std::optional<int32_t>(id);
  }
  return std::optional<int32_t>();
}

}  // namespace

Result<BrokerIdentity> ResolveBrokerIdentity(const ServerConfig& config, FileSystem* fs) {
  DARUMA_ASSIGN_OR_RETURN(std::optional<int32_t> configured, ConfiguredNodeId(config.other));
  std::optional<int32_t> stored_node;
  std::optional<std::string> stored_cluster;
  bool any_file = false;
  for (const std::string& dir : config.log_dirs) {
    const std::string path = MetaPath(dir);
    if (!fs->Exists(path)) continue;
    Result<MetaProperties> meta = MetaProperties::Read(path, fs);
    if (!meta.ok()) continue;  // LogManager::Startup reports it
    any_file = true;
    if (meta->node_id && configured && *meta->node_id != *configured) {
      return Status::InvalidArgument(fmt::format(
          "{}: stored node id {} does not match the configured node.id/broker.id {} (this log "
          "dir belongs to another broker)",
          path, *meta->node_id, *configured));
    }
    if (!stored_node) stored_node = meta->node_id;
    if (!stored_cluster) stored_cluster = meta->cluster_id;
  }
  BrokerIdentity identity;
  identity.node_id = configured.value_or(stored_node.value_or(0));
  if (stored_cluster) {
    identity.cluster_id = *stored_cluster;
  } else {
    identity.cluster_id = any_file ? kDefaultClusterId : Uuid::Random().ToString();
  }
  return identity;
}

Result<std::vector<WrittenMetaProperties>> WriteMissingMetaProperties(
    const std::vector<std::string>& log_dirs, const BrokerIdentity& identity, FileSystem* fs) {
  std::vector<std::string> missing;
  bool any_v0 = false;
  std::optional<std::string> stored_cluster;
  for (const std::string& dir : log_dirs) {
    const std::string path = MetaPath(dir);
    if (!fs->Exists(path)) {
      missing.push_back(path);
      continue;
    }
    Result<MetaProperties> meta = MetaProperties::Read(path, fs);
    if (!meta.ok()) continue;  // LogManager::Startup refused it already
    any_v0 = any_v0 || meta->version == 0;
    if (!stored_cluster) stored_cluster = meta->cluster_id;
  }
  std::vector<WrittenMetaProperties> written;
  for (const std::string& path : missing) {
    MetaProperties meta;
    meta.node_id = identity.node_id;
    if (any_v0) {
      // ZooKeeper's cluster id is the one the v0 files hold; without one,
      // Kafka fills it in at its next start, where any other would clash.
      meta.version = 0;
      meta.cluster_id = stored_cluster;
    } else {
      meta.version = 1;
      meta.cluster_id = identity.cluster_id;
      meta.directory_id = Uuid::Random();
    }
    DARUMA_RETURN_IF_ERROR(meta.Write(path, fs));
    written.push_back({path, std::move(meta)});
  }
  return written;
}

}  // namespace daruma::broker
