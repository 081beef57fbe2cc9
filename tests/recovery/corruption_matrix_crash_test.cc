// The corruption matrix (issue 8): damages one file of a generated log dir
// per seed, runs start-up recovery with quarantine on, and classifies the
// outcome. Asserted for every seed:
//  * start-up never fails and nothing invalid is served (every readable batch
//    passes its CRC and decodes; offsets are contiguous up to the LEO);
//  * every readable record equals the original record at that offset (so
//    the recovered log is a prefix of the original, or all of it);
//  * a loss of records is detected: the partition report names it (warnings,
//    quarantined ranges, truncated bytes, errors or deleted files);
//  * every byte removed from a .log or .snapshot file is in the quarantine:
//    the MANIFEST.jsonl ranges for those files sum to the bytes removed, and
//    the report lists exactly the manifest's ranges.
//  * a partition start-up refuses is left exactly as the damage left it:
//    every file of its dir byte for byte (issue 25).
// And, on untouched copies of the same damaged image, the operator tools
// (issue 5), judged the way recovery is:
//  * `check` (LogChecker) reports a problem whenever the damage is not
//    provably harmless (recovery lost, changed or had to repair something,
//    or it did not scan a damaged segment of a clean dir);
//  * `repair` with no limit (LogChecker's plan, then ApplyRepair) either
//    refuses because a partition cannot be loaded at all, or leaves a dir
//    that check finds clean and that a start-up recovery leaves alone
//    (nothing truncated, quarantined, deleted or warned about). Damage to
//    baseOffset or partitionLeaderEpoch, which no CRC covers, is cut like a
//    CRC failure (counted as repair_cut).
// Damage (corruption_damage.h): half the seeds get random damage to a random
// file of the dir (bit flips, torn, a zeroed 4 KiB page, garbage appended,
// truncated; segments, indexes, snapshots, checkpoints, markers), half a
// targeted one (issue 22): a header field no CRC covers, offsets going
// backwards with and without indexes, a zero or garbage tail on an active
// segment, a stray file, a corrupt leader-epoch-checkpoint. Each targeted
// damage has a safe automatic outcome, so start-up must refuse no partition
// for one.
//
// Environment: DARUMA_CORRUPTION_SEEDS=<n> (default 400, the CI sample),
// DARUMA_CORRUPTION_FIRST_SEED=<n> (default 1). Prints "CORRUPTION-MATRIX ..."
// with counts per outcome and per file kind.
#include <fmt/format.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <iostream>
#include <nlohmann/json.hpp>
#include <random>

#include "log/log_file_names.h"
#include "log/offset_checkpoint_file.h"
#include "recovery/corruption_damage.h"
#include "recovery/crash_workload.h"
#include "recovery/log_checker.h"
#include "recovery/log_repairer.h"
#include "recovery/quarantine.h"
#include "support/mem_file_system.h"
#include "support/test_support.h"

