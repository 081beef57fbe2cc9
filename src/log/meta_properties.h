// MetaProperties: `meta.properties` at the root of every log directory (spec §9.8).
//
// Format: a Java .properties file. Reading accepts any valid properties text
// (comment lines starting with '#' or '!', blank lines, '=', ':' or whitespace
// separators, line continuations, \t \n \r \f \uXXXX and \<char> escapes).
// Writing produces what Java's Properties.store does: "#\n#<date>\n" and then
// "key=value" lines (Daruma uses a fixed key order; Kafka's is unspecified).
//
// Keys and versions:
//   version       0 when absent; only 0 and 1 are valid
//   broker.id     v0 only, optional (the node id of a ZooKeeper-mode broker)
//   node.id       v1, required
//   cluster.id    v0 optional, v1 required
//   directory.id  optional, a base64url Uuid
// Other keys are ignored, as Kafka does.
//
// Durability: Write uses WriteFileAtomically (temp file, fsync, rename, §9.2).
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "common/file_system.h"
#include "common/status.h"
#include "log/uuid.h"

namespace daruma {

inline constexpr char kMetaPropertiesFileName[] = "meta.properties";

// Java Properties.load over `text`. kCorruption naming `path` and the line for a
// malformed \uXXXX escape.
Result<std::map<std::string, std::string>> ParseJavaProperties(std::string_view text,
                                                               const std::string& path);

struct MetaProperties {
  int32_t version = 0;
  std::optional<std::string> cluster_id;
  std::optional<int32_t> node_id;  // broker.id (v0) or node.id (v1)
  std::optional<Uuid> directory_id;

  bool operator==(const MetaProperties&) const = default;

  // kCorruption naming `path` for an unknown version, a missing required key
  // or an unparsable value.
  static Result<MetaProperties> Parse(std::string_view content, const std::string& path);
  // `date_comment` is the text of the second comment line (Java's Date.toString()).
  std::string Serialize(std::string_view date_comment) const;

  static Result<MetaProperties> Read(const std::string& path,
                                     FileSystem* fs = FileSystem::Default());
  // Serializes with the current time as the date comment and writes atomically.
  Status Write(const std::string& path, FileSystem* fs = FileSystem::Default()) const;
};

// Kafka's DirectoryId.reserved: its first 100 ids (high 64 bits zero, low 64
// bits below 100 as a signed Java long), among them MIGRATING (the all-zero
// AAAAAAAAAAAAAAAAAAAAAA), UNASSIGNED (...AQ) and LOST (...Ag), which its
// controller uses for replicas not placed in a known dir. Kafka never
// generates one and refuses to start with one in a meta.properties.
bool IsReservedDirectoryId(const Uuid& id);

// What Kafka's MetaPropertiesEnsemble.verify refuses in the directory.id of
// one broker's meta.properties files: a reserved id, or an id two files
// share (a log dir copied whole, meta.properties included). `files` are
// (path, contents) in log-dir order. One finding per file at fault (of two
// that share an id, the later), its `what` naming the id and, for a shared
// one, the earlier file; the caller says what it means for it.
struct DirectoryIdProblem {
  std::string path;
  std::string what;
};
std::vector<DirectoryIdProblem> FindDirectoryIdProblems(
    const std::vector<std::pair<std::string, MetaProperties>>& files);

}  // namespace daruma
