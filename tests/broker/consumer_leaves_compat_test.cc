// The README's first-user sequence that killed `daruma serve` with SIGPIPE
// (issue 18), with the real binary and real kcat: consume a topic to its end
// (`kcat -C -e -o beginning`, which leaves while its next fetch is parked),
// produce to it within half a second, several times over. The broker must
// still be serving afterwards, and stop on SIGTERM with exit code 0 after a
// clean shutdown; then a restart must not report an unclean shutdown.
#include <gtest/gtest.h>
#include <signal.h>
#include <unistd.h>

#include <cstdlib>
#include <string>

#include "daruma_process.h"
#include "support/test_support.h"

namespace daruma::broker {
namespace {

using daruma::testing::TempDir;
using testing::DarumaProcess;
using testing::FindOnPath;
using testing::Shell;

// Why these tests cannot run here ("" when they can): the binary, and kcat
// when `need_kcat`.
std::string MissingTool(bool need_kcat) {
  if (::access(testing::DarumaBinary().c_str(), X_OK) != 0) {
    return testing::DarumaBinary() + " not built";
  }
  if (need_kcat && FindOnPath("kcat").empty()) return "kcat not installed (apt-get install kcat)";
  return "";
}

#define DARUMA_SKIP_WITHOUT(need_kcat)                                          \
  do {                                                                          \
    if (const std::string missing = MissingTool(need_kcat); !missing.empty()) { \
      GTEST_SKIP() << "SKIPPED: " << missing;                                   \
    }                                                                           \
  } while (0)

TEST(ConsumerLeavesCompat, KcatConsumeToTheEndThenProduceKeepsTheBrokerServing) {
  DARUMA_SKIP_WITHOUT(/*need_kcat=*/true);
  const std::string kcat = FindOnPath("kcat");
  TempDir dir;
  DarumaProcess broker(dir.path(), "num.partitions=1");
  ASSERT_TRUE(broker.Start());
  ASSERT_TRUE(broker.WaitServing()) << broker.Log();
  const std::string b = " -b " + broker.bootstrap() + " -t readme -q ";
  ASSERT_EQ(Shell("echo first | " + kcat + " -P" + b), 0) << broker.Log();
  for (int round = 0; round < 5; ++round) {
    // The consumer reads to the end and exits while its next fetch is
    // parked; the produce 0-0.4 s later wakes that fetch.
    const std::string sequence = kcat + " -C -e -o beginning" + b + ">/dev/null & sleep 0." +
                                 std::to_string(round * 1) + "; echo m" + std::to_string(round) +
                                 " | " + kcat + " -P" + b + "; wait";
    EXPECT_EQ(Shell("bash -c '" + sequence + "'"), 0) << "round " << round;
    ASSERT_TRUE(broker.WaitServing(5)) << "round " << round << ": the broker died\n"
                                       << broker.Log();
  }
  const std::string out = dir.path() + "/consumed.txt";
  ASSERT_EQ(Shell(kcat + " -C -e -o beginning" + b + ">" + out), 0);
  EXPECT_EQ(daruma::testing::ReadFileToString(out), "first\nm0\nm1\nm2\nm3\nm4\n");
  EXPECT_EQ(broker.Stop(), 0) << broker.Log();
  EXPECT_NE(broker.Log().find("clean shutdown complete"), std::string::npos) << broker.Log();

  DarumaProcess again(dir.path(), "num.partitions=1");
  ASSERT_TRUE(again.Start());
  ASSERT_TRUE(again.WaitServing()) << again.Log();
  EXPECT_EQ(again.Log().find("unclean"), std::string::npos) << again.Log();
  EXPECT_EQ(again.Stop(), 0);
}

// A broker killed outright says so at its next start, in its first lines,
// with the number of unclean starts left before the crash-loop guard trips.
TEST(ConsumerLeavesCompat, TheStartAfterACrashSaysSoAndHowManyUncleanStartsRemain) {
  DARUMA_SKIP_WITHOUT(/*need_kcat=*/false);
  TempDir dir;
  {
    DarumaProcess first(dir.path(), "");
    ASSERT_TRUE(first.Start());
    ASSERT_TRUE(first.WaitServing()) << first.Log();
    ASSERT_TRUE(first.Kill());
  }
  DarumaProcess second(dir.path(), "");
  ASSERT_TRUE(second.Start());
  ASSERT_TRUE(second.WaitServing()) << second.Log();
  const std::string log = second.Log();
  // The first start's lines come before the second's: find the second's.
  const size_t second_start = log.rfind("the last shutdown was unclean");
  ASSERT_NE(second_start, std::string::npos) << log;
  const std::string line = log.substr(second_start, log.find('\n', second_start) - second_start);
  EXPECT_NE(line.find("1 start(s) in a row"), std::string::npos) << line;
  EXPECT_NE(line.find("4 more unclean start(s) before the crash-loop guard refuses"),
            std::string::npos)
      << line;
  EXPECT_EQ(second.Stop(), 0);
}

// A fatal signal is never silent: the broker names it and the kind of the
// last request it started, then dies of that same signal.
TEST(ConsumerLeavesCompat, AFatalSignalIsLoggedWithTheLastRequestKind) {
  DARUMA_SKIP_WITHOUT(/*need_kcat=*/true);
  const std::string kcat = FindOnPath("kcat");
  TempDir dir;
  DarumaProcess broker(dir.path(), "num.partitions=1");
  ASSERT_TRUE(broker.Start());
  ASSERT_TRUE(broker.WaitServing()) << broker.Log();
  ASSERT_EQ(Shell("echo x | " + kcat + " -P -q -b " + broker.bootstrap() + " -t t"), 0);
  EXPECT_EQ(broker.SignalAndWait(SIGSEGV), 128 + SIGSEGV);
  const std::string log = broker.Log();
  EXPECT_NE(log.find("daruma serve: fatal signal SIGSEGV (11)"), std::string::npos) << log;
  EXPECT_NE(log.find("last request started: "), std::string::npos) << log;
}

}  // namespace
}  // namespace daruma::broker