namespace daruma::testing {
namespace {

struct Outcome {
  int64_t seeds = 0;
  int64_t harmless = 0;  // everything readable, nothing lost
  int64_t detected = 0;  // something lost or changed, and reported
  int64_t undetected_loss = 0;
  int64_t startup_failures = 0;
  int64_t invalid_served = 0;
  int64_t divergent = 0;
  int64_t quarantine_mismatches = 0;
  int64_t report_mismatches = 0;
  // Quarantined ranges whose manifest line has no valid "kind", or whose
  // kinds differ from the report's (issue 22 rule 4).
  int64_t kind_mismatches = 0;
  int64_t unscanned_clean = 0;  // .log damage below the recovery point of a clean dir
  // Partitions start-up refused, and those of them whose dir the failed load
  // changed (issue 25: must stay 0, every file byte for byte as found).
  int64_t refused = 0, refused_changed = 0;
  // Partitions refused after a targeted damage (issue 22: must stay 0).
  int64_t refused_targeted = 0;
  // Seeds whose damage was targeted (corruption_damage.h).
  int64_t targeted = 0;
  // `check` on the damaged copy: reported / silent on a harmless damage /
  // silent on a harmful one.
  int64_t check_reported = 0, check_silent_harmless = 0, check_missed = 0;
  // `repair` with no limit: fixed (check clean and recovery changes nothing
  // after it, including "nothing to do") / refused (a partition cannot be
  // loaded) / failed (apply error, or check or recovery still finds work).
  int64_t repair_fixed = 0, repair_refused = 0, repair_failed = 0;
  // Of those, plans that cut the log at a batch whose baseOffset or
  // partitionLeaderEpoch (outside the CRC) contradicts its neighbours
  // (recovery/batch_order_check.h); repair_fixed counts them when they end
  // clean.
  int64_t repair_cut = 0;
  // Repairs after which check still reports only operator-only problems,
  // which repair leaves alone by design (a stray file in a partition dir).
  int64_t repair_operator_only = 0;
  // harmless/detected/undetected, then check_missed/repair_failed
  std::map<std::string, std::array<int64_t, 5>> by_kind;
  std::vector<std::string> examples;
  std::map<std::string, int> noted;
  void Note(const std::string& category, const std::string& what) {
    static const uint64_t kMax = EnvU64("DARUMA_CORRUPTION_EXAMPLES", 4);
    if (uint64_t(noted[category]++) < kMax) examples.push_back(category + ": " + what);
  }
};

bool Reported(const PartitionRecoveryReport& p) {
  return !p.warnings.empty() || !p.errors.empty() || !p.quarantined.empty() ||
         p.truncated_bytes > 0 || !p.deleted_files.empty();
}

// Sum of manifest bytes per original file name, for one partition dir.
std::map<std::string, int64_t> ManifestBytes(MemFileSystem& fs, const std::string& part_dir) {
  std::map<std::string, int64_t> out;
  const std::string path =
      JoinPath(JoinPath(part_dir, kQuarantineDirName), kQuarantineManifestName);
  auto data = fs.ReadFile(path);
  if (!data.ok()) return out;
  std::string text(data->begin(), data->end());
  size_t start = 0;
  while (start < text.size()) {
    size_t end = text.find('\n', start);
    if (end == std::string::npos) end = text.size();
    const std::string line = text.substr(start, end - start);
    start = end + 1;
    if (line.empty()) continue;
    auto j = nlohmann::json::parse(line, nullptr, false);
    if (j.is_discarded()) {
      out["<unparsable manifest line>"] += 1;
      continue;
    }
    out[BaseName(j.value("file", std::string()))] += j.value("bytes", int64_t{0});
  }
  return out;
}

// The "kind" of every manifest line of one partition dir, in order; "?" for
// a line without one that names a DamageKind.
std::vector<std::string> ManifestKinds(MemFileSystem& fs, const std::string& part_dir) {
  std::vector<std::string> out;
  auto data =
      fs.ReadFile(JoinPath(JoinPath(part_dir, kQuarantineDirName), kQuarantineManifestName));
  if (!data.ok()) return out;
  std::string text(data->begin(), data->end());
  for (size_t start = 0; start < text.size();) {
    size_t end = text.find('\n', start);
    if (end == std::string::npos) end = text.size();
    auto j = nlohmann::json::parse(text.substr(start, end - start), nullptr, false);
    start = end + 1;
    if (j.is_discarded()) continue;
    const std::string kind = j.value("kind", std::string());
    out.push_back(ParseDamageKind(kind) ? kind : "?");
  }
  return out;
}

CheckOptions MatrixCheckOptions(FileSystem* fs, Clock* clock) {
  CheckOptions o;
  o.fs = fs;
  o.clock = clock;
  o.config = CrashMatrixConfig(3);
  o.drop_cache = false;
  return o;
}

// What a start-up recovery of `fs` had to repair: empty when nothing, else
// the dir warnings and the reports of the partitions it changed.
Result<std::string> RecoveryChangesSomething(FileSystem* fs, const std::string& log_dir,
                                             Clock* clock) {
  LogManagerOptions o;
  o.fs = fs;
  o.clock = clock;
  o.quarantine = true;
  LogManager manager(o);
  DARUMA_RETURN_IF_ERROR(manager.Startup({log_dir}, CrashMatrixConfig(3), 1));
  std::string changed = manager.HasFailures() ? "dir failed; " : "";
  for (const auto& dw : manager.dir_warnings()) {
    for (const auto& w : dw.second) changed += w + "; ";
  }
  for (const auto& p : manager.report().partitions) {
    // Zeros after the active segment's last batch (4 KiB or more, an empty
    // quarantine path) are what log.preallocate leaves in every live dir:
    // recovery cuts them without losing a byte, check does not count them,
    // so repair leaves them too. Stray files are left as found by design.
    PartitionRecoveryReport q = p;
    const Log* log = manager.GetLog(TopicPartition{p.topic, p.partition});
    const std::string active = log == nullptr ? "" : LogFileName(p.dir, log->active_segment_base());
    const size_t ranges = q.quarantined.size();
    std::erase_if(q.quarantined, [&](const QuarantinedRange& r) {
      if (!r.quarantine_path.empty() || r.file != active) return false;
      q.truncated_bytes -= r.bytes;
      return true;
    });
    if (q.quarantined.size() < ranges && q.quarantined.empty()) {
      const std::string cut = fmt::format("Corruption found in segment {},",
                                          log == nullptr ? -1 : log->active_segment_base());
      std::erase_if(q.warnings, [&](const std::string& w) { return w.rfind(cut, 0) == 0; });
    }
    // An offset gap in a topic that is not compacted is reported on every
    // start and kept as found (nothing changes; repair has nothing to cut).
    std::erase_if(q.warnings, [](const std::string& w) {
      return w.find("not a Kafka file") != std::string::npos ||
             w.find("an offset gap in a topic that is not compacted") != std::string::npos;
    });
    if (Reported(q)) changed += ToJson(p).dump() + "; ";
  }
  return changed;
}

class CorruptionMatrixTest : public ::testing::Test {
 protected:
  void SetUp() override {
    log_dir_ = tmp_.Join("logs");
    std::filesystem::create_directories(log_dir_);  // DirLock is on the real FS
  }

