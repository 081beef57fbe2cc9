// LoadLog rules (spec §10.3-§10.8), one case each, on logs written by
// Log::AppendAsLeader and then damaged by hand; and the quarantine that sets
// aside every byte Kafka's loader destroys.
#include <algorithm>
#include <map>
#include <utility>

#include "recovery/load_journal.h"
#include "recovery/log_loader_fixture.h"

namespace daruma {
namespace {

TEST_F(LogLoaderTest, CleanLoadKeepsEverything) {
  WriteLog(3, 10);
  auto log = Load(true, 90);
  ASSERT_TRUE(log.ok()) << log.status().ToString();
  EXPECT_EQ((*log)->log_end_offset(), 90);
  EXPECT_EQ((*log)->recovery_point(), 90);
  EXPECT_EQ((*log)->high_watermark(), 0);
  EXPECT_EQ((*log)->num_segments(), 3u);
  EXPECT_EQ((*log)->leader_epochs(), (std::vector<EpochEntry>{{0, 0}, {1, 30}, {2, 60}}));
  EXPECT_EQ((*log)->active_producer_count(), 1u);
  EXPECT_EQ(report_.recovered_segments, 0);
  EXPECT_TRUE(report_.quarantined.empty());
  EXPECT_EQ(report_.segments.size(), 3u);
}

TEST_F(LogLoaderTest, TornTailAtEveryByteOfTheLastBatch) {
  WriteLog(1, 5);
  const std::string original = ReadFileToString(File(0, ".log"));
  const auto batches = Batches(File(0, ".log"));
  const BatchPos last = batches.back();
  for (int64_t cut = last.position + 1; cut < last.position + last.size; ++cut) {
    SCOPED_TRACE("cut at " + std::to_string(cut));
    WriteStringToFile(File(0, ".log"), original.substr(0, size_t(cut)));
    fsys::remove_all(part_ + "/" + kQuarantineDirName);
    auto log = Load(false, 0);
    ASSERT_TRUE(log.ok()) << log.status().ToString();
    EXPECT_EQ((*log)->log_end_offset(), last.base_offset);
    EXPECT_EQ((*log)->active_segment_size(), last.position);
    EXPECT_EQ(report_.truncated_bytes, cut - last.position);
    // The torn bytes, then (first cut only: the load removes it) the producer
    // snapshot the clean close wrote at the old end, which proves the loss.
    ASSERT_EQ(report_.quarantined.size(), cut == last.position + 1 ? 2u : 1u);
    if (report_.quarantined.size() == 2) {
      EXPECT_EQ(report_.quarantined[1].kind, DamageKind::kLostRecords);
      EXPECT_TRUE(report_.quarantined[1].file.ends_with(".snapshot"))
          << report_.quarantined[1].file;
    }
    EXPECT_EQ(report_.quarantined[0].from_position, last.position);
    EXPECT_EQ(report_.quarantined[0].bytes, cut - last.position);
    EXPECT_EQ(ReadFileToString(report_.quarantined[0].quarantine_path),
              original.substr(size_t(last.position), size_t(cut - last.position)));
    // Kafka's line, then the loss the producer snapshot of the first load
    // (at the old log end) proves.
    ASSERT_GE(report_.warnings.size(), 1u);
    EXPECT_EQ(report_.warnings[0], "Corruption found in segment 0, truncating to offset " +
                                       std::to_string(last.base_offset));
    if (report_.warnings.size() > 1) {
      EXPECT_NE(report_.warnings[1].find("were in the log before and are gone"), std::string::npos)
          << report_.warnings[1];
    }
    ASSERT_TRUE((*log)->Close().ok());
  }
}

// Segments gone (deleted by hand, a bad copy): the producer snapshots and
// leader epochs above the recovered end are the last trace of the records
// that were there. Kafka deletes the snapshots and drops the epochs; a copy
// of each goes to quarantine. An epoch entry at the end itself is routine.
TEST_F(LogLoaderTest, SnapshotsAndEpochsAboveALostTailAreKeptInQuarantine) {
  WriteLog(3, 10);
  for (int64_t base : {30, 60}) {
    for (const char* ext : {".log", ".index", ".timeindex"}) fsys::remove(File(base, ext));
  }
  const std::string epochs = ReadFileToString(part_ + "/leader-epoch-checkpoint");
  const std::string snapshot = ReadFileToString(File(90, ".snapshot"));
  auto log = Load(false, 0);
  ASSERT_TRUE(log.ok()) << log.status().ToString();
  EXPECT_EQ((*log)->log_end_offset(), 30);
  EXPECT_EQ((*log)->leader_epochs(), (std::vector<EpochEntry>{{0, 0}}));
  std::map<std::string, std::string> kept;  // file -> quarantined bytes
  for (const auto& entry : Manifest(part_)) {
    EXPECT_EQ(entry["kind"], "lost_records") << entry.dump();
    kept[entry["file"]] = ReadFileToString(entry["quarantinePath"]);
  }
  ASSERT_EQ(kept.count("leader-epoch-checkpoint"), 1u);
  EXPECT_EQ(kept["leader-epoch-checkpoint"], epochs);
  ASSERT_EQ(kept.count(FilenamePrefixFromOffset(90) + ".snapshot"), 1u);
  EXPECT_EQ(kept[FilenamePrefixFromOffset(90) + ".snapshot"], snapshot);
  EXPECT_FALSE(fsys::exists(File(90, ".snapshot")));
  ASSERT_TRUE((*log)->Close().ok());

  // Closed at 30 with its epoch {0, 0}; a new leader epoch starting at the
  // end, with nothing written since, is dropped at the next load as routine.
  fsys::remove_all(part_ + "/" + kQuarantineDirName);
  WriteStringToFile(part_ + "/leader-epoch-checkpoint", "0\n2\n0 0\n1 30\n");
  auto again = Load(false, 0);
  ASSERT_TRUE(again.ok()) << again.status().ToString();
  EXPECT_EQ((*again)->leader_epochs(), (std::vector<EpochEntry>{{0, 0}}));
  EXPECT_FALSE(fsys::exists(part_ + "/" + kQuarantineDirName));
  ASSERT_TRUE((*again)->Close().ok());
}

TEST_F(LogLoaderTest, BitFlipInCrcCoveredHeaderTruncatesAtThatBatch) {
  WriteLog(1, 5);
  const auto batches = Batches(File(0, ".log"));
  const int64_t attributes = 21;  // first CRC-covered byte
  FlipByte(File(0, ".log"), batches[2].position + attributes + 1);
  auto log = Load(false, 0);
  ASSERT_TRUE(log.ok());
  EXPECT_EQ((*log)->log_end_offset(), batches[2].base_offset);
  EXPECT_EQ((*log)->active_segment_size(), batches[2].position);
  auto manifest = Manifest(part_);
  ASSERT_EQ(manifest.size(), 2u);  // and the snapshot at the old end (lost_records)
  EXPECT_EQ(manifest[1]["kind"], "lost_records");
  EXPECT_EQ(manifest[0]["fromPosition"], batches[2].position);
  EXPECT_EQ(manifest[0]["firstOffset"], batches[2].base_offset);
  EXPECT_EQ(manifest[0]["kind"], "bad_crc");
  const std::string reason = manifest[0]["reason"];
  EXPECT_NE(reason.find("00000000000000000000.log: batch at position " +
                        std::to_string(batches[2].position)),
            std::string::npos)
      << reason;
  EXPECT_NE(reason.find("field crc: expected"), std::string::npos) << reason;
  // The warning that reports the cut carries the same kind.
  ASSERT_FALSE(report_.damage.empty());
  EXPECT_EQ(report_.damage[0].kind, DamageKind::kBadCrc);
  EXPECT_EQ(report_.damage[0].text, report_.warnings[0]);
}

TEST_F(LogLoaderTest, ZeroFilledPreallocatedTailIsTruncated) {
  WriteLog(1, 5);
  const int64_t size = int64_t(fsys::file_size(File(0, ".log")));
  Resize(File(0, ".log"), size + 4096);
  auto log = Load(false, 0);
  ASSERT_TRUE(log.ok());
  EXPECT_EQ((*log)->log_end_offset(), 15);
  EXPECT_EQ((*log)->active_segment_size(), size);
  ASSERT_EQ(report_.quarantined.size(), 1u);
  EXPECT_EQ(report_.quarantined[0].bytes, 4096);
  // 4 KiB of zeros hold no data: recorded, not copied (see quarantine.h).
  EXPECT_EQ(report_.quarantined[0].kind, DamageKind::kZeroTail);
  EXPECT_NE(report_.quarantined[0].reason.find("at position " + std::to_string(size) +
                                               " (offset field 0): field size: expected >= 14, "
                                               "found 0"),
            std::string::npos)
      << report_.quarantined[0].reason;
  EXPECT_NE(report_.quarantined[0].reason.find(
                "; all zero bytes (unused preallocated space), nothing to keep"),
            std::string::npos);
  EXPECT_EQ(report_.quarantined[0].quarantine_path, "");
}

TEST_F(LogLoaderTest, CorruptionDeletesLaterSegmentsKafkaStyle) {
  WriteLog(3, 10);
  const auto batches = Batches(File(0, ".log"));
  FlipByte(File(0, ".log"), batches[4].position + 40);
  auto log = Load(false, 0, /*quarantine=*/false);
  ASSERT_TRUE(log.ok()) << log.status().ToString();
  EXPECT_EQ((*log)->log_end_offset(), 12);
  EXPECT_EQ((*log)->num_segments(), 1u);
  EXPECT_EQ(remaining_.load(), 0);
  EXPECT_TRUE(fsys::exists(File(30, ".log.deleted")));
  EXPECT_TRUE(fsys::exists(File(60, ".log.deleted")));
  // Recovering segment 0 rebuilt producer state up to offset 0, which (as in
  // Kafka) deleted every later snapshot.
  EXPECT_FALSE(fsys::exists(File(30, ".snapshot")));
  EXPECT_FALSE(fsys::exists(part_ + "/" + kQuarantineDirName));
  EXPECT_EQ((*log)->leader_epochs(), (std::vector<EpochEntry>{{0, 0}}));
  // No manifest says why the files went: the report does, with each kind.
  auto deleted = [&](const std::string& path) {
    return std::find_if(report_.damage.begin(), report_.damage.end(), [&](const auto& d) {
             return d.kind == DamageKind::kAfterDamage &&
                    d.text.rfind(path + ": deleted: ", 0) == 0;
           }) != report_.damage.end();
  };
  EXPECT_TRUE(deleted(File(30, ".log")));
  EXPECT_TRUE(deleted(File(60, ".index")));
  EXPECT_EQ(report_.damage.front().kind, DamageKind::kBadCrc);  // the cut itself
  // The next load's pass 1 removes the leftovers (no quarantine here); they
  // lie above the log's last segment, so they are records a cut dropped.
  ASSERT_TRUE((*log)->Close().ok());
  log = Load(true, 12, false);
  ASSERT_TRUE(log.ok());
  EXPECT_FALSE(fsys::exists(File(30, ".log.deleted")));
  ASSERT_FALSE(report_.damage.empty());
  EXPECT_EQ(report_.damage.front().kind, DamageKind::kLeftoverTempFile);
}

// Kafka's start-up cut damage and renamed the later segments `.deleted`; a
// crash kept them. They may be the only copy of those records: quarantined,
// unlike a deletion's leftovers below the last segment, which are removed.
TEST_F(LogLoaderTest, DeletedSegmentsAboveTheLastOneAreQuarantinedBelowItRemoved) {
  WriteLog(3, 10);
  const std::string seg30 = ReadFileToString(File(30, ".log"));
  for (const char* ext : {".log", ".index", ".timeindex"}) {
    std::filesystem::rename(File(60, ext), File(60, std::string(ext) + ".deleted"));
  }
  WriteStringToFile(File(5, ".log.deleted"), "old records, deleted by retention");
  auto log = Load(false, 0);
  ASSERT_TRUE(log.ok()) << log.status().ToString();
  EXPECT_EQ((*log)->log_end_offset(), 60);
  auto quarantined = [&](const std::string& path) {
    return std::any_of(report_.quarantined.begin(), report_.quarantined.end(),
                       [&](const QuarantinedRange& q) { return q.file == path; });
  };
  for (const char* ext : {".log.deleted", ".index.deleted", ".timeindex.deleted"}) {
    EXPECT_FALSE(fsys::exists(File(60, ext))) << ext;
    EXPECT_TRUE(quarantined(File(60, ext))) << ext;
  }
  EXPECT_FALSE(fsys::exists(File(5, ".log.deleted")));
  EXPECT_FALSE(quarantined(File(5, ".log.deleted")));
  EXPECT_NE(std::find(report_.deleted_files.begin(), report_.deleted_files.end(),
                      File(5, ".log.deleted")),
            report_.deleted_files.end());
  EXPECT_EQ(ReadFileToString(File(30, ".log")), seg30);
}

TEST_F(LogLoaderTest, CorruptionMovesLaterSegmentsToQuarantine) {
  WriteLog(3, 10);
  const std::string seg30 = ReadFileToString(File(30, ".log"));
  const auto batches = Batches(File(0, ".log"));
  FlipByte(File(0, ".log"), batches[4].position + 40);
  auto log = Load(false, 0);
  ASSERT_TRUE(log.ok()) << log.status().ToString();
  EXPECT_EQ((*log)->log_end_offset(), 12);
  EXPECT_FALSE(fsys::exists(File(30, ".log.deleted")));
  EXPECT_FALSE(fsys::exists(File(30, ".log")));
  EXPECT_EQ(ReadFileToString(part_ + "/" + kQuarantineDirName + "/" + FilenamePrefixFromOffset(30) +
                             ".log@0"),
            seg30);
  auto manifest = Manifest(part_);
  ASSERT_EQ(manifest.size(), report_.quarantined.size());
  int64_t log_bytes = 0;
  for (const auto& line : manifest) {
    EXPECT_EQ(line["partition"], "t-0");
    if (std::string(line["file"]).ends_with(".log")) log_bytes += int64_t(line["bytes"]);
  }
  // The corrupt tail of segment 0 plus all of segments 30 and 60.
  EXPECT_EQ(log_bytes, (batches.back().position + batches.back().size - batches[4].position) +
                           int64_t(seg30.size()) +
                           int64_t(ReadFileToString(part_ + "/" + kQuarantineDirName + "/" +
                                                    FilenamePrefixFromOffset(60) + ".log@0")
                                       .size()));
}

TEST_F(LogLoaderTest, NonMonotonicOffsetsCutAtTheEarliestSuspectBatchAndDeleteLater) {
  WriteLog(3, 10);
  const auto batches = Batches(File(30, ".log"));
  std::string data = ReadFileToString(File(30, ".log"));
  // Base offset is not CRC-covered: batch 5 now claims offsets of batch 1.
  // Kafka's index rebuild fails on it and truncates the whole segment;
  // Daruma's scan (issue 22 rule 1) ends the valid data before batch 1, the
  // earliest batch that batch 5 disagrees with.
  std::span<uint8_t> bytes(reinterpret_cast<uint8_t*>(data.data()), data.size());
  SetBatchBaseOffset(bytes.subspan(size_t(batches[5].position), size_t(batches[5].size)), 33);
  WriteStringToFile(File(30, ".log"), data);
  config_.index_interval_bytes = 0;  // index every batch so the rebuild sees it
  auto log = Load(false, 30);
  ASSERT_TRUE(log.ok()) << log.status().ToString();
  EXPECT_EQ((*log)->log_end_offset(), batches[1].base_offset);
  EXPECT_EQ((*log)->num_segments(), 2u);
  EXPECT_EQ((*log)->active_segment_size(), batches[1].position);
  EXPECT_EQ(report_.truncated_bytes, int64_t(data.size()) - batches[1].position);
  EXPECT_FALSE(fsys::exists(File(60, ".log")));
  ASSERT_FALSE(report_.quarantined.empty());
  EXPECT_NE(report_.quarantined[0].reason.find("baseOffset"), std::string::npos)
      << report_.quarantined[0].reason;
}

TEST_F(LogLoaderTest, OrphanIndexesAndTemporaryFilesAreRemoved) {
  WriteLog(2, 5);
  WriteStringToFile(File(500, ".index"), std::string(8, '\0'));
  WriteStringToFile(File(500, ".timeindex"), std::string(12, '\0'));
  WriteStringToFile(File(0, ".log.deleted"), "old");
  WriteStringToFile(File(3, ".log.cleaned"), "partial");
  WriteStringToFile(File(4, ".log.swap"), "incomplete split");  // >= min .cleaned
  auto log = Load(true, 30);
  ASSERT_TRUE(log.ok()) << log.status().ToString();
  for (auto ext : {".index", ".timeindex"}) EXPECT_FALSE(fsys::exists(File(500, ext)));
  EXPECT_FALSE(fsys::exists(File(0, ".log.deleted")));
  EXPECT_FALSE(fsys::exists(File(3, ".log.cleaned")));
  EXPECT_FALSE(fsys::exists(File(4, ".log.swap")));
  EXPECT_FALSE(fsys::exists(File(4, ".log")));
  EXPECT_EQ(report_.quarantined.size(), 5u);
  EXPECT_EQ(report_.deleted_files.size(), 5u);
  EXPECT_EQ((*log)->log_end_offset(), 30);
}

TEST_F(LogLoaderTest, InterruptedSwapIsCompleted) {
  WriteLog(2, 5);
  // A compaction output covering both segments, fully renamed to .swap.
  WriteStringToFile(File(0, ".log.swap"),
                    ReadFileToString(File(0, ".log")) + ReadFileToString(File(15, ".log")));
  auto log = Load(true, 30, /*quarantine=*/false);
  ASSERT_TRUE(log.ok()) << log.status().ToString();
  EXPECT_EQ((*log)->num_segments(), 1u);
  EXPECT_EQ((*log)->log_end_offset(), 30);
  EXPECT_FALSE(fsys::exists(File(0, ".log.swap")));
  EXPECT_FALSE(fsys::exists(File(15, ".log")));
  EXPECT_FALSE(fsys::exists(File(15, ".snapshot")));
  // Reading the swap segment's next offset created its (empty) offset index,
  // as in Kafka; the time index is recreated empty.
  ASSERT_TRUE((*log)->Close().ok());
  EXPECT_EQ(fsys::file_size(File(0, ".index")), 0u);
  EXPECT_EQ(fsys::file_size(File(0, ".timeindex")), 0u);
}

// A .swap is a clean's or a split's whole output, so every byte of it is a
// valid batch. Garbage under that name (a header read as a huge batch) once
// read as an empty range and was renamed over the valid .log of its name.
TEST_F(LogLoaderTest, ASwapThatIsNotWholeBatchesIsQuarantinedAndItsSegmentsStay) {
  WriteLog(2, 5);
  const std::string seg15 = ReadFileToString(File(15, ".log"));
  std::string garbage(5000, '\x5a');
  garbage[8] = '\x33';  // length 0x335a5a5a: a batch far past the end
  WriteStringToFile(File(15, ".log.swap"), garbage);
  auto log = Load(true, 30);
  ASSERT_TRUE(log.ok()) << log.status().ToString();
  EXPECT_EQ((*log)->log_end_offset(), 30);
  EXPECT_EQ((*log)->num_segments(), 2u);
  EXPECT_EQ(ReadFileToString(File(15, ".log")), seg15);
  EXPECT_FALSE(fsys::exists(File(15, ".log.swap")));
  bool kept = false;
  for (const auto& q : report_.quarantined) {
    kept = kept || ReadFileToString(q.quarantine_path) == garbage;
  }
  EXPECT_TRUE(kept);
  for (const auto& e : fsys::directory_iterator(part_)) {
    EXPECT_FALSE(e.path().string().ends_with(".swap")) << e.path();
  }
  ASSERT_FALSE(report_.warnings.empty());
  EXPECT_NE(report_.warnings.back().find("not whole batches"), std::string::npos)
      << report_.warnings.back();
}

// An empty .swap (a clean that kept nothing of its segments) replaces the
// .log of its name, as Kafka's rename does; that .log goes aside first.
TEST_F(LogLoaderTest, AFileASwapReplacesByNameIsQuarantinedFirst) {
  WriteLog(2, 5);
  const std::string seg15 = ReadFileToString(File(15, ".log"));
  WriteStringToFile(File(15, ".log.swap"), "");
  auto log = Load(true, 30);
  ASSERT_TRUE(log.ok()) << log.status().ToString();
  EXPECT_EQ(fsys::file_size(File(15, ".log")), 0u);
  bool kept = false;
  for (const auto& q : report_.quarantined) {
    kept = kept || ReadFileToString(q.quarantine_path) == seg15;
  }
  EXPECT_TRUE(kept);
}

// An offset-overflow split leaves several swaps: one of them damaged sets
// all of them aside while the old segment is still here, so no swap's range
// deletes the only other copy of a damaged one's offsets.
TEST_F(LogLoaderTest, OneDamagedSwapOfASplitKeepsTheOldSegment) {
  WriteLog(2, 5);
  const std::string seg0 = ReadFileToString(File(0, ".log"));
  const auto batches = Batches(File(0, ".log"));
  ASSERT_GE(batches.size(), 2u);
  const size_t cut = size_t(batches[1].position);
  WriteStringToFile(File(0, ".log.swap"), seg0.substr(0, cut));
  std::string second = seg0.substr(cut);
  second[second.size() / 2] ^= 0x20;  // a flipped byte: the CRC fails
  WriteStringToFile(File(batches[1].base_offset, ".log.swap"), second);
  auto log = Load(true, 30);
  ASSERT_TRUE(log.ok()) << log.status().ToString();
  EXPECT_EQ(ReadFileToString(File(0, ".log")), seg0);
  EXPECT_EQ((*log)->log_end_offset(), 30);
  EXPECT_FALSE(fsys::exists(File(0, ".log.swap")));
  EXPECT_FALSE(fsys::exists(File(batches[1].base_offset, ".log.swap")));
}

TEST_F(LogLoaderTest, CorruptSnapshotIsIgnoredAndQuarantined) {
  WriteLog(2, 5);
  WriteStringToFile(File(30, ".snapshot"), "garbage!");
  auto log = Load(true, 30);
  ASSERT_TRUE(log.ok()) << log.status().ToString();
  EXPECT_EQ((*log)->active_producer_count(), 1u);
  ASSERT_EQ(report_.quarantined.size(), 1u);
  EXPECT_EQ(report_.quarantined[0].bytes, 8);
  EXPECT_TRUE(report_.quarantined[0].reason.starts_with("corrupt producer snapshot"));
}

// After a crash, recovery from the last segment deletes the snapshot above
// it unread (Kafka's truncateAndReload) and writes it again: a corrupt one
// is copied aside just before it goes.
TEST_F(LogLoaderTest, CorruptSnapshotThatRecoveryReplacesIsQuarantinedFirst) {
  WriteLog(3, 10);
  WriteStringToFile(File(90, ".snapshot"), "garbage!");
  auto log = Load(false, 60);
  ASSERT_TRUE(log.ok()) << log.status().ToString();
  EXPECT_EQ((*log)->log_end_offset(), 90);
  EXPECT_EQ((*log)->active_producer_count(), 1u);
  ASSERT_EQ(report_.quarantined.size(), 1u);
  EXPECT_EQ(report_.quarantined[0].bytes, 8);
  EXPECT_TRUE(report_.quarantined[0].reason.starts_with("corrupt producer snapshot"));
  EXPECT_EQ(ReadFileToString(report_.quarantined[0].quarantine_path), "garbage!");
  EXPECT_NE(ReadFileToString(File(90, ".snapshot")), "garbage!");
}

// A stray snapshot (not at a segment's base) goes on every load, clean or
// not, as in Kafka; a corrupt one is copied aside first.
TEST_F(LogLoaderTest, CorruptStraySnapshotIsQuarantinedBeforeItIsDeleted) {
  WriteLog(3, 10);
  WriteStringToFile(File(45, ".snapshot"), "garbage!");
  auto log = Load(true, 90);
  ASSERT_TRUE(log.ok()) << log.status().ToString();
  EXPECT_FALSE(fsys::exists(File(45, ".snapshot")));
  ASSERT_EQ(report_.quarantined.size(), 1u);
  EXPECT_EQ(ReadFileToString(report_.quarantined[0].quarantine_path), "garbage!");
  EXPECT_NE(
      std::find(report_.deleted_files.begin(), report_.deleted_files.end(), File(45, ".snapshot")),
      report_.deleted_files.end());
}

// A snapshot the load neither reads nor removes is not read at all, as in
// Kafka: it stays as it is, and only a load that uses or removes it reports it.
TEST_F(LogLoaderTest, CorruptSnapshotTheLoadDoesNotTouchStaysUnread) {
  WriteLog(3, 10);
  WriteStringToFile(File(30, ".snapshot"), "garbage!");
  auto log = Load(false, 60);
  ASSERT_TRUE(log.ok()) << log.status().ToString();
  EXPECT_EQ((*log)->log_end_offset(), 90);
  EXPECT_EQ((*log)->active_producer_count(), 1u);
  EXPECT_TRUE(report_.quarantined.empty());
  EXPECT_EQ(ReadFileToString(File(30, ".snapshot")), "garbage!");
}

TEST_F(LogLoaderTest, EpochsBeyondLogEndAreTruncated) {
  WriteLog(2, 5);
  WriteStringToFile(part_ + "/leader-epoch-checkpoint", "0\n3\n0 0\n1 15\n9 100\n");
  auto log = Load(true, 30);
  ASSERT_TRUE(log.ok());
  EXPECT_EQ((*log)->leader_epochs(), (std::vector<EpochEntry>{{0, 0}, {1, 15}}));
  EXPECT_EQ(ReadFileToString(part_ + "/leader-epoch-checkpoint"), "0\n2\n0 0\n1 15\n");
}

TEST_F(LogLoaderTest, MissingLeaderEpochFileIsRebuiltByUncleanRecovery) {
  WriteLog(2, 5);
  fsys::remove(part_ + "/leader-epoch-checkpoint");
  auto log = Load(false, 0);
  ASSERT_TRUE(log.ok());
  EXPECT_EQ((*log)->leader_epochs(), (std::vector<EpochEntry>{{0, 0}, {1, 15}}));
  EXPECT_EQ(ReadFileToString(part_ + "/leader-epoch-checkpoint"), "0\n2\n0 0\n1 15\n");
}

// A dir copied in without its checkpoint (Kafka creates one with every
// partition): a clean start reads the batches' epochs back rather than
// leaving the cache empty, so the next append is not stamped with epoch 0
// after batches of epoch 1.
TEST_F(LogLoaderTest, MissingLeaderEpochFileIsRebuiltAfterACleanShutdown) {
  WriteLog(2, 5);
  fsys::remove(part_ + "/leader-epoch-checkpoint");
  auto log = Load(true, 30);
  ASSERT_TRUE(log.ok()) << log.status().ToString();
  EXPECT_EQ((*log)->leader_epochs(), (std::vector<EpochEntry>{{0, 0}, {1, 15}}));
  EXPECT_EQ(ReadFileToString(part_ + "/leader-epoch-checkpoint"), "0\n2\n0 0\n1 15\n");
  EXPECT_TRUE(report_.damage.empty());
  ASSERT_FALSE(report_.warnings.empty());
  EXPECT_NE(report_.warnings.back().find("leader-epoch-checkpoint was missing"), std::string::npos)
      << report_.warnings.back();
}

TEST_F(LogLoaderTest, LogEndBelowLogStartCheckpointEmptiesTheLog) {
  WriteLog(2, 5);
  auto log = Load(true, 30, /*quarantine=*/true, /*log_start=*/1000);
  ASSERT_TRUE(log.ok()) << log.status().ToString();
  EXPECT_EQ((*log)->log_start_offset(), 1000);
  EXPECT_EQ((*log)->log_end_offset(), 1000);
  EXPECT_EQ((*log)->num_segments(), 1u);
  EXPECT_TRUE((*log)->leader_epochs().empty());
  EXPECT_FALSE(fsys::exists(File(0, ".log")));
  EXPECT_TRUE(fsys::exists(File(1000, ".log")));
}

TEST_F(LogLoaderTest, CrashDuringLoadingThenUncleanReloadIsStable) {
  WriteLog(2, 5);
  const auto batches = Batches(File(15, ".log"));
  Resize(File(15, ".log"), batches.back().position + 7);
  {
    auto log = Load(false, 15);
    ASSERT_TRUE(log.ok());
    EXPECT_EQ((*log)->log_end_offset(), 27);
  }  // "crash": no Close, and the caller already deleted the clean marker
  auto log = Load(false, 15);
  ASSERT_TRUE(log.ok()) << log.status().ToString();
  EXPECT_EQ((*log)->log_end_offset(), 27);
  EXPECT_EQ(report_.truncated_bytes, 0);
  // The first load's: the torn bytes and the snapshot at the old end.
  EXPECT_EQ(Manifest(part_).size(), 2u);
}

TEST_F(LogLoaderTest, UncleanStartWithMissingIndexesReadsEachSegmentOnce) {
  WriteLog(3, 10);
  int64_t log_bytes = 0;
  for (int64_t base : {0, 30, 60}) {
    log_bytes += int64_t(fsys::file_size(File(base, ".log")));
    fsys::remove(File(base, ".index"));
    fsys::remove(File(base, ".timeindex"));
  }
  const std::string index30 = File(30, ".index");
  LogReadCountingFileSystem counting;
  auto log = Load(false, 0, true, 0, &counting);
  ASSERT_TRUE(log.ok()) << log.status().ToString();
  EXPECT_EQ((*log)->log_end_offset(), 90);
  EXPECT_EQ(report_.recovered_segments, 3);
  // Kafka reads every segment twice here (pass 4 and pass 5), and the last
  // batch a third time to find the log end offset (readNextOffset). Daruma
  // reads each byte once: the log end offset is where pass 5's recovery of
  // the last segment ended, and the producer-state rebuild after recovery
  // reads nothing because pass 5 left a snapshot at the log end.
  EXPECT_EQ(counting.log_bytes_read(), log_bytes);
  EXPECT_EQ(report_.scanned_bytes, log_bytes);
  EXPECT_GT(fsys::file_size(index30), 0u);
}

// Indexes missing below the recovery point: the load rebuilds them in
// memory and creates no file for them (IndexFile's deferred files): they
// serve reads from memory, and the next flush writes them with the bytes
// they had, before it moves the recovery point past them (it leaves no
// deferred index below it); a log closed before any flush writes them too.
// A crash before that leaves them missing, which the next load rebuilds.
// A load that commits its own undo log creates them before the commit
// instead: the point found on disk lies above them, and the commit syncs
// what the undo log records.
TEST_F(LogLoaderTest, IndexesMissingBelowTheRecoveryPointAreWrittenByTheNextFlushOrClose) {
  WriteLog(3, 10);
  std::map<std::string, std::string> before;
  for (int64_t base : {0, 30}) {
    for (const char* ext : {".index", ".timeindex"}) {
      before[File(base, ext)] = ReadFileToString(File(base, ext));
    }
  }
  enum class Then { kFlush, kClose, kOwnUndoLog };
  for (Then then : {Then::kFlush, Then::kClose, Then::kOwnUndoLog}) {
    SCOPED_TRACE(int(then));
    for (const auto& [path, bytes] : before) fsys::remove(path);
    transactional_ = then == Then::kOwnUndoLog;
    auto log = Load(false, 60);
    ASSERT_TRUE(log.ok()) << log.status().ToString();
    EXPECT_EQ((*log)->log_end_offset(), 90);
    EXPECT_EQ((*log)->recovery_point(), 60);
    for (const auto& [path, bytes] : before) {
      EXPECT_EQ(fsys::exists(path), then == Then::kOwnUndoLog) << path;
    }
    EXPECT_EQ(report_.rebuilt_indexes.size(), 6u);  // and the active segment's
    Result<FetchDataInfo> read = (*log)->Read(45, 1 << 20, FetchIsolation::kLogEnd, true);
    ASSERT_TRUE(read.ok()) << read.status().ToString();
    EXPECT_FALSE(read->records.empty());
    if (then == Then::kFlush) {
      ASSERT_TRUE((*log)->FlushAll().ok());
      EXPECT_EQ((*log)->recovery_point(), 90);
    } else {
      ASSERT_TRUE((*log)->Close().ok());
    }
    for (const auto& [path, bytes] : before) {
      ASSERT_TRUE(fsys::exists(path)) << path;
      EXPECT_EQ(ReadFileToString(path), bytes) << path;
    }
    if (then == Then::kFlush) {
      ASSERT_TRUE((*log)->Close().ok());
    }
  }
}

// Logs every file a load creates, in order.
class CreationLoggingFileSystem : public ForwardingFileSystem {
 public:
  CreationLoggingFileSystem() : ForwardingFileSystem(FileSystem::Default()) {}
  Result<std::unique_ptr<File>> Open(const std::string& path, OpenMode mode) override {
    if (mode != OpenMode::kRead && mode != OpenMode::kReadWrite && !fsys::exists(path)) {
      created.push_back(path);
    }
    return base()->Open(path, mode);
  }
  std::vector<std::string> created;
};

// A clean start whose load changed nothing but the indexes it left deferred
// keeps its undo log recording to the end: the index files it then creates
// before its commit are journaled first (a crash before the commit removes
// them, and the commit syncs what the journal names), since the recovery
// point found on disk, the log end, lies above them.
TEST_F(LogLoaderTest, ACleanLoadThatOnlyDeferredIndexesJournalsTheirFiles) {
  // No producer ids, so that the load's recovery of segment 0 leaves the
  // snapshots as they are; the active segment is empty.
  {
    auto log = Log::CreateEmpty(FileSystem::Default(), part_, tp_, config_, &clock_);
    ASSERT_TRUE(log.ok()) << log.status().ToString();
    for (int b = 0; b < 20; ++b) {
      std::vector<RecordInput> records{{kNow - 1000 + b, "k", std::string(200, 'v'), {}}};
      auto bytes = BuildRecordBatch(BatchBuilderOptions{}, records);
      ASSERT_TRUE(bytes.ok());
      ASSERT_TRUE((*log)->AppendAsLeader(*bytes, 0).ok());
    }
    ASSERT_TRUE((*log)->Roll().ok());
    ASSERT_TRUE((*log)->Close().ok());
  }
  for (const char* ext : {".index", ".timeindex"}) fsys::remove(File(0, ext));
  CreationLoggingFileSystem logging;
  auto log = Load(true, 20, true, 0, &logging);
  ASSERT_TRUE(log.ok()) << log.status().ToString();
  const std::vector<std::string>& created = logging.created;
  auto position = [&created](const std::string& path) {
    return size_t(std::find(created.begin(), created.end(), path) - created.begin());
  };
  const size_t journal = position(part_ + "/" + kLoadJournalFileName);
  for (const char* ext : {".index", ".timeindex"}) {
    ASSERT_LT(position(File(0, ext)), created.size()) << ext;
    EXPECT_LT(journal, position(File(0, ext))) << ext << ": created before its undo record";
  }
  EXPECT_FALSE(fsys::exists(part_ + "/" + kLoadJournalFileName)) << "committed";
  ASSERT_TRUE((*log)->Close().ok());
}

// Counts the snapshot files opened for writing.
class SnapshotWriteCountingFileSystem : public ForwardingFileSystem {
 public:
  int snapshot_writes() const { return snapshot_writes_; }
  Result<std::unique_ptr<File>> Open(const std::string& path, OpenMode mode) override {
    if (path.ends_with(".snapshot") && mode != OpenMode::kRead) ++snapshot_writes_;
    return base()->Open(path, mode);
  }

