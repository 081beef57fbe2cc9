// A strict reader of the Prometheus text exposition format (0.0.4), for tests
// of `/metrics`: it returns every rule the text breaks, so a test can assert
// the list is empty and print it when it is not.
//
// Rules checked (what Prometheus' own parser rejects or silently mangles):
// - `# HELP name text` and `# TYPE name type` at most once per family, before
//   its first sample; type is counter, gauge, histogram, summary or untyped.
// - Sample lines `name{l="v",...} value [timestamp]`: metric and label names
//   well formed, label values quoted with only \\, \" and \n escapes, no label
//   twice, value a float (or NaN, +Inf, -Inf), timestamp an integer.
// - The samples of one family are contiguous (a histogram family X owns
//   X_bucket, X_sum and X_count; a summary X, X_sum and X_count).
// - No two samples with the same name and label set (in any order).
// - Every histogram _bucket sample has an `le` label.
// - Every family with a TYPE has a HELP (Daruma documents each family).
#pragma once

#include <algorithm>
#include <cstdlib>
#include <map>
#include <set>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace daruma::broker::testing {

struct PrometheusSample {
  std::string name;
  std::vector<std::pair<std::string, std::string>> labels;  // unescaped values
  double value = 0;
};

struct PrometheusParse {
  std::vector<std::string> errors;  // empty: the text is valid
  std::vector<PrometheusSample> samples;
  std::map<std::string, std::string> types;  // family -> type
};

namespace prometheus_detail {

inline bool IsNameStart(char c, bool colon) {
  return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_' || (colon && c == ':');
}
inline bool IsNameChar(char c, bool colon) {
  return IsNameStart(c, colon) || (c >= '0' && c <= '9');
}

// Reads a metric (colon = true) or label name at `pos`; empty on failure.
inline std::string ReadName(std::string_view line, size_t& pos, bool colon) {
  const size_t start = pos;
  if (pos >= line.size() || !IsNameStart(line[pos], colon)) return {};
  while (pos < line.size() && IsNameChar(line[pos], colon)) ++pos;
  return std::string(line.substr(start, pos - start));
}

inline bool ParseFloat(std::string_view text, double* out) {
  if (text == "NaN" || text == "+Inf" || text == "-Inf") {
    *out = text == "NaN" ? 0 : (text == "+Inf" ? 1e308 : -1e308);
    return true;
  }
  if (text.empty()) return false;
  const std::string s(text);
  char* end = nullptr;
  *out = std::strtod(s.c_str(), &end);
  // strtod also takes "inf", "nan" and hex floats; the format does not.
  const bool plain = s.find_first_not_of("0123456789+-.eE") == std::string::npos;
  return end == s.c_str() + s.size() && plain;
}

// The family a sample name belongs to, given the types declared so far.
inline std::string FamilyOf(const std::string& name, const std::map<std::string, std::string>& t) {
  for (std::string_view suffix : {"_bucket", "_sum", "_count"}) {
    if (name.size() <= suffix.size() || name.compare(name.size() - suffix.size(), suffix.size(),
                                                     suffix.data(), suffix.size()) != 0) {
      continue;
    }
    const std::string base = name.substr(0, name.size() - suffix.size());
    auto it = t.find(base);
    if (it == t.end()) continue;
    if (it->second == "histogram") return base;
    if (it->second == "summary" && suffix != "_bucket") return base;
  }
  return name;
}

}  // namespace prometheus_detail

