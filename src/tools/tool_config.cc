#include "tools/tool_config.h"

#include <filesystem>
#include <ostream>
#include <system_error>

namespace daruma::tools {

Status CheckLogDirsExist(const std::vector<std::string>& log_dirs) {
  for (const std::string& dir : log_dirs) {
    std::error_code ec;
    const std::filesystem::file_status st = std::filesystem::status(dir, ec);
    if (st.type() == std::filesystem::file_type::not_found) {
      return Status::InvalidArgument("log dir " + dir + ": no such directory");
    }
    if (ec) return Status::InvalidArgument("log dir " + dir + ": " + ec.message());
    if (st.type() != std::filesystem::file_type::directory) {
      return Status::InvalidArgument("log dir " + dir + ": not a directory");
    }
  }
  return Status::Ok();
}

Result<ToolConfig> ResolveToolConfig(const std::vector<std::string>& log_dirs,
                                     const std::string& config_file,
                                     const std::vector<std::string>& overrides) {
  DARUMA_ASSIGN_OR_RETURN(ServerConfig server, LoadServerConfig(config_file, overrides));
  ToolConfig out;
  out.log_dirs = log_dirs.empty() ? server.log_dirs : log_dirs;
  out.log = server.log;
  out.server = std::move(server);
  if (out.log_dirs.empty()) {
    return Status::InvalidArgument(
        "no log directory: pass --log-dirs DIR[,DIR...] or set log.dirs in --config");
  }
  DARUMA_RETURN_IF_ERROR(CheckLogDirsExist(out.log_dirs));
  return out;
}

std::string NormalDirPath(const std::string& path) {
  std::string s = std::filesystem::path(path).lexically_normal().string();
  while (s.size() > 1 && s.back() == '/') s.pop_back();
  return s;
}

void PrintConfigWarnings(const ServerConfig& config, std::string_view command, std::ostream& err) {
  for (const std::string& w : config.warnings) {
    err << "daruma " << command << ": warning: " << w << "\n";
  }
}

}  // namespace daruma::tools
