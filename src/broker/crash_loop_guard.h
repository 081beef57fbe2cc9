// CrashLoopGuard: refuses to start a broker that keeps dying (Redpanda's
// crash_loop_limit). A broker that crashes during recovery and is restarted
// by a supervisor would otherwise rescan (and maybe truncate or quarantine)
// its logs in a loop; after `max_unclean_starts` starts in a row that did not
// end in a clean shutdown, an operator has to look first.
//
// State: one small text file in the first log dir that can hold it (the
// first of the broker's dirs, unless it is read-only, full or dead), written
// atomically (FileSystem::WriteFileAtomically):
//   # Daruma crash-loop guard: starts without a clean shutdown since the last one.
//   unclean.starts=<n>
// A missing file means 0. The count read is the highest of the copies that
// can be read, whichever dirs hold them: the file moves to a later dir when
// an earlier one fails and back once it is healthy, and a stale copy left in
// a dir that could not remove it can only make the guard stricter, never
// hide a crash loop. A copy that cannot be read (its dir failed) is skipped,
// as Kafka skips a failed dir.
//
// Protocol:
//   RecordStart(), before recovery: n >= max -> refuse (kOutOfRange, with a
//   message saying exactly how to clear it); otherwise write n+1 to the first
//   dir that takes it and remove the other copies, so a crash anywhere from
//   here on (recovery included) counts. kIoError when no dir can take it: the
//   broker then runs without the guard (a warning), as Kafka starts with a
//   failed dir offline; whether any dir is usable is start-up's to judge.
//   RecordCleanShutdown(), after LogManager::Shutdown succeeded: remove the
//   file RecordStart wrote (an error only for that one), and the other copies
//   where possible.
//   Clear() (`daruma serve --clear-crash-loop`): remove every copy.
// max_unclean_starts == 0 disables the refusal (starts are still counted).
//
// The file belongs to the process that holds the log dirs' locks: a second
// `daruma serve` (or `--clear-crash-loop`) on dirs a running broker holds must
// refuse before it reads or writes the count (RefuseIfLogDirsHeld), or it
// would count a start of its own against the live broker and report that
// broker's start as an unclean shutdown.
#pragma once

#include <string>
#include <vector>

#include "common/file_system.h"
#include "common/status.h"

namespace daruma::broker {

inline constexpr char kCrashLoopFileName[] = ".daruma_unclean_starts";

class CrashLoopGuard {
 public:
  // `log_dirs`: the broker's log dirs in their configured order (not empty).
  CrashLoopGuard(FileSystem* fs, std::vector<std::string> log_dirs, int max_unclean_starts);
  CrashLoopGuard(FileSystem* fs, std::string log_dir, int max_unclean_starts)
      : CrashLoopGuard(fs, std::vector<std::string>{std::move(log_dir)}, max_unclean_starts) {}

  Status RecordStart();
  Status RecordCleanShutdown();
  Status Clear();
  // The count on disk now: the highest of the readable copies, 0 when there
  // is none. kCorruption naming the file when one cannot be parsed.
  Result<int> UncleanStarts() const;
  // The file RecordStart wrote; before that, the first copy on disk, or the
  // first dir's file when there is none.
  std::string path() const;

 private:
  std::string PathIn(const std::string& log_dir) const;

  FileSystem* fs_;
  std::vector<std::string> log_dirs_;
  std::string written_dir_;  // where RecordStart wrote, empty before
  int max_unclean_starts_;
};

// Probes each of `log_dirs` with DirLock and releases it at once: the
// DirLock error (kIoError, "is locked by another process") for the first dir
// another process holds; OK otherwise, also for dirs that do not exist yet or
// cannot be opened (start-up reports those itself). A start racing this probe
// is still refused when LogManager takes the locks for good; it will then have
// counted one start.
Status RefuseIfLogDirsHeld(const std::vector<std::string>& log_dirs);

}  // namespace daruma::broker