inline PrometheusParse ParsePrometheusText(std::string_view text) {
  using namespace prometheus_detail;
  PrometheusParse r;
  std::set<std::string> helped, sampled_families, finished_families;
  std::set<std::string> series;  // name + sorted labels
  std::string current_family;
  size_t line_no = 0;
  auto error = [&](const std::string& what) {
    r.errors.push_back("line " + std::to_string(line_no) + ": " + what);
  };
  if (!text.empty() && text.back() != '\n') {
    r.errors.push_back("the text does not end with a newline");
  }
  size_t begin = 0;
  while (begin < text.size()) {
    size_t end = text.find('\n', begin);
    if (end == std::string_view::npos) end = text.size();
    const std::string_view line = text.substr(begin, end - begin);
    begin = end + 1;
    ++line_no;
    if (line.empty()) continue;
    if (line[0] == '#') {
      size_t pos = 1;
      while (pos < line.size() && line[pos] == ' ') ++pos;
      const bool help = line.substr(pos, 5) == "HELP ";
      const bool type = line.substr(pos, 5) == "TYPE ";
      if (!help && !type) continue;  // an ordinary comment
      pos += 5;
      const std::string name = ReadName(line, pos, true);
      if (name.empty()) {
        error("bad metric name in " + std::string(line));
        continue;
      }
      if (sampled_families.count(name) != 0) error(name + ": HELP/TYPE after its samples");
      if (help) {
        if (!helped.insert(name).second) error(name + ": second HELP");
        continue;
      }
      if (pos >= line.size() || line[pos] != ' ') {
        error(name + ": TYPE without a type");
        continue;
      }
      const std::string kind(line.substr(pos + 1));
      if (kind != "counter" && kind != "gauge" && kind != "histogram" && kind != "summary" &&
          kind != "untyped") {
        error(name + ": unknown type \"" + kind + "\"");
      }
      if (!r.types.emplace(name, kind).second) error(name + ": second TYPE");
      continue;
    }
    PrometheusSample sample;
    size_t pos = 0;
    sample.name = ReadName(line, pos, true);
    if (sample.name.empty()) {
      error("bad metric name: " + std::string(line));
      continue;
    }
    bool ok = true;
    if (pos < line.size() && line[pos] == '{') {
      ++pos;
      while (ok && pos < line.size() && line[pos] != '}') {
        std::string label = ReadName(line, pos, false);
        if (label.empty() || pos + 1 >= line.size() || line[pos] != '=' || line[pos + 1] != '"') {
          ok = false;
          break;
        }
        pos += 2;
        std::string value;
        while (ok && pos < line.size() && line[pos] != '"') {
          if (line[pos] == '\\') {
            const char next = pos + 1 < line.size() ? line[pos + 1] : '\0';
            if (next == '\\' || next == '"') {
              value += next;
            } else if (next == 'n') {
              value += '\n';
            } else {
              ok = false;
            }
            pos += 2;
          } else {
            value += line[pos++];
          }
        }
        if (!ok || pos >= line.size()) {
          ok = false;
          break;
        }
        ++pos;  // closing quote
        sample.labels.emplace_back(std::move(label), std::move(value));
        if (pos < line.size() && line[pos] == ',') ++pos;
      }
      if (!ok || pos >= line.size()) {
        error("bad label set: " + std::string(line));
        continue;
      }
      ++pos;  // '}'
    }
    if (pos >= line.size() || line[pos] != ' ') {
      error("no value: " + std::string(line));
      continue;
    }
    const std::string_view rest = line.substr(pos + 1);
    const size_t space = rest.find(' ');
    if (!ParseFloat(rest.substr(0, space), &sample.value)) {
      error("bad value: " + std::string(line));
    }
    if (space != std::string_view::npos) {
      const std::string_view ts = rest.substr(space + 1);
      if (ts.empty() || ts.find_first_not_of("-0123456789") != std::string_view::npos) {
        error("bad timestamp: " + std::string(line));
      }
    }
    std::vector<std::pair<std::string, std::string>> sorted = sample.labels;
    std::sort(sorted.begin(), sorted.end());
    std::string key = sample.name;
    for (size_t i = 0; i < sorted.size(); ++i) {
      if (i > 0 && sorted[i].first == sorted[i - 1].first) {
        error(sample.name + ": label " + sorted[i].first + " twice");
      }
      key += "\x1f" + sorted[i].first + "=" + sorted[i].second;
    }
    if (!series.insert(key).second) error("duplicate series: " + std::string(line));
    const std::string family = FamilyOf(sample.name, r.types);
    if (family != current_family) {
      if (finished_families.count(family) != 0) {
        error(family + ": samples not contiguous: " + std::string(line));
      }
      if (!current_family.empty()) finished_families.insert(current_family);
      current_family = family;
    }
    sampled_families.insert(family);
    if (r.types.count(family) != 0 && r.types.at(family) == "histogram" &&
        sample.name == family + "_bucket" &&
        std::none_of(sample.labels.begin(), sample.labels.end(),
                     [](const auto& l) { return l.first == "le"; })) {
      error(family + ": bucket without le: " + std::string(line));
    }
    r.samples.push_back(std::move(sample));
  }
  for (const auto& [family, type] : r.types) {
    if (helped.count(family) == 0) r.errors.push_back(family + ": TYPE without HELP");
  }
  return r;
}

}  // namespace daruma::broker::testing