  // Generates the original dir: the crash workload without faults, then
  // (clean) a start-up and clean shutdown, or (unclean) not.
  void Generate(bool clean) {
    clean_ = clean;
    original_ = std::make_unique<MemFileSystem>();
    ASSERT_TRUE(original_->CreateDir(log_dir_).ok());
    ManualClock clock(kWorkloadNowMs);
    CrashWorkload workload(original_.get(), log_dir_, 3, &clock);
    ASSERT_TRUE(workload.Run().ok());
    model_ = workload.model();
    // One undamaged start-up first, so that the baseline is a fixed point of
    // recovery (stray snapshots removed, checkpoints written): whatever a
    // damaged start-up changes afterwards is due to the damage.
    LogManagerOptions o;
    o.fs = original_.get();
    o.clock = &clock;
    LogManager m(o);
    ASSERT_TRUE(m.Startup({log_dir_}, CrashMatrixConfig(3), 1).ok());
    ASSERT_FALSE(m.HasFailures());
    if (clean) {
      ASSERT_TRUE(m.Shutdown().ok());
      return;
    }
    // Unclean variant: recovery point 0 everywhere, so the damaged start-up
    // scans every segment (a clean dir is, by Kafka's design, not scanned).
    OffsetMap zeros;
    for (const auto& [tp, part] : model_) zeros[tp] = 0;
    auto cp = OffsetCheckpointFile::Open(JoinPath(log_dir_, kRecoveryPointCheckpointFile),
                                         original_.get());
    ASSERT_TRUE(cp.ok());
    ASSERT_TRUE(cp->Write(zeros).ok());
  }

