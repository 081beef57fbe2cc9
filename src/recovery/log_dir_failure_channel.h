// LogDirFailureChannel: the one place where an I/O error turns a whole log
// directory offline (spec §10.9, Kafka's LogDirFailureChannel).
//
// Contract: any thread that hits a kIoError while working in a log directory
// calls MaybeAddOfflineLogDir(dir, status). The first error for a directory is
// kept (later ones add nothing); the directory stays offline for the life of
// the channel. Readers ask IsOffline() to stop work in that directory early and
// OfflineDirs() to act on the failures. Thread-safe.
//
// Exception: an error of running out of descriptors (IsTooManyOpenFiles,
// EMFILE/ENFILE) says nothing about the disk; it fails the one operation (a
// partition's load, a job's round) and never takes a directory offline.
#pragma once

#include <functional>
#include <map>
#include <mutex>
#include <string>

#include "common/status.h"

namespace daruma {

class LogDirFailureChannel {
 public:
  // Returns true when this call took the directory offline (first error);
  // false, and nothing changes, for an IsTooManyOpenFiles error.
  bool MaybeAddOfflineLogDir(const std::string& log_dir, const Status& error);
  bool IsOffline(const std::string& log_dir) const;
  // The first error of an offline directory; OK when it is online.
  Status ErrorFor(const std::string& log_dir) const;
  // Offline directories with their first error.
  std::map<std::string, Status> OfflineDirs() const;

  // Called once per directory, when it goes offline, on the thread that hit
  // the error and without the channel's lock (so it may ask IsOffline). Set
  // before any work in the dirs starts (the broker logs the failure).
  using Listener = std::function<void(const std::string& log_dir, const Status& error)>;
  void SetListener(Listener listener) { listener_ = std::move(listener); }

 private:
  mutable std::mutex mu_;
  std::map<std::string, Status> offline_;
  Listener listener_;
};

}  // namespace daruma
