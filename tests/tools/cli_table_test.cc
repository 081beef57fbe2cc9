// The command line as a user or a script meets it (issue 18): every
// subcommand x (no such dir, empty dir, wrong file kind, bad --set value,
// unknown --set key) -> the exit code and the first line of stderr, from the
// real `daruma` binary. One exit-code rule everywhere: 0 success, 1 problems
// found or left, 2 could not run (usage, configuration, missing or wrong-kind
// input); README "Commands".
//
// `serve` on a missing or empty dir does start (Kafka creates a missing log
// dir): those cases bind port 0, wait for "serving", send SIGTERM and expect
// a clean exit, so no broker is left running.
#include <gtest/gtest.h>

#include <filesystem>
#include <ostream>
#include <string>
#include <vector>

#include "cli_process.h"
#include "support/test_support.h"

namespace daruma::tools {
namespace {

using ::daruma::testing::TempDir;
using ::daruma::testing::WriteStringToFile;
using testcli::CliResult;
using testcli::RunDaruma;

enum class Input { kNoSuchDir, kEmptyDir, kWrongFileKind, kBadSetValue, kUnknownSetKey };

const char* InputName(Input input) {
  switch (input) {
    case Input::kNoSuchDir:
      return "NoSuchDir";
    case Input::kEmptyDir:
      return "EmptyDir";
    case Input::kWrongFileKind:
      return "WrongFileKind";
    case Input::kBadSetValue:
      return "BadSetValue";
    case Input::kUnknownSetKey:
      return "UnknownSetKey";
  }
  return "?";
}

struct CliCase {
  const char* command;
  Input input;
  int rc;
  // The first line of stderr, after replacing {missing}, {empty}, {file} and
  // {tmp} with the case's paths. A trailing "..." matches any rest.
  const char* first_err_line;
};

// Readable test names ("recover_NoSuchDir") instead of the bytes of the struct.
void PrintTo(const CliCase& c, std::ostream* os) {
  *os << c.command << " " << InputName(c.input);
}

std::string CaseName(const ::testing::TestParamInfo<CliCase>& info) {
  return std::string(info.param.command) + "_" + InputName(info.param.input);
}

std::string Replace(std::string s, const std::string& from, const std::string& to) {
  for (size_t pos = s.find(from); pos != std::string::npos; pos = s.find(from, pos + to.size())) {
    s.replace(pos, from.size(), to);
  }
  return s;
}

class CliTableTest : public ::testing::TestWithParam<CliCase> {
 protected:
  void SetUp() override {
    std::filesystem::create_directories(Empty());
    WriteStringToFile(File(), "not a log dir\n");
  }

  std::string Missing() const { return tmp_.Join("no-such-dir"); }
  std::string Empty() const { return tmp_.Join("empty"); }
  std::string File() const { return tmp_.Join("notes.txt"); }

  std::string Expand(const std::string& s) const {
    std::string out = Replace(s, "{missing}", Missing());
    out = Replace(out, "{empty}", Empty());
    out = Replace(out, "{file}", File());
    return Replace(out, "{tmp}", tmp_.path());
  }

  // The arguments of a log-dir subcommand (recover, check, repair).
  std::vector<std::string> LogDirArgs(const std::string& command, Input input) const {
    switch (input) {
      case Input::kNoSuchDir:
        return {command, "--log-dirs", Missing()};
      case Input::kEmptyDir:
        return {command, "--log-dirs", Empty()};
      case Input::kWrongFileKind:
        return {command, "--log-dirs", File()};
      case Input::kBadSetValue:
        return {command, "--log-dirs", Empty(), "--set", "log.segment.bytes=big"};
      case Input::kUnknownSetKey:
        return {command, "--log-dirs", Empty(), "--set", "no.such.key=1"};
    }
    return {};
  }

  std::vector<std::string> DumpArgs(Input input) const {
    switch (input) {
      case Input::kNoSuchDir:
        return {"dump", "--files", Missing() + "/00000000000000000000.log"};
      case Input::kEmptyDir:
        return {"dump", "--files", Empty()};
      case Input::kWrongFileKind:
        return {"dump", "--files", File()};
      case Input::kBadSetValue:
        return {"dump", "--files", File(), "--set", "log.segment.bytes=big"};
      case Input::kUnknownSetKey:
        return {"dump", "--files", File(), "--set", "no.such.key=1"};
    }
    return {};
  }