  void RunSeed(uint64_t seed, Outcome* out) {
    std::mt19937_64 rng(seed);
    auto image = std::make_unique<MemFileSystem>();
    ASSERT_TRUE(CopyTreeBetween(original_.get(), image.get(), log_dir_).ok());
    // Every other seed gets a targeted damage (corruption_damage.h).
    const Damage damage =
        seed % 4 < 2
            ? Damage(rng() % kRandomDamageKinds)
            : Damage(kRandomDamageKinds + int(rng() % (kDamageKinds - kRandomDamageKinds)));
    std::string victim, what;
    if (IsTargeted(damage)) {
      TargetedDamage t = ApplyTargeted(damage, image.get(), log_dir_, rng);
      if (!t.applied) return;
      victim = t.victim;
      what = t.description;
    } else {
      auto files = image->Files(log_dir_);
      ASSERT_FALSE(files.empty());
      auto it = files.begin();
      std::advance(it, int64_t(rng() % files.size()));
      victim = it->first;
      std::vector<uint8_t> data = it->second;
      what = ApplyRandom(damage, &data, rng);
      ASSERT_TRUE(WriteWhole(image.get(), victim, data).ok());
    }
    const auto damaged = image->Files(log_dir_);
    ManualClock tool_clock(kWorkloadNowMs);
    const bool check_reported = CheckReports(*image, &tool_clock);
    const std::string kind = std::string(clean_ ? "clean " : "unclean ") + FileKind(victim) +
                             (IsTargeted(damage) ? std::string(" ") + DamageName(damage) : "");
    const std::string label = std::string(clean_ ? "clean" : "unclean") + " seed " +
                              std::to_string(seed) + " " + victim + " " + what;
    Repair(*image, label, kind, &tool_clock, out);
    ++out->seeds;
    if (IsTargeted(damage)) ++out->targeted;

    ManualClock clock(kWorkloadNowMs);
    LogManagerOptions o;
    o.fs = image.get();
    o.clock = &clock;
    o.quarantine = true;
    LogManager manager(o);
    Status st = manager.Startup({log_dir_}, CrashMatrixConfig(3), 1);
    if (!st.ok()) {
      ++out->startup_failures;
      out->Note("startup_failure", label + ": " + st.ToString());
      JudgeCheck(check_reported, /*harmless=*/false, label, kind, out);
      return;
    }
    bool lost_anything = false, reported = false, bad = false;
    std::string loss;
    bool invalid = false;
    bool gap = false;
    for (const auto& dw : manager.dir_warnings()) reported |= !dw.second.empty();
    for (const auto& [tp, part] : model_) {
      const PartitionRecoveryReport* rep = nullptr;
      for (const auto& p : manager.report().partitions) {
        if (p.topic == tp.topic && p.partition == tp.partition) rep = &p;
      }
      if (rep != nullptr) reported |= Reported(*rep);
      Log* log = manager.GetLog(tp);
      if (log == nullptr) {
        // Refused: the partition dir is exactly what the damage left.
        const std::string part_dir = JoinPath(log_dir_, tp.ToString());
        std::map<std::string, std::vector<uint8_t>> expected;
        for (const auto& [path, bytes] : damaged) {
          if (path.rfind(part_dir + "/", 0) == 0) expected[path] = bytes;
        }
        ++out->refused;
        if (IsTargeted(damage)) {
          // Each targeted damage has a safe automatic outcome (issue 22).
          ++out->refused_targeted;
          out->Note("refused_targeted",
                    label + ": " + tp.ToString() + ": " +
                        (rep == nullptr || rep->errors.empty() ? "" : rep->errors[0]));
        }
        if (image->Files(part_dir) != expected) {
          ++out->refused_changed;
          std::string why = rep == nullptr || rep->errors.empty() ? "" : rep->errors[0];
          for (const auto& [path, bytes] : image->Files(part_dir)) {
            auto e = expected.find(path);
            if (e == expected.end() || e->second != bytes) why += " | differs: " + path;
          }
          out->Note("refused_changed", label + ": " + tp.ToString() + ": " + why);
        }
        lost_anything = true;
        loss += " " + tp.ToString() + " not loaded";
        continue;
      }
      LogScan scan = ScanLog(log);
      if (!scan.invalid.empty()) {
        // A gap (valid batches, offsets missing in between) is what Kafka's
        // loader leaves when it cuts a damaged segment and keeps later ones;
        // it is a loss, and acceptable only when recovery reported it.
        const bool only_gaps =
            std::all_of(scan.invalid.begin(), scan.invalid.end(),
                        [](const std::string& e) { return e.find(": gap,") != std::string::npos; });
        (only_gaps ? gap : invalid) = true;
        bad = true;
        loss += " " + scan.invalid[0];
      }
      for (const ScannedRecord& r : scan.records) {
        auto w = part.written.find(r.offset);
        if (w == part.written.end() || w->second != (r.control ? std::nullopt : r.value)) {
          ++out->divergent;
          bad = true;
          out->Note("divergent", label + ": offset " + std::to_string(r.offset));
          break;
        }
      }
      if (int64_t(scan.records.size()) != int64_t(part.written.size())) {
        lost_anything = true;
        loss += " " + tp.ToString() + " serves " + std::to_string(scan.records.size()) + " of " +
                std::to_string(part.written.size()) + " records (log start " +
                std::to_string(log->log_start_offset()) + ", LEO " +
                std::to_string(log->log_end_offset()) + ")";
      }
      // Quarantine accounting for .log and .snapshot files of this partition.
      const std::string part_dir = JoinPath(log_dir_, LogDirName(tp));
      const auto after = image->Files(part_dir);
      const auto manifest = ManifestBytes(*image, part_dir);
      for (const auto& [path, bytes] : damaged) {
        if (ParentDir(path) != part_dir) continue;
        // Segments always; other files only when they are the damaged one
        // (Kafka deletes derived files such as stray snapshots by design).
        // Index files are derived and resized by design (full size while
        // active, trimmed at close), so they are not accounted either.
        const std::string k = FileKind(path);
        if (k != "log" && (path != victim || k == "index" || k == "timeindex" || k == "txnindex")) {
          continue;
        }
        auto a = after.find(path);
        const int64_t removed =
            int64_t(bytes.size()) - (a == after.end() ? 0 : int64_t(a->second.size()));
        if (removed <= 0) continue;
        auto m = manifest.find(BaseName(path));
        const int64_t kept = m == manifest.end() ? 0 : m->second;
        if (kept < removed) {
          ++out->quarantine_mismatches;
          bad = true;
          out->Note("quarantine", label + ": " + path + " lost " + std::to_string(removed) +
                                      " bytes, manifest has " + std::to_string(kept));
        }
      }
      int64_t manifest_total = 0, report_total = 0;
      for (const auto& [f, b] : manifest) manifest_total += b;
      if (rep != nullptr) {
        for (const auto& q : rep->quarantined) report_total += q.bytes;
      }
      std::vector<std::string> report_kinds;
      if (rep != nullptr) {
        for (const auto& q : rep->quarantined) report_kinds.push_back(DamageKindName(q.kind));
      }
      if (const auto kinds = ManifestKinds(*image, part_dir); kinds != report_kinds) {
        ++out->kind_mismatches;
        bad = true;
        std::string listed;
        for (const auto& k : kinds) listed += " " + k;
        out->Note("kind", label + ": manifest kinds" + listed);
      }
      if (manifest_total != report_total) {
        ++out->report_mismatches;
        bad = true;
        out->Note("report", label + ": manifest " + std::to_string(manifest_total) +
                                " bytes, report " + std::to_string(report_total));
      }
    }
    if (gap && !reported) invalid = true;
    auto& k = out->by_kind[kind];
    if (clean_ && FileKind(victim) == "log" && (lost_anything || bad) && !reported) {
      // Not scanned by design after a clean shutdown: only a full check sees it.
      ++out->unscanned_clean;
      out->Note("unscanned_clean", label + ":" + loss);
      JudgeCheck(check_reported, /*harmless=*/false, label, kind, out);
      return;
    }
    JudgeCheck(check_reported, !lost_anything && !bad, label, kind, out);
    if (invalid) {
      ++out->invalid_served;
      out->Note("invalid_served", label + ":" + loss);
    }
    if (!lost_anything && !bad) {
      ++out->harmless;
      ++k[0];
    } else if (reported) {
      ++out->detected;
      ++k[1];
    } else {
      ++out->undetected_loss;
      ++k[2];
      out->Note("undetected_loss", label + ":" + loss);
    }
  }

