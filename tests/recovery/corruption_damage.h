// The damage the corruption matrix (corruption_matrix_crash_test.cc) applies
// to one generated log dir per seed. Two families:
//  * random damage to a file picked at random (any kind of file): bit flips,
//    a torn or truncated file, a zeroed 4 KiB page, garbage appended;
//  * targeted damage (issue 22), each aimed where recovery used to keep
//    invalid data or refuse a partition with a safe outcome:
//      - a header field no CRC covers (baseOffset: one bit, a repeat of the
//        previous batch's, backwards, +2^31; batchLength; partitionLeaderEpoch;
//        magic; the stored CRC) of a batch picked at random;
//      - offsets going backwards (a batch's baseOffset at or below the
//        previous batch's), with the segment's indexes kept or deleted;
//      - a zero or garbage tail on a partition's active segment;
//      - a stray file in a partition dir (`backup.log`, `x.index.bak`, an
//        editor swap file);
//      - a corrupt `leader-epoch-checkpoint` (garbage, wrong version, wrong
//        count, non-numeric, empty).
// Header-only: the crash tests link per layer, without a test library.
#pragma once

#include <algorithm>
#include <cstdint>
#include <random>
#include <string>
#include <vector>

#include "common/file_system.h"
#include "support/mem_file_system.h"