 private:
  int snapshot_writes_ = 0;
};

// Recovering from segment 0 makes Kafka delete every later snapshot and
// write each again as the next segment is recovered, in pass 5 (segments at
// or after the recovery point) and in pass 4 (segments below it whose index
// is missing). Daruma keeps a file whose bytes are what it would write: none
// is written, and the same snapshots with the same bytes are left as Kafka's
// loader leaves.
class SnapshotKeepingTest : public LogLoaderTest {
 protected:
  void LoadWithEveryIndexMissing(int64_t recovery_point) {
    WriteLog(4, 10);
    std::map<int64_t, std::string> before;
    for (int64_t offset : {30, 60, 90, 120}) {
      ASSERT_TRUE(fsys::exists(File(offset, ".snapshot"))) << offset;
      before[offset] = ReadFileToString(File(offset, ".snapshot"));
    }
    for (int64_t base : {0, 30, 60, 90}) fsys::remove(File(base, ".index"));
    SnapshotWriteCountingFileSystem counting;
    auto log = Load(false, recovery_point, true, 0, &counting);
    ASSERT_TRUE(log.ok()) << log.status().ToString();
    EXPECT_EQ((*log)->log_end_offset(), 120);
    EXPECT_EQ(report_.recovered_segments, 4);
    EXPECT_EQ(counting.snapshot_writes(), 0);
    ASSERT_TRUE((*log)->Close().ok());
    std::map<int64_t, std::string> after;
    for (const auto& e : fsys::directory_iterator(part_)) {
      const std::string name = e.path().filename().string();
      if (name.ends_with(".snapshot")) {
        after[std::stoll(name.substr(0, 20))] = ReadFileToString(e.path().string());
      }
    }
    EXPECT_EQ(after, before);
  }
};

TEST_F(SnapshotKeepingTest, InPass5) {
  LoadWithEveryIndexMissing(0);
}
TEST_F(SnapshotKeepingTest, InPass4BelowTheRecoveryPoint) {
  LoadWithEveryIndexMissing(90);
}

// A snapshot that differs from what recovery computes (here: one the
// producer-state rebuild would not write, for a producer that does not
// exist) is replaced, as Kafka replaces it.
TEST_F(LogLoaderTest, RecoveryRewritesASnapshotWhoseBytesDiffer) {
  WriteLog(3, 10);
  const std::string at60 = File(60, ".snapshot");
  const std::string expected = ReadFileToString(at60);
  WriteStringToFile(at60, ReadFileToString(File(30, ".snapshot")));
  for (int64_t base : {0, 30, 60}) fsys::remove(File(base, ".index"));
  SnapshotWriteCountingFileSystem counting;
  auto log = Load(false, 0, true, 0, &counting);
  ASSERT_TRUE(log.ok()) << log.status().ToString();
  EXPECT_EQ((*log)->log_end_offset(), 90);
  EXPECT_EQ(counting.snapshot_writes(), 1);
  EXPECT_EQ(ReadFileToString(at60), expected);
}

TEST_F(LogLoaderTest, MissingIndexAndCorruptTailInAMiddleSegmentKeepsLaterSegmentsAsKafka) {
  WriteLog(3, 10);
  fsys::remove(File(30, ".index"));
  const auto batches = Batches(File(30, ".log"));
  FlipByte(File(30, ".log"), batches[4].position + 40);
  auto log = Load(false, 0);
  ASSERT_TRUE(log.ok()) << log.status().ToString();
  // Kafka's pass 4 cut segment 30 after its 4th batch; pass 5 then found
  // nothing wrong, so segment 60 stays (the log has a gap 42..59).
  EXPECT_EQ((*log)->segment_base_offsets(), (std::vector<int64_t>{0, 30, 60}));
  EXPECT_EQ((*log)->log_end_offset(), 90);
  EXPECT_EQ(int64_t(fsys::file_size(File(30, ".log"))), batches[4].position);
  ASSERT_EQ(report_.quarantined.size(), 1u);
  EXPECT_EQ(report_.quarantined[0].bytes,
            batches.back().position + batches.back().size - batches[4].position);
  for (const std::string& w : report_.warnings) {
    EXPECT_EQ(w.find("Corruption found in segment"), std::string::npos) << w;
  }
}

TEST_F(LogLoaderTest, NoQuarantineLeavesTheSameFilesAsQuarantine) {
  WriteLog(1, 5);
  const auto batches = Batches(File(0, ".log"));
  Resize(File(0, ".log"), batches.back().position + 30);
  const std::string copy = tmp_.Join("copy");
  testing::CopyTree(log_dir_, copy);
  auto with = Load(false, 0, true);
  ASSERT_TRUE(with.ok());
  ASSERT_TRUE((*with)->Close().ok());
  auto listing = [](const std::string& dir) {
    std::vector<std::pair<std::string, uintmax_t>> files;
    for (const auto& e : fsys::directory_iterator(dir)) {
      if (e.is_regular_file()) files.emplace_back(e.path().filename(), e.file_size());
    }
    std::sort(files.begin(), files.end());
    return files;
  };
  const auto quarantined_listing = listing(part_);
  log_dir_ = copy;
  part_ = copy + "/t-0";
  auto without = Load(false, 0, false);
  ASSERT_TRUE(without.ok());
  ASSERT_TRUE((*without)->Close().ok());
  EXPECT_EQ(listing(part_), quarantined_listing);
  EXPECT_TRUE(report_.quarantined.empty());
  EXPECT_EQ(report_.truncated_bytes, 30);
}

}  // namespace
}  // namespace daruma