  // `check` on a copy of the damaged image: did it report anything?
  bool CheckReports(MemFileSystem& damaged, Clock* clock) {
    MemFileSystem copy;
    EXPECT_TRUE(CopyTreeBetween(&damaged, &copy, log_dir_).ok());
    auto result = CheckLogDir(log_dir_, MatrixCheckOptions(&copy, clock));
    return !result.ok() || result->HasProblems();
  }

  void JudgeCheck(bool reported, bool harmless, const std::string& label, const std::string& kind,
                  Outcome* out) {
    if (reported) {
      ++out->check_reported;
    } else if (harmless) {
      ++out->check_silent_harmless;
    } else {
      ++out->check_missed;
      ++out->by_kind[kind][3];
      out->Note("check_missed", label);
    }
  }

  // `repair` with no limit on a copy of the damaged image, then check and
  // start-up recovery on the result.
  void Repair(MemFileSystem& damaged, const std::string& label, const std::string& kind,
              Clock* clock, Outcome* out) {
    MemFileSystem copy;
    ASSERT_TRUE(CopyTreeBetween(&damaged, &copy, log_dir_).ok());
    auto plan = CheckLogDir(log_dir_, MatrixCheckOptions(&copy, clock));
    ASSERT_TRUE(plan.ok()) << plan.status().ToString();
    for (const PartitionCheck& p : plan->partitions) {
      if (!p.cut) continue;
      ++out->repair_cut;
      out->Note("repair_cut", label + ": " + p.cut->file + " at byte " +
                                  std::to_string(p.cut->position) + ", " +
                                  std::to_string(p.cut->bytes) + " bytes");
    }
    if (plan->HasProblems()) {
      const std::string refusal = RepairRefusal({*plan}, -1);
      if (!refusal.empty()) {
        ++out->repair_refused;
        out->Note("repair_refused", label + ": " + refusal);
        return;
      }
      RepairApplyOptions ro;
      ro.fs = &copy;
      ro.clock = clock;
      ro.config = CrashMatrixConfig(3);
      AppliedRepair applied;
      if (Status st = ApplyRepair(*plan, ro, &applied); !st.ok()) {
        ++out->repair_failed;
        ++out->by_kind[kind][4];
        out->Note("repair_failed", label + ": " + st.ToString());
        return;
      }
    }
    auto after = CheckLogDir(log_dir_, MatrixCheckOptions(&copy, clock));
    if (after.ok() && after->HasProblems() && !after->HasRepairableProblems()) {
      // Left for the operator by design (a stray file Kafka would refuse).
      ++out->repair_operator_only;
      return;
    }
    if (!after.ok() || after->HasProblems()) {
      ++out->repair_failed;
      ++out->by_kind[kind][4];
      out->Note("repair_failed",
                label + ": check after repair: " +
                    (after.ok() ? ToJson(*after).dump() : after.status().ToString()));
      return;
    }
    auto changed = RecoveryChangesSomething(&copy, log_dir_, clock);
    if (!changed.ok() || !changed->empty()) {
      ++out->repair_failed;
      ++out->by_kind[kind][4];
      out->Note("repair_failed",
                label + ": recovery after repair " +
                    (changed.ok() ? "repaired again: " + *changed : changed.status().ToString()));
      return;
    }
    ++out->repair_fixed;
  }

