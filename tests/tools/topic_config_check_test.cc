// `daruma check` and `daruma repair` on daruma-topic-configs.json: each kind
// of damage is a problem naming the file, the byte position and the key;
// repair never rewrites the file, and sets an unparsable one aside only
// within --max-corrupt-bytes.
#include <gtest/gtest.h>

#include <filesystem>
#include <nlohmann/json.hpp>
#include <sstream>

#include "recovery/topic_config_file.h"
#include "support/test_support.h"
#include "tools/check_command.h"
#include "tools/generated_log_dir.h"
#include "tools/repair_command.h"
#include "tools/tool_run.h"

namespace daruma::tools {
namespace {

using namespace testlog;  // NOLINT: test helpers
using daruma::testing::ReadFileToString;
using daruma::testing::TempDir;
using daruma::testing::WriteStringToFile;

// A check's or repair's run with the dir's problems taken from the check's JSON.
struct ConfigRun : ToolRun {
  std::vector<nlohmann::json> problems;  // of the dir
};
class TopicConfigCheckTest : public ::testing::Test {
 protected:
  void SetUp() override { WriteLogDir(dir_); }

  void WriteConfigs(const std::string& text) { WriteStringToFile(file_, text); }

  ConfigRun Check() {
    const TreeState before = SnapshotTree(dir_);
    CheckCommandOptions o;
    o.log_dirs = {dir_};
    o.json_file = tmp_.Join("check.json");
    ConfigRun run{RunCheckQuietly(o), {}};
    for (const auto& p : run.json["logDirs"][0]["problems"]) run.problems.push_back(p);
    EXPECT_EQ(SnapshotTree(dir_), before) << "check changed the log dir";
    return run;
  }

  ConfigRun Repair(int64_t limit) {
    RepairCommandOptions o;
    o.log_dirs = {dir_};
    o.max_corrupt_bytes = limit;
    return ConfigRun{RunRepairQuietly(o), {}};
  }

  int64_t PositionOf(const std::string& text, const std::string& needle) {
    const size_t at = text.find(needle);
    EXPECT_NE(at, std::string::npos) << needle;
    return int64_t(at);
  }

