#include "log/topic_partition.h"

#include <algorithm>
#include <charconv>

#include "log/checkpoint_text.h"
#include "log/log_file_names.h"

namespace daruma {
namespace {

constexpr std::string_view kDeleteDirSuffix = "-delete";
constexpr std::string_view kFutureDirSuffix = "-future";
constexpr std::string_view kStrayDirSuffix = "-stray";
constexpr size_t kMaxDirNameLength = 255;

bool IsLegalTopicChar(char c) {
  return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '.' ||
         c == '_' || c == '-';
}

bool HasWhitespace(std::string_view s) {
  return std::any_of(s.begin(), s.end(), IsJavaWhitespace);
}

// ^(\S+)-(\S+)\.(\S+)<suffix>$ : no whitespace, and some '-' followed later by
// a '.' with at least one character around each.
bool MatchesSuffixedPattern(std::string_view name, std::string_view suffix) {
  std::string_view body = name.substr(0, name.size() - suffix.size());
  if (body.empty() || HasWhitespace(body)) return false;
  const size_t dash = body.find('-', 1);
  if (dash == std::string_view::npos) return false;
  const size_t dot = body.rfind('.');
  return dot != std::string_view::npos && dot >= dash + 2 && dot + 1 < body.size();
}

Status BadDirName(std::string_view name, const std::string& why) {
  return Status::InvalidArgument("found directory '" + std::string(name) +
                                 "', which is not in the form of topic-partition or "
                                 "topic-partition.uniqueId-delete/-future/-stray: " +
                                 why +
                                 " (Kafka's log directories should only contain Kafka topic data)");
}

std::string CappedDirName(const TopicPartition& tp, std::string_view unique_id,
                          std::string_view suffix) {
  // Built by appends: g++ 12 at -O3 misreads `"-" + std::string&&` as an
  // overlapping memcpy (-Wrestrict, GCC bug 105329).
  std::string tail = "-";
  tail += std::to_string(tp.partition);
  tail += '.';
  tail += unique_id;
  tail += suffix;
  const size_t room = tail.size() < kMaxDirNameLength ? kMaxDirNameLength - tail.size() : 0;
  return tp.topic.substr(0, std::min(tp.topic.size(), room)) + tail;
}

}  // namespace

Status ValidateTopicName(std::string_view topic) {
  if (topic.empty()) return Status::InvalidArgument("topic name is empty");
  if (topic == "." || topic == "..") {
    return Status::InvalidArgument("topic name cannot be '.' or '..'");
  }
  if (topic.size() > kMaxTopicNameLength) {
    return Status::InvalidArgument("topic name '" + std::string(topic) + "' is " +
                                   std::to_string(topic.size()) + " characters, the maximum is " +
                                   std::to_string(kMaxTopicNameLength));
  }
  for (size_t i = 0; i < topic.size(); ++i) {
    if (!IsLegalTopicChar(topic[i])) {
      return Status::InvalidArgument("topic name '" + std::string(topic) +
                                     "' has an illegal character at position " + std::to_string(i) +
                                     ", legal are [a-zA-Z0-9._-]");
    }
  }
  return Status::Ok();
}

Result<PartitionDirName> ParseTopicPartitionDirName(std::string_view name) {
  if (name.empty()) return BadDirName(name, "empty name");
  if (name.find_first_of(std::string_view("/\0", 2)) != std::string_view::npos) {
    return BadDirName(name, "a directory name cannot contain '/' or NUL");
  }
  if (name.find('-') == std::string_view::npos) return BadDirName(name, "no '-'");
  PartitionDirName out;
  std::string_view base = name;
  struct {
    std::string_view suffix;
    DirKind kind;
  } const kinds[] = {{kDeleteDirSuffix, DirKind::kDelete},
                     {kFutureDirSuffix, DirKind::kFuture},
                     {kStrayDirSuffix, DirKind::kStray}};
  for (const auto& k : kinds) {
    if (!HasSuffix(name, k.suffix)) continue;
    if (!MatchesSuffixedPattern(name, k.suffix)) {
      return BadDirName(name, "expected topic-partition.uniqueId" + std::string(k.suffix));
    }
    const size_t dot = name.rfind('.');
    out.kind = k.kind;
    out.unique_id = std::string(name.substr(dot + 1, name.size() - k.suffix.size() - dot - 1));
    base = name.substr(0, dot);
    break;
  }
  const size_t dash = base.rfind('-');
  if (dash == std::string_view::npos) return BadDirName(name, "no '-' before the unique id");
  std::string_view topic = base.substr(0, dash);
  std::string_view partition = base.substr(dash + 1);
  if (topic.empty()) return BadDirName(name, "empty topic");
  if (partition.empty()) return BadDirName(name, "empty partition");
  if (Status st = ValidateTopicName(topic); !st.ok()) return BadDirName(name, st.message());
  int32_t number = 0;
  auto [ptr, ec] = std::from_chars(partition.data(), partition.data() + partition.size(), number);
  if (partition.front() == '-' || ec != std::errc() || ptr != partition.data() + partition.size()) {
    return BadDirName(name,
                      "partition '" + std::string(partition) + "' is not a non-negative int32");
  }
  out.tp = TopicPartition{std::string(topic), number};
  return out;
}

std::string LogDirName(const TopicPartition& tp) {
  return tp.ToString();
}

std::string DeleteDirName(const TopicPartition& tp, std::string_view unique_id) {
  return CappedDirName(tp, unique_id, kDeleteDirSuffix);
}

std::string FutureDirName(const TopicPartition& tp, std::string_view unique_id) {
  return tp.ToString() + "." + std::string(unique_id) + std::string(kFutureDirSuffix);
}

std::string StrayDirName(const TopicPartition& tp, std::string_view unique_id) {
  return CappedDirName(tp, unique_id, kStrayDirSuffix);
}

}  // namespace daruma
