#include "tools/tool_config.h"

#include "recovery/server_config.h"

namespace daruma::tools {

Result<ToolConfig> ResolveToolConfig(const std::vector<std::string>& log_dirs,
                                     const std::string& config_file,
                                     const std::vector<std::string>& overrides) {
  DARUMA_ASSIGN_OR_RETURN(ServerConfig server, LoadServerConfig(config_file, overrides));
  ToolConfig out;
  out.log_dirs = log_dirs.empty() ? server.log_dirs : log_dirs;
  out.log = server.log;
  if (out.log_dirs.empty()) {
    return Status::InvalidArgument(
        "no log directory: pass --log-dirs DIR[,DIR...] or set log.dirs in --config");
  }
  return out;
}

}  // namespace daruma::tools
