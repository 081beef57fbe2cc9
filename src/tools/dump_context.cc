#include "tools/dump_context.h"

#include <unistd.h>

#include <ostream>

namespace daruma::tools {

void DumpPairList::Add(const std::string& file, int64_t first, int64_t second) {
  for (auto& [name, pairs] : files_) {
    if (name == file) {
      pairs.emplace_back(first, second);
      return;
    }
  }
  files_.push_back({file, {{first, second}}});
}

bool DumpSummary::HasIndexProblems() const {
  return !index_mismatches.empty() || !time_mismatches.empty() || !time_out_of_order.empty() ||
         !time_offset_not_found.empty();
}

namespace {

// Kafka prepends these pairs (Scala `::=`), so they print newest first.
template <typename Line>
void PrintReversed(const DumpPairList& list, std::ostream& err, const char* header, Line line) {
  for (const auto& [file, pairs] : list.files()) {
    err << header << file << "\n";
    for (auto it = pairs.rbegin(); it != pairs.rend(); ++it) line(it->first, it->second);
  }
}

template <typename Line>
void PrintInOrder(const DumpPairList& list, std::ostream& err, const char* header, Line line) {
  for (const auto& [file, pairs] : list.files()) {
    err << header << file << "\n";
    for (const auto& [a, b] : pairs) line(a, b);
  }
}

}  // namespace

void DumpSummary::Print(std::ostream& err) const {
  PrintReversed(index_mismatches, err, "Mismatches in :", [&](int64_t a, int64_t b) {
    err << "  Index offset: " << a << ", log offset: " << b << "\n";
  });
  PrintInOrder(time_mismatches, err, "Found timestamp mismatch in :", [&](int64_t a, int64_t b) {
    err << "  Index timestamp: " << a << ", log timestamp: " << b << "\n";
  });
  PrintInOrder(
      time_out_of_order, err, "Found out of order timestamp in :", [&](int64_t a, int64_t b) {
        err << "  Index timestamp: " << a << ", Previously indexed timestamp: " << b << "\n";
      });
  // Kafka prints this list without the file name.
  for (const auto& [file, pairs] : time_offset_not_found.files()) {
    err << "The following indexed offsets are not found in the log.\n";
    for (const auto& [a, b] : pairs) {
      err << "Indexed offset: " << a << ", found log offset: " << b << "\n";
    }
  }
  PrintReversed(non_consecutive, err, "Non-consecutive offsets in ",
                [&](int64_t a, int64_t b) { err << "  " << a << " is followed by " << b << "\n"; });
}

std::string AbsolutePath(const std::string& path) {
  if (path.starts_with("/")) return path;
  char buf[4096];
  if (::getcwd(buf, sizeof(buf)) == nullptr) return path;
  return std::string(buf) + "/" + path;
}

std::string FileNameOf(const std::string& path) {
  auto slash = path.find_last_of('/');
  return slash == std::string::npos ? path : path.substr(slash + 1);
}

std::string OptionalLongString(bool present, int64_t value) {
  return present ? "OptionalLong[" + std::to_string(value) + "]" : "OptionalLong.empty";
}

}  // namespace daruma::tools
