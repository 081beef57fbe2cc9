// POSIX implementation of FileSystem. Errors carry errno text and the path.
#include <dirent.h>
#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/time.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <filesystem>
#include <limits>
#include <string_view>

#include "common/file_system.h"

namespace daruma {
namespace {

Status ErrnoStatus(const std::string& op, const std::string& path, int err) {
  Status status = Status::IoError(op + " " + path + ": " + std::strerror(err));
  if (err == EMFILE || err == ENFILE) return status.WithDetail(kTooManyOpenFilesDetail);
  if (err == EACCES || err == EPERM) return status.WithDetail(kAccessDeniedDetail);
  return status;
}

Status StatError(const std::string& path, int err) {
  if (err == ENOENT) return Status::NotFound("stat " + path + ": no such file");
  return ErrnoStatus("stat", path, err);
}

class PosixMappedRegion final : public MappedRegion {
 public:
  PosixMappedRegion(void* addr, size_t length) : addr_(addr), length_(length) {}
  ~PosixMappedRegion() override { ::munmap(addr_, length_); }

  // MADV_POPULATE_READ (Linux 5.14) maps the range's cached pages in one
  // call under a read lock of the address space; on an older kernel the
  // madvise fails and the pages fault in on touch instead.
  void Populate(size_t offset, size_t len) const override {
    const uintptr_t from = PageDown(uintptr_t(data + offset));
    const uintptr_t to = std::min(PageUp(uintptr_t(data + offset + len)), End());
    if (to > from) ::madvise(reinterpret_cast<void*>(from), to - from, kMadvPopulateRead);
  }
  // MADV_DONTNEED on a shared file mapping only unmaps: the pages stay in
  // the page cache and refault unchanged if touched again.
  void Release(size_t offset, size_t len) const override {
    const uintptr_t from = PageUp(uintptr_t(data + offset));
    const uintptr_t to = PageDown(uintptr_t(data + offset + len));
    if (to > from) ::madvise(reinterpret_cast<void*>(from), to - from, MADV_DONTNEED);
  }

 private:
  static constexpr int kMadvPopulateRead = 22;  // MADV_POPULATE_READ, absent from older headers
  static uintptr_t Page() {
    static const uintptr_t page = uintptr_t(::sysconf(_SC_PAGESIZE));
    return page;
  }
  static uintptr_t PageDown(uintptr_t a) { return a / Page() * Page(); }
  static uintptr_t PageUp(uintptr_t a) { return PageDown(a + Page() - 1); }
  uintptr_t End() const { return uintptr_t(addr_) + length_; }

  void* addr_;
  size_t length_;
};

class PosixWritableMappedRegion final : public WritableMappedRegion {
 public:
  PosixWritableMappedRegion(void* addr, size_t length) : addr_(addr), length_(length) {}
  ~PosixWritableMappedRegion() override { ::munmap(addr_, length_); }

 private:
  void* addr_;
  size_t length_;
};

class PosixFile final : public File {
 public:
  PosixFile(int fd, std::string path) : fd_(fd), path_(std::move(path)) {}
  ~PosixFile() override { ::close(fd_); }

  Result<size_t> ReadAt(uint64_t pos, std::span<uint8_t> out) const override {
    size_t done = 0;
    while (done < out.size()) {
      ssize_t n = ::pread(fd_, out.data() + done, out.size() - done, off_t(pos + done));
      if (n < 0) {
        if (errno == EINTR) continue;
        return ErrnoStatus("read", path_, errno);
      }
      if (n == 0) break;
      done += size_t(n);
    }
    return done;
  }

  std::unique_ptr<MappedRegion> MapForRead(uint64_t pos, size_t len) const override {
    static const uint64_t page = uint64_t(::sysconf(_SC_PAGESIZE));
    if (len == 0) return nullptr;
    const uint64_t aligned = pos / page * page;
    const size_t span = size_t(pos - aligned) + len;
    // Not MAP_POPULATE: a scan maps a whole segment once and populates it a
    // block at a time (MappedRegion::Populate), so its RSS stays bounded.
    void* addr = ::mmap(nullptr, span, PROT_READ, MAP_SHARED, fd_, off_t(aligned));
    if (addr == MAP_FAILED) return nullptr;
    auto region = std::make_unique<PosixMappedRegion>(addr, span);
    region->data = static_cast<const uint8_t*>(addr) + (pos - aligned);
    region->size = len;
    return region;
  }