  TempDir tmp_;
  std::string log_dir_;
  std::unique_ptr<MemFileSystem> original_;
  WorkloadModel model_;
  bool clean_ = false;
};

TEST_F(CorruptionMatrixTest, EveryDamageIsDetectedOrHarmlessAndQuarantined) {
  const uint64_t first = EnvU64("DARUMA_CORRUPTION_FIRST_SEED", 1);
  const uint64_t count = EnvU64("DARUMA_CORRUPTION_SEEDS", 400);
  Outcome out;
  for (int clean = 0; clean < 2; ++clean) {
    Generate(clean == 1);
    for (uint64_t seed = first + uint64_t(clean); seed < first + count; seed += 2) {
      RunSeed(seed, &out);
    }
  }
  std::cout << "CORRUPTION-MATRIX seeds=" << out.seeds << " harmless=" << out.harmless
            << " detected=" << out.detected << " undetected_loss=" << out.undetected_loss
            << " startup_failures=" << out.startup_failures
            << " invalid_served=" << out.invalid_served << " divergent=" << out.divergent
            << " quarantine_mismatches=" << out.quarantine_mismatches
            << " report_mismatches=" << out.report_mismatches
            << " kind_mismatches=" << out.kind_mismatches
            << " unscanned_clean=" << out.unscanned_clean << " refused=" << out.refused
            << " refused_changed=" << out.refused_changed << " targeted=" << out.targeted
            << " refused_targeted=" << out.refused_targeted
            << " check_reported=" << out.check_reported
            << " check_silent_harmless=" << out.check_silent_harmless
            << " check_missed=" << out.check_missed << " repair_fixed=" << out.repair_fixed
            << " repair_refused=" << out.repair_refused << " repair_failed=" << out.repair_failed
            << " repair_cut=" << out.repair_cut
            << " repair_operator_only=" << out.repair_operator_only << std::endl;
  for (const auto& [kind, c] : out.by_kind) {
    std::cout << "  kind " << kind << ": harmless=" << c[0] << " detected=" << c[1]
              << " undetected=" << c[2] << " check_missed=" << c[3] << " repair_failed=" << c[4]
              << "\n";
  }
  for (const auto& e : out.examples) std::cout << "  " << e << "\n";
  EXPECT_EQ(out.startup_failures, 0);
  EXPECT_EQ(out.invalid_served, 0);
  EXPECT_EQ(out.divergent, 0);
  EXPECT_EQ(out.undetected_loss, 0);
  EXPECT_EQ(out.quarantine_mismatches, 0);
  EXPECT_EQ(out.report_mismatches, 0);
  EXPECT_EQ(out.kind_mismatches, 0);
  EXPECT_EQ(out.refused_changed, 0);
  EXPECT_EQ(out.refused_targeted, 0);
  EXPECT_EQ(out.check_missed, 0);
  EXPECT_EQ(out.repair_failed, 0);
}

}  // namespace
}  // namespace daruma::testing