  // A server.properties on ports 0 (nothing else can collide) with `log_dir`.
  std::string ServeConfig(const std::string& log_dir) const {
    const std::string path = tmp_.Join("server.properties");
    WriteStringToFile(path, "log.dirs=" + log_dir +
                                "\nlisteners=PLAINTEXT://127.0.0.1:0\n"
                                "daruma.http.listener=127.0.0.1:0\n");
    return path;
  }

  std::vector<std::string> ServeArgs(Input input) const {
    switch (input) {
      case Input::kNoSuchDir:
        return {"serve", "--config", ServeConfig(Missing() + "/data")};
      case Input::kEmptyDir:
        return {"serve", "--config", ServeConfig(Empty())};
      case Input::kWrongFileKind:
        return {"serve", "--config", ServeConfig(File())};
      case Input::kBadSetValue:
        return {"serve", "--config", ServeConfig(Empty()), "--set", "log.segment.bytes=big"};
      case Input::kUnknownSetKey:
        return {"serve", "--config", ServeConfig(Empty()), "--set", "no.such.key=1"};
    }
    return {};
  }

  CliResult Run(const CliCase& c) {
    const std::string command = c.command;
    if (command == "dump") return RunDaruma(tmp_.path(), DumpArgs(c.input));
    if (command != "serve") return RunDaruma(tmp_.path(), LogDirArgs(command, c.input));
    testcli::CliProcess serve(tmp_.path(), ServeArgs(c.input));
    EXPECT_TRUE(serve.started());
    // A broker that does start is stopped as an operator would.
    if (serve.WaitForErr("serving Kafka clients", 60)) serve.Signal(SIGTERM);
    return serve.Finish(60);
  }

