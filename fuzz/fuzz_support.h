// Helpers shared by the libFuzzer targets (fuzz/*_fuzz.cc); not library code.
//
// Contract:
//  * Check(c) aborts when an invariant does not hold, which libFuzzer reports
//    as a finding with the input as reproducer.
//  * ScratchDir is one private directory per fuzzer process (under /dev/shm
//    when it exists, so the targets that need real files do not wear a disk),
//    emptied by Reset() before each input and removed at exit. All file I/O
//    goes through daruma::FileSystem like the code under test.
#pragma once

#include <unistd.h>

#include <cstdint>
#include <cstdlib>
#include <string>
#include <string_view>

#include "common/bytes.h"
#include "common/file_system.h"

namespace daruma::fuzz {

inline void Check(bool condition) {
  if (!condition) std::abort();
}

inline std::string_view AsText(const uint8_t* data, size_t size) {
  return std::string_view(reinterpret_cast<const char*>(data), size);
}

class ScratchDir {
 public:
  ScratchDir() {
    const char* base = access("/dev/shm", W_OK) == 0 ? "/dev/shm" : "/tmp";
    std::string templ = std::string(base) + "/daruma-fuzz-XXXXXX";
    Check(mkdtemp(templ.data()) != nullptr);
    root_ = templ;
  }
  ~ScratchDir() { (void)fs()->RemoveAll(root_); }
  ScratchDir(const ScratchDir&) = delete;
  ScratchDir& operator=(const ScratchDir&) = delete;

  // Empties the directory; returns its path.
  const std::string& Reset() {
    Check(fs()->RemoveAll(root_).ok());
    Check(fs()->CreateDir(root_).ok());
    return root_;
  }
  const std::string& path() const { return root_; }
  static FileSystem* fs() { return FileSystem::Default(); }

  // Writes `bytes` to <root>/<name>; returns the full path.
  std::string Write(const std::string& name, ByteSpan bytes) const {
    std::string path = root_ + "/" + name;
    auto file = fs()->Open(path, OpenMode::kTruncate);
    Check(file.ok());
    Check((*file)->WriteAt(0, bytes).ok());
    return path;
  }

 private:
  std::string root_;
};

// The process-wide scratch directory (destroyed at exit, removing its files).
inline ScratchDir& Scratch() {
  static ScratchDir dir;
  return dir;
}

}  // namespace daruma::fuzz