namespace daruma::testing {

enum class Damage {
  // Random damage to a random file.
  kBitFlip,
  kTorn,
  kZeroPage,
  kGarbage,
  kTruncate,
  // Targeted damage.
  kHeaderField,
  kNonMonotonic,
  kNonMonotonicNoIndex,
  kActiveTail,
  kStrayFile,
  kEpochCheckpoint,
};
inline constexpr int kRandomDamageKinds = 5;
inline constexpr int kDamageKinds = 11;

inline const char* DamageName(Damage d) {
  switch (d) {
    case Damage::kBitFlip:
      return "bitflip";
    case Damage::kTorn:
      return "torn";
    case Damage::kZeroPage:
      return "zeropage";
    case Damage::kGarbage:
      return "garbage";
    case Damage::kTruncate:
      return "truncate";
    case Damage::kHeaderField:
      return "header";
    case Damage::kNonMonotonic:
      return "backwards";
    case Damage::kNonMonotonicNoIndex:
      return "backwards-noindex";
    case Damage::kActiveTail:
      return "active-tail";
    case Damage::kStrayFile:
      return "stray";
    case Damage::kEpochCheckpoint:
      return "epoch-checkpoint";
  }
  return "?";
}

inline bool IsTargeted(Damage d) {
  return int(d) >= kRandomDamageKinds;
}

inline bool EndsWith(const std::string& s, const std::string& suffix) {
  return s.size() >= suffix.size() &&
         s.compare(s.size() - suffix.size(), suffix.size(), suffix) == 0;
}

inline std::string FileKind(const std::string& path) {
  const std::string name = BaseName(path);
  for (const char* ext : {".log", ".index", ".timeindex", ".txnindex", ".snapshot"}) {
    if (EndsWith(name, ext)) return ext + 1;
  }
  return name;  // checkpoints, partition.metadata, .kafka_cleanshutdown
}

// Applies one random damage to `data`; returns a description.
inline std::string ApplyRandom(Damage d, std::vector<uint8_t>* data, std::mt19937_64& rng) {
  auto pick = [&](size_t n) { return n == 0 ? size_t{0} : size_t(rng() % n); };
  switch (d) {
    case Damage::kBitFlip: {
      if (data->empty()) return ApplyRandom(Damage::kGarbage, data, rng);
      const int flips = 1 + int(rng() % 3);
      std::string out = "bitflip";
      for (int i = 0; i < flips; ++i) {
        const size_t pos = pick(data->size());
        const int bit = int(rng() % 8);
        (*data)[pos] ^= uint8_t(1u << bit);
        out += " @" + std::to_string(pos) + "." + std::to_string(bit);
      }
      return out;
    }
    case Damage::kTorn:
    case Damage::kTruncate: {
      if (data->empty()) return ApplyRandom(Damage::kGarbage, data, rng);
      const size_t keep = pick(data->size());
      data->resize(keep);
      return std::string(DamageName(d)) + " to " + std::to_string(keep);
    }
    case Damage::kZeroPage: {
      if (data->empty()) return ApplyRandom(Damage::kGarbage, data, rng);
      const size_t page = pick((data->size() + 4095) / 4096) * 4096;
      const size_t end = std::min(data->size(), page + 4096);
      std::fill(data->begin() + int64_t(page), data->begin() + int64_t(end), 0);
      return "zeropage [" + std::to_string(page) + "," + std::to_string(end) + ")";
    }
    case Damage::kGarbage: {
      const size_t n = 1 + pick(200);
      for (size_t i = 0; i < n; ++i) data->push_back(uint8_t(rng()));
      return "garbage +" + std::to_string(n);
    }
    default:
      return "?";
  }
}

// Start positions of the v2 batches of a .log image, walked by batchLength
// only (the original is undamaged, so the walk is exact).
inline std::vector<size_t> BatchStarts(const std::vector<uint8_t>& log) {
  std::vector<size_t> out;
  size_t pos = 0;
  while (pos + 12 <= log.size()) {
    const uint32_t len = uint32_t(log[pos + 8]) << 24 | uint32_t(log[pos + 9]) << 16 |
                         uint32_t(log[pos + 10]) << 8 | uint32_t(log[pos + 11]);
    if (len < 49 || pos + 12 + len > log.size()) break;
    out.push_back(pos);
    pos += 12 + len;
  }
  return out;
}

inline int64_t GetBigEndian(const std::vector<uint8_t>& b, size_t at, int bytes) {
  uint64_t v = 0;
  for (int i = 0; i < bytes; ++i) v = v << 8 | b[at + size_t(i)];
  return int64_t(v);
}

inline void PutBigEndian(std::vector<uint8_t>* b, size_t at, uint64_t v, int bytes) {
  for (int i = 0; i < bytes; ++i) (*b)[at + size_t(i)] = uint8_t(v >> (8 * (bytes - 1 - i)));
}

struct TargetedDamage {
  std::string victim;       // the file damaged or created
  std::string description;  // what was done, for the matrix's examples
  bool applied = false;     // false: the image has no file this damage needs
};

inline Status WriteWhole(MemFileSystem* fs, const std::string& path,
                         const std::vector<uint8_t>& data) {
  auto f = fs->Open(path, OpenMode::kTruncate);
  if (!f.ok()) return f.status();
  return data.empty() ? Status::Ok() : (*f)->WriteAt(0, data);
}

// Applies one targeted damage to the image of `log_dir`.
inline TargetedDamage ApplyTargeted(Damage d, MemFileSystem* fs, const std::string& log_dir,
                                    std::mt19937_64& rng) {
  TargetedDamage out;
  const auto files = fs->Files(log_dir);
  auto pick = [&](size_t n) { return n == 0 ? size_t{0} : size_t(rng() % n); };
  // Partition dirs are the parents of .log files; the last .log of a dir (by
  // name, i.e. base offset) is its active segment.
  std::vector<std::string> logs, active;
  for (const auto& [path, bytes] : files) {
    if (FileKind(path) != "log" || BaseName(path).size() != 24) continue;
    if (!BatchStarts(bytes).empty()) logs.push_back(path);
  }
  for (size_t i = 0; i < logs.size(); ++i) {
    if (i + 1 == logs.size() || ParentDir(logs[i + 1]) != ParentDir(logs[i])) {
      active.push_back(logs[i]);
    }
  }
  if (logs.empty()) return out;
  switch (d) {
    case Damage::kHeaderField: {
      out.victim = logs[pick(logs.size())];
      std::vector<uint8_t> data = files.at(out.victim);
      const auto starts = BatchStarts(data);
      const size_t i = pick(starts.size());
      const size_t at = starts[i];
      const int64_t base = GetBigEndian(data, at, 8);
      std::string what;
      switch (rng() % 8) {
        case 0: {
          const int bit = int(rng() % 64);
          PutBigEndian(&data, at, uint64_t(base) ^ (uint64_t{1} << bit), 8);
          what = "baseOffset bit " + std::to_string(bit);
          break;
        }
        case 1: {
          const int64_t prev = i > 0 ? GetBigEndian(data, starts[i - 1], 8) : base - 1;
          PutBigEndian(&data, at, uint64_t(prev), 8);
          what = "baseOffset repeats the previous batch's (" + std::to_string(prev) + ")";
          break;
        }
        case 2: {
          PutBigEndian(&data, at, uint64_t(base + (int64_t{1} << 31)), 8);
          what = "baseOffset + 2^31";
          break;
        }
        case 3: {
          const int bit = int(rng() % 32);
          data[at + 8 + size_t(3 - bit / 8)] ^= uint8_t(1u << (bit % 8));
          what = "batchLength bit " + std::to_string(bit);
          break;
        }
        case 4: {
          const int bit = int(rng() % 32);
          data[at + 12 + size_t(3 - bit / 8)] ^= uint8_t(1u << (bit % 8));
          what = "partitionLeaderEpoch bit " + std::to_string(bit);
          break;
        }
        case 5:
        case 6: {
          uint8_t magic = uint8_t(rng());
          if (magic == 2) magic = 6;
          data[at + 16] = magic;
          what = "magic " + std::to_string(magic);
          break;
        }
        default: {
          const int bit = int(rng() % 32);
          data[at + 17 + size_t(bit / 8)] ^= uint8_t(1u << (bit % 8));
          what = "stored CRC bit " + std::to_string(bit);
          break;
        }
      }
      out.description =
          "header: batch " + std::to_string(i) + " at byte " + std::to_string(at) + ": " + what;
      out.applied = WriteWhole(fs, out.victim, data).ok();
      return out;
    }
    case Damage::kNonMonotonic:
    case Damage::kNonMonotonicNoIndex: {
      std::vector<std::string> multi;
      for (const auto& p : logs) {
        if (BatchStarts(files.at(p)).size() >= 2) multi.push_back(p);
      }
      if (multi.empty()) return out;
      out.victim = multi[pick(multi.size())];
      std::vector<uint8_t> data = files.at(out.victim);
      const auto starts = BatchStarts(data);
      const size_t i = 1 + pick(starts.size() - 1);
      const int64_t prev = GetBigEndian(data, starts[i - 1], 8);
      const int64_t to = prev - int64_t(rng() % 3);
      PutBigEndian(&data, starts[i], uint64_t(to), 8);
      out.description = "backwards: batch " + std::to_string(i) + " at byte " +
                        std::to_string(starts[i]) + " gets baseOffset " + std::to_string(to) +
                        " (previous batch's " + std::to_string(prev) + ")";
      out.applied = WriteWhole(fs, out.victim, data).ok();
      if (d == Damage::kNonMonotonicNoIndex) {
        const std::string stem = out.victim.substr(0, out.victim.size() - 4);
        (void)fs->Remove(stem + ".index");
        (void)fs->Remove(stem + ".timeindex");
        out.description += ", indexes deleted";
      }
      return out;
    }
    case Damage::kActiveTail: {
      out.victim = active[pick(active.size())];
      std::vector<uint8_t> data = files.at(out.victim);
      const size_t n = 1 + pick(rng() % 2 ? 8192 : 300);
      const bool zeros = rng() % 2 == 0;
      for (size_t k = 0; k < n; ++k) data.push_back(zeros ? 0 : uint8_t(rng()));
      out.description = std::string(zeros ? "zero" : "garbage") + " tail +" + std::to_string(n);
      out.applied = WriteWhole(fs, out.victim, data).ok();
      return out;
    }
    case Damage::kStrayFile: {
      const std::string dir = ParentDir(logs[pick(logs.size())]);
      static const char* kNames[] = {"backup.log", "00000000000000000000.index.bak",
                                     ".00000000000000000000.log.swp", "x.snapshot", "notes.txt"};
      out.victim = JoinPath(dir, kNames[pick(std::size(kNames))]);
      std::vector<uint8_t> data(1 + pick(4096));
      for (auto& b : data) b = uint8_t(rng());
      out.description = "stray file " + BaseName(out.victim);
      out.applied = !fs->Exists(out.victim) && WriteWhole(fs, out.victim, data).ok();
      return out;
    }
    case Damage::kEpochCheckpoint: {
      out.victim = JoinPath(ParentDir(logs[pick(logs.size())]), "leader-epoch-checkpoint");
      static const char* kTexts[] = {
          "", "1\n1\n0 0\n", "0\n3\n0 0\n", "0\n1\nzero 0\n", "0\n2\n5 10\n3 20\n", "0\n1\n0 -7\n"};
      const size_t which = pick(std::size(kTexts) + 1);
      std::vector<uint8_t> data;
      if (which < std::size(kTexts)) {
        const std::string text = kTexts[which];
        data.assign(text.begin(), text.end());
        out.description = "epoch checkpoint text #" + std::to_string(which);
      } else {
        data.resize(1 + pick(64));
        for (auto& b : data) b = uint8_t(rng());
        out.description = "epoch checkpoint garbage";
      }
      out.applied = WriteWhole(fs, out.victim, data).ok();
      return out;
    }
    default:
      return out;
  }
}

}  // namespace daruma::testing