  TempDir tmp_;
};

TEST_P(CliTableTest, ExitCodeAndFirstStderrLine) {
  const CliCase& c = GetParam();
  const CliResult r = Run(c);
  EXPECT_EQ(r.rc, c.rc) << "stdout:\n" << r.out << "stderr:\n" << r.err;
  const std::string expected = Expand(c.first_err_line);
  if (expected.ends_with("...")) {
    EXPECT_TRUE(r.FirstErrLine().starts_with(expected.substr(0, expected.size() - 3)))
        << "first stderr line: " << r.FirstErrLine() << "\nexpected: " << expected;
  } else {
    EXPECT_EQ(r.FirstErrLine(), expected) << "stderr:\n" << r.err;
  }
  // An error is said once: one line, then at most CLI11's pointer to --help.
  if (c.rc == 2) {
    EXPECT_EQ(r.out, "") << "a command that could not run prints no summary";
  }
}

// clang-format off
INSTANTIATE_TEST_SUITE_P(
    EverySubcommand, CliTableTest,
    ::testing::Values(
        CliCase{"dump", Input::kNoSuchDir, 2,
                "daruma dump: {missing}/00000000000000000000.log: no such file"},
        CliCase{"dump", Input::kEmptyDir, 2,
                "daruma dump: {empty}: is a directory; pass the files to dump "
                "(segments, indexes, snapshots, checkpoints)"},
        CliCase{"dump", Input::kWrongFileKind, 2,
                "daruma dump: {file}: not a file dump can read ..."},
        // dump reads files, not a configuration: --set is a usage error.
        CliCase{"dump", Input::kBadSetValue, 2,
                "The following arguments were not expected: log.segment.bytes=big --set"},
        CliCase{"dump", Input::kUnknownSetKey, 2,
                "The following arguments were not expected: no.such.key=1 --set"},

        CliCase{"recover", Input::kNoSuchDir, 2,
                "daruma recover: log dir {missing}: no such directory"},
        CliCase{"recover", Input::kEmptyDir, 0, ""},
        CliCase{"recover", Input::kWrongFileKind, 2,
                "daruma recover: log dir {file}: not a directory"},
        CliCase{"recover", Input::kBadSetValue, 2, "daruma recover: invalid value \"big\" for "
                "log.segment.bytes: expected an integer"},
        CliCase{"recover", Input::kUnknownSetKey, 2, "daruma recover: --set no.such.key=1: "
                "unknown key \"no.such.key\": not a Daruma or Kafka broker setting (the nearest is "
                "\"node.id\")"},

        CliCase{"check", Input::kNoSuchDir, 2,
                "daruma check: log dir {missing}: no such directory"},
        CliCase{"check", Input::kEmptyDir, 0, ""},
        CliCase{"check", Input::kWrongFileKind, 2,
                "daruma check: log dir {file}: not a directory"},
        CliCase{"check", Input::kBadSetValue, 2, "daruma check: invalid value \"big\" for "
                "log.segment.bytes: expected an integer"},
        CliCase{"check", Input::kUnknownSetKey, 2, "daruma check: --set no.such.key=1: "
                "unknown key \"no.such.key\": not a Daruma or Kafka broker setting (the nearest is "
                "\"node.id\")"},

        CliCase{"repair", Input::kNoSuchDir, 2,
                "daruma repair: log dir {missing}: no such directory"},
        CliCase{"repair", Input::kEmptyDir, 0, ""},
        CliCase{"repair", Input::kWrongFileKind, 2,
                "daruma repair: log dir {file}: not a directory"},
        CliCase{"repair", Input::kBadSetValue, 2, "daruma repair: invalid value \"big\" for "
                "log.segment.bytes: expected an integer"},
        CliCase{"repair", Input::kUnknownSetKey, 2, "daruma repair: --set no.such.key=1: "
                "unknown key \"no.such.key\": not a Daruma or Kafka broker setting (the nearest is "
                "\"node.id\")"},

        // serve creates a missing log dir (parents too), as Kafka does.
        CliCase{"serve", Input::kNoSuchDir, 0, "daruma serve: HTTP /health and /metrics on ..."},
        CliCase{"serve", Input::kEmptyDir, 0, "daruma serve: HTTP /health and /metrics on ..."},
        CliCase{"serve", Input::kWrongFileKind, 2,
                "daruma serve: log dir {file}: not a directory"},
        CliCase{"serve", Input::kBadSetValue, 2, "daruma serve: invalid value \"big\" for "
                "log.segment.bytes: expected an integer"},
        CliCase{"serve", Input::kUnknownSetKey, 2, "daruma serve: --set no.such.key=1: "
                "unknown key \"no.such.key\": not a Daruma or Kafka broker setting (the nearest is "
                "\"node.id\")"}),
    CaseName);
// clang-format on

// What the summaries say beside the exit code, for the cases that ran.
TEST(CliTableSummaryTest, EmptyDirSummariesSayNothingHappened) {
  TempDir tmp;
  const std::string empty = tmp.Join("empty");
  std::filesystem::create_directories(empty);
  CliResult r = RunDaruma(tmp.path(), {"recover", "--log-dirs", empty});
  EXPECT_EQ(r.rc, 0) << r.err;
  EXPECT_NE(r.out.find(empty + "  empty log dir: nothing to recover"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("Nothing changed"), std::string::npos) << r.out;

  r = RunDaruma(tmp.path(), {"check", "--log-dirs", empty});
  EXPECT_EQ(r.rc, 0) << r.err;
  EXPECT_NE(r.out.find("Checked 0 partitions"), std::string::npos) << r.out;

  r = RunDaruma(tmp.path(), {"repair", "--log-dirs", empty});
  EXPECT_EQ(r.rc, 0) << r.err;
  EXPECT_EQ(r.out, "Nothing to repair.\n");
}

TEST(CliTableSummaryTest, MissingDirIsNotCreatedByTheTools) {
  TempDir tmp;
  const std::string missing = tmp.Join("typo/data");
  for (const char* command : {"recover", "check", "repair"}) {
    SCOPED_TRACE(command);
    const CliResult r = RunDaruma(tmp.path(), {command, "--log-dirs", missing});
    EXPECT_EQ(r.rc, 2);
    EXPECT_EQ(r.err,
              std::string("daruma ") + command + ": log dir " + missing + ": no such directory\n");
    EXPECT_FALSE(std::filesystem::exists(tmp.Join("typo")));
  }
}

TEST(CliTableSummaryTest, ThreadsOutOfRangeIsSaidInWords) {
  TempDir tmp;
  for (const char* command : {"recover", "check", "repair"}) {
    SCOPED_TRACE(command);
    const CliResult r =
        RunDaruma(tmp.path(), {command, "--log-dirs", tmp.path(), "--threads", "0"});
    EXPECT_EQ(r.rc, 2);
    EXPECT_EQ(r.FirstErrLine(), "--threads: must be a whole number from 1 to 1024, not \"0\"");
    EXPECT_LT(r.err.size(), 200u) << r.err;
  }
}

TEST(CliTableSummaryTest, HelpShowsDefaultsAndTheExitCodeRule) {
  TempDir tmp;
  for (const char* command : {"dump", "recover", "check", "repair", "serve"}) {
    SCOPED_TRACE(command);
    const CliResult r = RunDaruma(tmp.path(), {command, "--help"});
    EXPECT_EQ(r.rc, 0);
    EXPECT_NE(r.out.find("Exit codes: 0 "), std::string::npos) << r.out;
    EXPECT_NE(r.out.find("Exit codes, the same for every subcommand"), std::string::npos) << r.out;
  }
  const CliResult check = RunDaruma(tmp.path(), {"check", "--help"});
  EXPECT_NE(check.out.find("--threads INT:1..1024=1 "), std::string::npos) << check.out;
  const CliResult repair = RunDaruma(tmp.path(), {"repair", "--help"});
  EXPECT_NE(repair.out.find("--max-corrupt-bytes INT=0 "), std::string::npos) << repair.out;
}

TEST(CliTableSummaryTest, RecoverTakesConfigOrKafkaConfigNotBoth) {
  TempDir tmp;
  const std::string config = tmp.Join("server.properties");
  WriteStringToFile(config, "log.dirs=" + tmp.path() + "\n");
  const CliResult both =
      RunDaruma(tmp.path(), {"recover", "--config", config, "--kafka-config", config});
  EXPECT_EQ(both.rc, 2);
  EXPECT_NE(both.err.find("excludes"), std::string::npos) << both.err;
  const CliResult kafka = RunDaruma(tmp.path(), {"recover", "--kafka-config", config, "--full"});
  EXPECT_EQ(kafka.rc, 0) << kafka.err;
  EXPECT_NE(kafka.out.find("Kafka broker config " + config + ": 1 log dir, 1 recovery thread(s)"),
            std::string::npos)
      << kafka.out;
  EXPECT_NE(kafka.out.find("Full rescan: every segment"), std::string::npos) << kafka.out;
}

TEST(CliTableSummaryTest, VersionNamesTheCommitAndBuildType) {
  TempDir tmp;
  const CliResult r = RunDaruma(tmp.path(), {"--version"});
  EXPECT_EQ(r.rc, 0);
  EXPECT_TRUE(r.out.starts_with("daruma 0.")) << r.out;
  EXPECT_NE(r.out.find("commit "), std::string::npos) << r.out;
  EXPECT_NE(r.out.find(" build)"), std::string::npos) << r.out;
}

TEST(CliTableSummaryTest, UnknownKeyInAFileIsAWarningNamingTheLine) {
  TempDir tmp;
  const std::string config = tmp.Join("server.properties");
  WriteStringToFile(config, "log.dirs=" + tmp.path() +
                                "\nzookeeper.connect=localhost:2181\n"
                                "log.segment.byte=1024\n");
  const CliResult r = RunDaruma(tmp.path(), {"check", "--config", config});
  EXPECT_EQ(r.rc, 0) << r.err;
  EXPECT_EQ(r.err, "daruma check: warning: " + config +
                       ":3: unknown key \"log.segment.byte\" (did you mean "
                       "\"log.segment.bytes\"?); ignored\n");
}

}  // namespace
}  // namespace daruma::tools