  Result<std::unique_ptr<WritableMappedRegion>> MapForAppend(uint64_t pos, size_t len,
                                                             AppendFaults faults) override {
    static const uint64_t page = uint64_t(::sysconf(_SC_PAGESIZE));
    if (len == 0) return std::unique_ptr<WritableMappedRegion>();
    const uint64_t aligned = pos / page * page;
    const size_t span = size_t(pos - aligned) + len;
    if (::fallocate(fd_, 0, off_t(aligned), off_t(span)) != 0) {
      if (errno == EOPNOTSUPP || errno == ENOSYS) return std::unique_ptr<WritableMappedRegion>();
      return ErrnoStatus("reserve space in", path_, errno);
    }
    void* addr = ::mmap(nullptr, span, PROT_READ | PROT_WRITE, MAP_SHARED, fd_, off_t(aligned));
    if (addr == MAP_FAILED) return std::unique_ptr<WritableMappedRegion>();
    if (faults == AppendFaults::kOnePage) ::madvise(addr, span, MADV_RANDOM);
    auto region = std::make_unique<PosixWritableMappedRegion>(addr, span);
    region->data = static_cast<uint8_t*>(addr) + (pos - aligned);
    region->size = len;
    return std::unique_ptr<WritableMappedRegion>(std::move(region));
  }

  Result<uint64_t> DataFrom(uint64_t pos) const override {
    const off_t data = ::lseek(fd_, off_t(pos), SEEK_DATA);
    if (data >= 0) return uint64_t(data);
    if (errno == ENXIO) return std::numeric_limits<uint64_t>::max();  // only a hole follows
    return pos;  // no SEEK_DATA here: assume data
  }

  Result<uint64_t> DataEnd() const override {
    const off_t hole = ::lseek(fd_, 0, SEEK_HOLE);
    if (hole < 0) return Size();  // no SEEK_HOLE here: the whole file is data
    return uint64_t(hole);
  }

  Status WriteAt(uint64_t pos, std::span<const uint8_t> data) override {
    size_t done = 0;
    while (done < data.size()) {
      ssize_t n = ::pwrite(fd_, data.data() + done, data.size() - done, off_t(pos + done));
      if (n < 0) {
        if (errno == EINTR) continue;
        return ErrnoStatus("write", path_, errno);
      }
      done += size_t(n);
    }
    return Status::Ok();
  }

  Status Sync() override {
    if (::fdatasync(fd_) != 0) return ErrnoStatus("fsync", path_, errno);
    return Status::Ok();
  }

  Status Truncate(uint64_t size) override {
    if (::ftruncate(fd_, off_t(size)) != 0) return ErrnoStatus("truncate", path_, errno);
    return Status::Ok();
  }

  Result<uint64_t> Size() const override {
    struct stat st;
    if (::fstat(fd_, &st) != 0) return ErrnoStatus("stat", path_, errno);
    return uint64_t(st.st_size);
  }

  void DropCache(uint64_t pos, uint64_t len) override {
    ::posix_fadvise(fd_, off_t(pos), off_t(len), POSIX_FADV_DONTNEED);
  }

  void WillNeed(uint64_t pos, uint64_t len) override {
    ::posix_fadvise(fd_, off_t(pos), off_t(len), POSIX_FADV_WILLNEED);
  }

  const std::string& path() const override { return path_; }
  int fd() const override { return fd_; }

