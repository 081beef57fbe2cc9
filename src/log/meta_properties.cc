#include "log/meta_properties.h"

#include <algorithm>
#include <ctime>
#include <map>
#include <vector>

#include "common/bytes.h"
#include "log/checkpoint_text.h"

namespace daruma {
namespace {

bool IsPropertiesBlank(char c) {
  return c == ' ' || c == '\t' || c == '\f';
}

void AppendUtf8(std::string* out, uint32_t cp) {
  if (cp < 0x80) {
    out->push_back(char(cp));
  } else if (cp < 0x800) {
    out->push_back(char(0xc0 | (cp >> 6)));
    out->push_back(char(0x80 | (cp & 0x3f)));
  } else {
    out->push_back(char(0xe0 | (cp >> 12)));
    out->push_back(char(0x80 | ((cp >> 6) & 0x3f)));
    out->push_back(char(0x80 | (cp & 0x3f)));
  }
}

// One logical line: natural lines joined while they end in an odd number of
// backslashes, the leading blanks of continuation lines dropped.
struct LogicalLine {
  std::string text;
  int first_line = 0;
};

std::vector<LogicalLine> LogicalLines(std::string_view text) {
  std::vector<LogicalLine> out;
  size_t pos = 0;
  int line_number = 0;
  bool continuing = false;
  while (pos < text.size()) {
    size_t end = text.find_first_of("\r\n", pos);
    if (end == std::string_view::npos) end = text.size();
    std::string_view line = text.substr(pos, end - pos);
    pos = end + 1;
    if (end < text.size() && text[end] == '\r' && pos < text.size() && text[pos] == '\n') ++pos;
    ++line_number;
    size_t skip = 0;
    while (skip < line.size() && IsPropertiesBlank(line[skip])) ++skip;
    line.remove_prefix(skip);
    if (!continuing) {
      if (line.empty() || line[0] == '#' || line[0] == '!') continue;
      out.push_back({"", line_number});
    }
    size_t backslashes = 0;
    while (backslashes < line.size() && line[line.size() - 1 - backslashes] == '\\') ++backslashes;
    continuing = backslashes % 2 == 1;
    if (continuing) line.remove_suffix(1);
    out.back().text.append(line);
  }
  return out;
}

// Unescapes a key or value; false on a malformed \uXXXX.
bool Unescape(std::string_view in, std::string* out) {
  for (size_t i = 0; i < in.size(); ++i) {
    if (in[i] != '\\' || i + 1 >= in.size()) {
      if (in[i] != '\\') out->push_back(in[i]);
      continue;
    }
    const char c = in[++i];
    switch (c) {
      case 't':
        out->push_back('\t');
        break;
      case 'n':
        out->push_back('\n');
        break;
      case 'r':
        out->push_back('\r');
        break;
      case 'f':
        out->push_back('\f');
        break;
      case 'u': {
        if (i + 4 >= in.size()) return false;
        uint32_t cp = 0;
        for (size_t k = 1; k <= 4; ++k) {
          const char h = in[i + k];
          cp <<= 4;
          if (h >= '0' && h <= '9')
            cp |= uint32_t(h - '0');
          else if (h >= 'a' && h <= 'f')
            cp |= uint32_t(h - 'a' + 10);
          else if (h >= 'A' && h <= 'F')
            cp |= uint32_t(h - 'A' + 10);
          else
            return false;
        }
        AppendUtf8(out, cp);
        i += 4;
        break;
      }
      default:
        out->push_back(c);
    }
  }
  return true;
}

std::string Escape(std::string_view in, bool is_key) {
  std::string out;
  for (size_t i = 0; i < in.size(); ++i) {
    const char c = in[i];
    switch (c) {
      case '\t':
        out += "\\t";
        break;
      case '\n':
        out += "\\n";
        break;
      case '\r':
        out += "\\r";
        break;
      case '\f':
        out += "\\f";
        break;
      case ' ':
        out += (is_key || i == 0) ? "\\ " : " ";
        break;
      case '\\':
      case '=':
      case ':':
      case '#':
      case '!':
        out.push_back('\\');
        out.push_back(c);
        break;
      default:
        out.push_back(c);
    }
  }
  return out;
}

Status Bad(const std::string& path, const std::string& why) {
  return Status::Corruption("meta.properties file " + path + ": " + why);
}

Result<int32_t> RequiredInt(const std::map<std::string, std::string>& props, const std::string& key,
                            const std::string& path) {
  auto it = props.find(key);
  if (it == props.end()) return Bad(path, "failed to find required property " + key);
  std::optional<int32_t> value = ParseJavaInt(it->second);
  if (!value)
    return Bad(path, "failed to parse " + key + " property as an int: '" + it->second + "'");
  return *value;
}

std::string JavaDateString() {
  const std::time_t now = std::time(nullptr);
  std::tm tm_utc{};
  gmtime_r(&now, &tm_utc);
  char buf[64];
  std::strftime(buf, sizeof(buf), "%a %b %d %H:%M:%S UTC %Y", &tm_utc);
  return buf;
}

}  // namespace

Result<std::map<std::string, std::string>> ParseJavaProperties(std::string_view text,
                                                               const std::string& path) {
  std::map<std::string, std::string> props;
  for (const LogicalLine& line : LogicalLines(text)) {
    const std::string_view s = line.text;
    size_t key_end = 0;
    while (key_end < s.size()) {
      const char c = s[key_end];
      if (c == '\\') {
        key_end += 2;
        continue;
      }
      if (c == '=' || c == ':' || IsPropertiesBlank(c)) break;
      ++key_end;
    }
    key_end = std::min(key_end, s.size());
    size_t value_start = key_end;
    while (value_start < s.size() && IsPropertiesBlank(s[value_start])) ++value_start;
    if (value_start < s.size() && (s[value_start] == '=' || s[value_start] == ':')) {
      ++value_start;
      while (value_start < s.size() && IsPropertiesBlank(s[value_start])) ++value_start;
    }
    std::string key;
    std::string value;
    if (!Unescape(s.substr(0, key_end), &key) || !Unescape(s.substr(value_start), &value)) {
      return Status::Corruption("malformed \\uxxxx encoding on line " +
                                std::to_string(line.first_line) + " of properties file " + path);
    }
    props[key] = value;
  }
  return props;
}

Result<MetaProperties> MetaProperties::Parse(std::string_view content, const std::string& path) {
  DARUMA_ASSIGN_OR_RETURN(auto props, ParseJavaProperties(content, path));
  MetaProperties meta;
  if (auto it = props.find("version"); it != props.end()) {
    std::optional<int32_t> version = ParseJavaInt(it->second);
    if (!version) return Bad(path, "invalid version '" + it->second + "'");
    meta.version = *version;
  }
  if (meta.version != 0 && meta.version != 1) {
    return Bad(path, "unknown meta.properties version number " + std::to_string(meta.version));
  }
  if (meta.version == 0) {
    if (props.count("broker.id") != 0) {
      DARUMA_ASSIGN_OR_RETURN(meta.node_id, RequiredInt(props, "broker.id", path));
    }
  } else {
    DARUMA_ASSIGN_OR_RETURN(meta.node_id, RequiredInt(props, "node.id", path));
  }
  if (auto it = props.find("cluster.id"); it != props.end()) meta.cluster_id = it->second;
  if (meta.version == 1 && !meta.cluster_id) return Bad(path, "cluster.id was not found");
  if (auto it = props.find("directory.id"); it != props.end()) {
    Result<Uuid> id = Uuid::FromString(it->second);
    if (!id.ok()) return Bad(path, "directory.id: " + id.status().message());
    meta.directory_id = *id;
  }
  return meta;
}

std::string MetaProperties::Serialize(std::string_view date_comment) const {
  std::string out = "#\n#" + std::string(date_comment) + "\n";
  auto put = [&out](std::string_view key, std::string_view value) {
    out += Escape(key, true) + "=" + Escape(value, false) + "\n";
  };
  put("version", std::to_string(version));
  if (node_id) put(version == 0 ? "broker.id" : "node.id", std::to_string(*node_id));
  if (cluster_id) put("cluster.id", *cluster_id);
  if (directory_id) put("directory.id", directory_id->ToString());
  return out;
}

Result<MetaProperties> MetaProperties::Read(const std::string& path, FileSystem* fs) {
  DARUMA_ASSIGN_OR_RETURN(std::vector<uint8_t> bytes, fs->ReadFile(path));
  return Parse(AsStringView(bytes), path);
}

Status MetaProperties::Write(const std::string& path, FileSystem* fs) const {
  return fs->WriteFileAtomically(path, AsBytes(Serialize(JavaDateString())));
}

namespace {

// Java's Uuid: the big-endian high and low 64 bits.
uint64_t UuidHalf(const Uuid& id, size_t first_byte) {
  uint64_t v = 0;
  for (size_t i = first_byte; i < first_byte + 8; ++i) v = (v << 8) | id.bytes()[i];
  return v;
}

// Kafka's names for the reserved ids it uses (DirectoryId.java).
std::string ReservedName(const Uuid& id) {
  static constexpr const char* kNames[] = {"MIGRATING", "UNASSIGNED", "LOST"};
  const uint64_t low = UuidHalf(id, 8);
  return low < 3 ? kNames[low] : "one of its first 100";
}

}  // namespace

bool IsReservedDirectoryId(const Uuid& id) {
  // Java compares the low half as a signed long: a negative one counts too.
  return UuidHalf(id, 0) == 0 && int64_t(UuidHalf(id, 8)) < 100;
}

std::vector<DirectoryIdProblem> FindDirectoryIdProblems(
    const std::vector<std::pair<std::string, MetaProperties>>& files) {
  std::vector<DirectoryIdProblem> out;
  std::map<Uuid, const std::string*> seen;  // id -> the first file with it
  for (const auto& [path, meta] : files) {
    if (!meta.directory_id) continue;
    const Uuid& id = *meta.directory_id;
    if (IsReservedDirectoryId(id)) {
      out.push_back({path, "directory.id " + id.ToString() + " is an id Kafka reserves (" +
                               ReservedName(id) + "), never a log dir's"});
      continue;  // one finding per file
    }
    auto [it, inserted] = seen.emplace(id, &path);
    if (!inserted) {
      out.push_back({path, "directory.id " + id.ToString() + " is also the directory.id of " +
                               *it->second + ": each log dir needs its own"});
    }
  }
  return out;
}

}  // namespace daruma
