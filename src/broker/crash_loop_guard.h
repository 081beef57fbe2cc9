// CrashLoopGuard: refuses to start a broker that keeps dying (Redpanda's
// crash_loop_limit). A broker that crashes during recovery and is restarted
// by a supervisor would otherwise rescan (and maybe truncate or quarantine)
// its logs in a loop; after `max_unclean_starts` starts in a row that did not
// end in a clean shutdown, an operator has to look first.
//
// State: one small text file in the FIRST log dir, written atomically
// (FileSystem::WriteFileAtomically):
//   # Daruma crash-loop guard: starts without a clean shutdown since the last one.
//   unclean.starts=<n>
// A missing file means 0.
//
// Protocol:
//   RecordStart(), before recovery: n >= max -> refuse (kOutOfRange, with a
//   message saying exactly how to clear it); otherwise write n+1, so a crash
//   anywhere from here on (recovery included) counts.
//   RecordCleanShutdown(), after LogManager::Shutdown succeeded: remove the file.
//   Clear() (`daruma serve --clear-crash-loop`): remove the file.
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
  CrashLoopGuard(FileSystem* fs, std::string log_dir, int max_unclean_starts);

  Status RecordStart();
  Status RecordCleanShutdown() { return Clear(); }
  Status Clear();
  // The count on disk now (0 when the file is missing). kCorruption naming
  // the file when it cannot be parsed.
  Result<int> UncleanStarts() const;
  const std::string& path() const { return path_; }

 private:
  FileSystem* fs_;
  std::string log_dir_;
  std::string path_;
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