 private:
  int fd_;
  std::string path_;
};

// Opens the directory `path`, runs `call` on its descriptor (fsync, syncfs)
// and closes it; `what` names the call in the error.
Status CallOnDir(const std::string& path, const char* what, int (*call)(int)) {
  int fd = ::open(path.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (fd < 0) return ErrnoStatus("open dir", path, errno);
  int rc = call(fd);
  int err = errno;
  ::close(fd);
  if (rc != 0) return ErrnoStatus(what, path, err);
  return Status::Ok();
}

class PosixFileSystem final : public FileSystem {
 public:
  Result<std::unique_ptr<File>> Open(const std::string& path, OpenMode mode) override {
    int flags = O_CLOEXEC;
    switch (mode) {
      case OpenMode::kRead:
        flags |= O_RDONLY;
        break;
      case OpenMode::kReadWrite:
        flags |= O_RDWR;
        break;
      case OpenMode::kCreate:
        flags |= O_RDWR | O_CREAT;
        break;
      case OpenMode::kCreateExclusive:
        flags |= O_RDWR | O_CREAT | O_EXCL;
        break;
      case OpenMode::kTruncate:
        flags |= O_RDWR | O_CREAT | O_TRUNC;
        break;
    }
    int fd = ::open(path.c_str(), flags, 0644);
    if (fd < 0) {
      if (errno == ENOENT) return Status::NotFound("open " + path + ": no such file");
      return ErrnoStatus("open", path, errno);
    }
    return std::unique_ptr<File>(new PosixFile(fd, path));
  }

  Status Rename(const std::string& from, const std::string& to) override {
    if (::rename(from.c_str(), to.c_str()) != 0)
      return ErrnoStatus("rename", from + " -> " + to, errno);
    return Status::Ok();
  }

  Status Remove(const std::string& path) override {
    if (::unlink(path.c_str()) != 0) {
      if (errno == ENOENT) return Status::NotFound("remove " + path + ": no such file");
      return ErrnoStatus("remove", path, errno);
    }
    return Status::Ok();
  }

  Status RemoveAll(const std::string& path) override {
    std::error_code ec;
    std::filesystem::remove_all(path, ec);
    if (ec) return ErrnoStatus("remove", path, ec.value());  // an errno (EMFILE included)
    return Status::Ok();
  }

  Status CreateDir(const std::string& path) override {
    if (::mkdir(path.c_str(), 0755) != 0 && errno != EEXIST)
      return ErrnoStatus("mkdir", path, errno);
    return Status::Ok();
  }

  Status SyncDir(const std::string& path) override { return CallOnDir(path, "fsync dir", ::fsync); }

  // Since Linux 5.8 syncfs reports a write-back error that hit any file of
  // the file system (the super block's error sequence): a descriptor opened
  // now still sees an error nobody has observed yet.
  Status SyncFileSystem(const std::string& path) override {
    return CallOnDir(path, "syncfs", ::syncfs);
  }

  // getdents64 into a buffer on the stack rather than opendir: opendir adds
  // an fstat and a 32 KiB heap buffer per call, and a start lists every
  // partition dir (malloc_consolidate of that buffer showed in its profile).
  Result<std::vector<DirEntry>> ListDir(const std::string& path) override {
    const int fd = ::open(path.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (fd < 0) {
      if (errno == ENOENT) return Status::NotFound("list " + path + ": no such directory");
      return ErrnoStatus("list", path, errno);
    }
    std::vector<DirEntry> out;
    alignas(struct dirent64) char buffer[16384];
    for (;;) {
      const ssize_t n = ::getdents64(fd, buffer, sizeof(buffer));
      if (n < 0) {
        const int err = errno;
        ::close(fd);
        return ErrnoStatus("list", path, err);
      }
      if (n == 0) break;
      for (ssize_t at = 0; at < n;) {
        const auto* e = reinterpret_cast<const struct dirent64*>(buffer + at);
        at += e->d_reclen;
        const std::string_view name = e->d_name;
        if (name == "." || name == "..") continue;
        DirEntry entry{std::string(name), e->d_type == DT_DIR, e->d_type == DT_REG};
        // d_type spares a stat per entry (40,000 of them in a big log dir); a
        // symlink, or a file system that does not fill it in, needs the stat.
        struct stat st;
        if (e->d_type != DT_DIR && e->d_type != DT_REG &&
            ::stat(JoinPath(path, entry.name).c_str(), &st) == 0) {
          entry.is_directory = S_ISDIR(st.st_mode);
          entry.is_regular = S_ISREG(st.st_mode);
        }
        out.push_back(std::move(entry));
      }
    }
    ::close(fd);
    return out;
  }

  bool Exists(const std::string& path) override { return ::access(path.c_str(), F_OK) == 0; }

  // A missing file is NotFound, as from Open and ListDir: callers that ask
  // before creating (CachingFileSystem::OpenWithSize) take that as the
  // answer instead of trying an open that must fail too.
  Result<uint64_t> FileSize(const std::string& path) override {
    struct stat st;
    if (::stat(path.c_str(), &st) != 0) return StatError(path, errno);
    return uint64_t(st.st_size);
  }

  Result<int64_t> ModifiedTimeMs(const std::string& path) override {
    struct stat st;
    if (::stat(path.c_str(), &st) != 0) return StatError(path, errno);
    return int64_t(st.st_mtim.tv_sec) * 1000 + st.st_mtim.tv_nsec / 1000000;
  }

  Status SetModifiedTimeMs(const std::string& path, int64_t ms) override {
    struct timeval tv[2];
    tv[0].tv_sec = tv[1].tv_sec = ms / 1000;
    tv[0].tv_usec = tv[1].tv_usec = (ms % 1000) * 1000;
    if (::utimes(path.c_str(), tv) != 0) return ErrnoStatus("utimes", path, errno);
    return Status::Ok();
  }
};

}  // namespace

FileSystem* FileSystem::Default() {
  static PosixFileSystem fs;
  return &fs;
}

Status FileSystem::WriteFileAtomically(const std::string& path, std::span<const uint8_t> data) {
  const std::string tmp = path + ".tmp";
  {
    DARUMA_ASSIGN_OR_RETURN(auto file, Open(tmp, OpenMode::kTruncate));
    DARUMA_RETURN_IF_ERROR(file->WriteAt(0, data));
    DARUMA_RETURN_IF_ERROR(file->Sync());
  }
  DARUMA_RETURN_IF_ERROR(Rename(tmp, path));
  return SyncDir(ParentDir(path));
}

Result<std::vector<uint8_t>> FileSystem::ReadFile(const std::string& path) {
  DARUMA_ASSIGN_OR_RETURN(auto file, Open(path, OpenMode::kRead));
  // The size first: File::ReadAt reads until it has every byte asked for or
  // meets the end, so a guessed buffer that a small file does not fill costs
  // a second read to find its end, where the stat costs one call.
  DARUMA_ASSIGN_OR_RETURN(uint64_t size, file->Size());
  std::vector<uint8_t> out(size);
  DARUMA_ASSIGN_OR_RETURN(size_t n, file->ReadAt(0, out));
  out.resize(n);
  return out;
}

Result<std::unique_ptr<File>> FileSystem::OpenWithSize(const std::string& path, OpenMode mode,
                                                       uint64_t* size) {
  DARUMA_ASSIGN_OR_RETURN(auto file, Open(path, mode));
  DARUMA_ASSIGN_OR_RETURN(*size, file->Size());
  return file;
}

Status FileSystem::SyncFile(const std::string& path) {
  DARUMA_ASSIGN_OR_RETURN(auto file, Open(path, OpenMode::kRead));
  return file->Sync();
}

std::string JoinPath(const std::string& dir, const std::string& name) {
  if (dir.empty()) return name;
  // One allocation: a load joins a path for every file it touches.
  const bool slash = dir.back() != '/';
  std::string path;
  path.reserve(dir.size() + size_t(slash) + name.size());
  path.append(dir);
  if (slash) path.push_back('/');
  path.append(name);
  return path;
}

std::string ParentDir(const std::string& path) {
  auto pos = path.find_last_of('/');
  if (pos == std::string::npos) return ".";
  if (pos == 0) return "/";
  return path.substr(0, pos);
}

std::string BaseName(const std::string& path) {
  auto pos = path.find_last_of('/');
  return pos == std::string::npos ? path : path.substr(pos + 1);
}

}  // namespace daruma