  TempDir tmp_;
  std::string dir_ = tmp_.Join("data");
  std::string file_ = JoinPath(dir_, kTopicConfigsFileName);
};

TEST_F(TopicConfigCheckTest, ValidFileIsClean) {
  WriteConfigs(R"({"version": 1, "generation": 3, "topics": {"t": {"retention.ms": "1000"}}})");
  const ConfigRun run = Check();
  EXPECT_EQ(run.rc, 0) << run.out;
  EXPECT_TRUE(run.problems.empty());
}

TEST_F(TopicConfigCheckTest, UnknownKeyBadValueAndStaleTopicNamedAtTheirKeys) {
  const std::string text =
      "{\"version\": 1, \"generation\": 2, \"topics\": {\n"
      "  \"t\": {\n"
      "    \"segment.bytes\": \"lots\",\n"
      "    \"retention.msec\": \"1000\"\n"
      "  },\n"
      "  \"gone\": {\"retention.ms\": \"1000\"}\n"
      "}}\n";
  WriteConfigs(text);
  const ConfigRun run = Check();
  EXPECT_EQ(run.rc, 1);
  ASSERT_EQ(run.problems.size(), 3u) << run.out;
  for (const auto& p : run.problems) {
    EXPECT_EQ(p["file"], file_);
    EXPECT_EQ(p["operatorOnly"], true);
    EXPECT_NE(p["action"].get<std::string>().find("by hand"), std::string::npos);
  }
  auto find = [&](const std::string& key) {
    for (const auto& p : run.problems) {
      if (p["problem"].get<std::string>().find("key " + key) != std::string::npos) return p;
    }
    ADD_FAILURE() << "no problem about " << key << "\n" << run.out;
    return nlohmann::json();
  };
  const auto bad = find("topics.t.segment.bytes (line 3)");
  EXPECT_EQ(bad["position"], PositionOf(text, "\"segment.bytes\""));
  EXPECT_NE(bad["problem"].get<std::string>().find("bad value"), std::string::npos);
  EXPECT_NE(bad["problem"].get<std::string>().find("lots"), std::string::npos);
  const auto unknown = find("topics.t.retention.msec (line 4)");
  EXPECT_EQ(unknown["position"], PositionOf(text, "\"retention.msec\""));
  EXPECT_NE(unknown["problem"].get<std::string>().find("unknown topic config retention.msec"),
            std::string::npos);
  const auto stale = find("topics.gone (line 6)");
  EXPECT_EQ(stale["position"], PositionOf(text, "\"gone\""));
  EXPECT_NE(stale["problem"].get<std::string>().find("no partition directory"), std::string::npos);
  EXPECT_NE(run.out.find(file_ + " at byte " + std::to_string(PositionOf(text, "\"gone\""))),
            std::string::npos)
      << run.out;

  // Repair never rewrites the file, changes nothing else either (nothing
  // else is wrong), and says an operator must fix it.
  const TreeState before = SnapshotTree(dir_);
  const ConfigRun repair = Repair(-1);
  EXPECT_EQ(repair.rc, 1);
  EXPECT_EQ(SnapshotTree(dir_), before);
  EXPECT_NE(repair.out.find("[left for an operator] " + file_), std::string::npos) << repair.out;
  EXPECT_NE(repair.err.find("3 problems are left for an operator"), std::string::npos)
      << repair.err;
}

TEST_F(TopicConfigCheckTest, ValueThatIsNotAStringIsNamed) {
  WriteConfigs(R"({"version": 1, "generation": 1, "topics": {"t": {"retention.ms": 1000}}})");
  const ConfigRun run = Check();
  EXPECT_EQ(run.rc, 1);
  ASSERT_EQ(run.problems.size(), 1u) << run.out;
  EXPECT_NE(run.problems[0]["problem"].get<std::string>().find(
                "field topics.t.retention.ms: expected a string, found number"),
            std::string::npos)
      << run.problems[0].dump();
}

TEST_F(TopicConfigCheckTest, UnparsableFileIsSetAsideOnlyWithinTheLimit) {
  const std::string text = "{\"version\": 1,\n \"generation\": 1,\n \"topics\": {\"t\": [}\n";
  WriteConfigs(text);
  ConfigRun run = Check();
  EXPECT_EQ(run.rc, 1);
  ASSERT_EQ(run.problems.size(), 1u) << run.out;
  const auto& p = run.problems[0];
  EXPECT_EQ(p["file"], file_);
  EXPECT_EQ(p["position"], PositionOf(text, "[}") + 1);  // where the syntax breaks
  EXPECT_NE(p["problem"].get<std::string>().find("not valid JSON"), std::string::npos);
  EXPECT_NE(p["problem"].get<std::string>().find("(line 3)"), std::string::npos) << p.dump();
  EXPECT_FALSE(p.contains("operatorOnly"));

  // Default limit 0 and any limit below the file's size: refused, unchanged.
  for (int64_t limit : {int64_t{0}, int64_t(text.size()) - 1}) {
    const TreeState before = SnapshotTree(dir_);
    const ConfigRun refused = Repair(limit);
    EXPECT_EQ(refused.rc, 1);
    EXPECT_NE(refused.err.find(file_ + " does not parse"), std::string::npos) << refused.err;
    EXPECT_NE(refused.err.find("--max-corrupt-bytes " + std::to_string(text.size())),
              std::string::npos)
        << refused.err;
    EXPECT_EQ(SnapshotTree(dir_), before);
  }

  const ConfigRun repaired = Repair(int64_t(text.size()));
  ASSERT_EQ(repaired.rc, 0) << repaired.out << repaired.err;
  EXPECT_FALSE(std::filesystem::exists(file_));
  EXPECT_EQ(ReadFileToString(file_ + ".corrupt"), text);  // kept byte for byte
  EXPECT_NE(repaired.err.find("set aside " + file_ + ".corrupt"), std::string::npos);
  run = Check();
  EXPECT_EQ(run.rc, 0) << run.out;
}

}  // namespace
}  // namespace daruma::tools
