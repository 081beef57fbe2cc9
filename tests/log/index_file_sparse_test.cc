// A preallocated index left behind by a crash (10 MiB, mostly a hole) keeps
// Kafka's entry count but is read only up to its hole: memory per index stays
// at kilobytes, not megabytes. And what an index writes through its append
// mapping versus pwrite.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>

#include "common/forwarding_file_system.h"
#include "log/offset_index.h"
#include "support/test_support.h"

namespace daruma {
namespace {

TEST(IndexFileSparseTest, CrashLeftPreallocatedIndexIsReadOnlyUpToItsHole) {
  testing::TempDir tmp;
  const std::string path = tmp.Join("00000000000000000000.index");
  {
    auto index = OffsetIndex::Open(path, 0);
    ASSERT_TRUE(index.ok()) << index.status().ToString();
    ASSERT_TRUE((*index)->Append(10, 4100).ok());
    ASSERT_TRUE((*index)->Append(20, 8200).ok());
    ASSERT_TRUE((*index)->WriteAppended().ok());
    // Destroyed without Close: the file keeps its preallocated 10 MiB.
  }
  ASSERT_EQ(std::filesystem::file_size(path), 10u * 1024 * 1024);
  auto reopened = OffsetIndex::Open(path, 0);
  ASSERT_TRUE(reopened.ok()) << reopened.status().ToString();
  // Kafka's count: every slot of the 10 MiB file, the unwritten ones as zeros.
  EXPECT_EQ((*reopened)->entries(), 10u * 1024 * 1024 / 8);
  EXPECT_EQ((*reopened)->Entry(0), (OffsetPosition{10, 4100}));
  EXPECT_EQ((*reopened)->Entry(1), (OffsetPosition{20, 8200}));
  EXPECT_EQ((*reopened)->Entry(1000000), (OffsetPosition{0, 0}));
  // A zero slot fails the entry check, so the loader rebuilds such an index.
  EXPECT_TRUE((*reopened)->CheckEntries(1 << 20).IsCorruption());
  // Rebuilding starts from nothing.
  ASSERT_TRUE((*reopened)->Reset().ok());
  EXPECT_EQ((*reopened)->entries(), 0u);
  EXPECT_EQ((*reopened)->length(), 10u * 1024 * 1024);
}

// Counts the append mappings an index makes (File::MapForAppend), its size
// changes and its questions for the end of a file's data (File::DataEnd).
class MapCountingFileSystem : public ForwardingFileSystem {
 public:
  Result<std::unique_ptr<File>> Open(const std::string& path, OpenMode mode) override {
    DARUMA_ASSIGN_OR_RETURN(auto file, base()->Open(path, mode));
    return std::unique_ptr<File>(new CountingFile(this, std::move(file)));
  }
  int maps = 0;
  int truncates = 0;
  int data_ends = 0;

 private:
  class CountingFile final : public ForwardingFile {
   public:
    CountingFile(MapCountingFileSystem* owner, std::unique_ptr<File> file)
        : ForwardingFile(std::move(file)), owner_(owner) {}
    int fd() const override { return base()->fd(); }
    Result<std::unique_ptr<WritableMappedRegion>> MapForAppend(uint64_t pos, size_t len,
                                                               AppendFaults faults) override {
      ++owner_->maps;
      return base()->MapForAppend(pos, len, faults);
    }
    Status Truncate(uint64_t size) override {
      ++owner_->truncates;
      return base()->Truncate(size);
    }
    Result<uint64_t> DataEnd() const override {
      ++owner_->data_ends;
      return base()->DataEnd();
    }

   private:
    MapCountingFileSystem* owner_;
  };
};

// Recovery rebuilds an index in memory and writes it once before trimming
// it: a mapping made for that write would be dropped again by the trim. Only
// a live append maps the append window; the bytes are the same either way.
TEST(IndexFileSparseTest, ARebuiltIndexIsWrittenWithoutMappingItsAppendWindow) {
  testing::TempDir tmp;
  MapCountingFileSystem fs;
  const std::string rebuilt = tmp.Join("00000000000000000000.index");
  {
    auto index = OffsetIndex::Open(rebuilt, 0, 10 * 1024 * 1024, &fs);
    ASSERT_TRUE(index.ok()) << index.status().ToString();
    ASSERT_TRUE((*index)->Append(10, 4100).ok());
    ASSERT_TRUE((*index)->Append(20, 8200).ok());
    ASSERT_TRUE((*index)->TrimToValidSize().ok());
    ASSERT_TRUE((*index)->Close().ok());
  }
  EXPECT_EQ(fs.maps, 0);
  ASSERT_EQ(std::filesystem::file_size(rebuilt), 16u);

  const std::string live = tmp.Join("00000000000000000100.index");
  auto index = OffsetIndex::Open(live, 100, 10 * 1024 * 1024, &fs);
  ASSERT_TRUE(index.ok()) << index.status().ToString();
  ASSERT_TRUE((*index)->Append(110, 4100).ok());
  ASSERT_TRUE((*index)->TrimThenResize(10 * 1024 * 1024).ok());  // recovery's end: a write
  EXPECT_EQ(fs.maps, 0);
  ASSERT_TRUE((*index)->Append(120, 8200).ok());
  ASSERT_TRUE((*index)->WriteAppended().ok());  // a live append maps the window
  ASSERT_TRUE((*index)->Append(130, 12300).ok());
  ASSERT_TRUE((*index)->WriteAppended().ok());  // and stores into it
  ASSERT_TRUE((*index)->Append(140, 16400).ok());
  ASSERT_TRUE((*index)->Flush().ok());  // a flush stores into the mapped window too
  EXPECT_EQ(fs.maps, 1);
  ASSERT_TRUE((*index)->Close().ok());
  for (const std::string& path : {rebuilt, live}) {
    auto reopened = OffsetIndex::Open(path, path == live ? 100 : 0, 10 * 1024 * 1024, &fs, false);
    ASSERT_TRUE(reopened.ok()) << reopened.status().ToString();
    if (path == rebuilt) {
      ASSERT_EQ((*reopened)->entries(), 2u);
      EXPECT_EQ((*reopened)->Entry(1), (OffsetPosition{20, 8200}));
    } else {
      ASSERT_EQ((*reopened)->entries(), 4u);
      EXPECT_EQ((*reopened)->Entry(0), (OffsetPosition{110, 4100}));
      EXPECT_EQ((*reopened)->Entry(3), (OffsetPosition{140, 16400}));
    }
  }
}

// An index recovery rebuilds because it was missing (defer_new_file) is not
// created until its bytes must be on disk: Close writes it at its entries'
// size, with no size change. Should it take live appends after all, it is
// created at the first, and extended to its full length before the append
// window maps it, reading as a preallocated index would.
TEST(IndexFileSparseTest, ADeferredIndexIsCreatedByCloseAndExtendedOnlyWhenAnAppendMapsIt) {
  testing::TempDir tmp;
  MapCountingFileSystem fs;
  const std::string trimmed = tmp.Join("00000000000000000000.index");
  {
    auto index = OffsetIndex::Open(trimmed, 0, 10 * 1024 * 1024, &fs, true, true);
    ASSERT_TRUE(index.ok()) << index.status().ToString();
    EXPECT_FALSE(std::filesystem::exists(trimmed));
    EXPECT_TRUE((*index)->deferred());
    EXPECT_EQ((*index)->max_entries(), 10u * 1024 * 1024 / 8);
    ASSERT_TRUE((*index)->Append(10, 4100).ok());
    ASSERT_TRUE((*index)->Append(20, 8200).ok());
    ASSERT_TRUE((*index)->TrimToValidSize().ok());
    EXPECT_FALSE(std::filesystem::exists(trimmed)) << "a trim only sets the length";
    EXPECT_EQ((*index)->Lookup(15), (OffsetPosition{10, 4100})) << "read from memory";
    ASSERT_TRUE((*index)->Close().ok());
  }
  EXPECT_EQ(fs.truncates, 0) << "written at its size: no preallocation, no trim";
  EXPECT_EQ(std::filesystem::file_size(trimmed), 16u);

  const std::string live = tmp.Join("00000000000000000100.index");
  auto index = OffsetIndex::Open(live, 100, 10 * 1024 * 1024, &fs, true, true);
  ASSERT_TRUE(index.ok()) << index.status().ToString();
  ASSERT_TRUE((*index)->Append(110, 4100).ok());
  ASSERT_TRUE((*index)->Flush().ok());
  EXPECT_FALSE((*index)->deferred());
  EXPECT_EQ(std::filesystem::file_size(live), 8u);
  ASSERT_TRUE((*index)->Append(120, 8200).ok());
  ASSERT_TRUE((*index)->WriteAppended().ok());
  EXPECT_EQ(fs.maps, 1);
  EXPECT_EQ(std::filesystem::file_size(live), 10u * 1024 * 1024) << "extended before the mapping";
  auto reopened = OffsetIndex::Open(live, 100, 10 * 1024 * 1024, &fs, false);
  ASSERT_TRUE(reopened.ok()) << reopened.status().ToString();
  EXPECT_EQ((*reopened)->Entry(0), (OffsetPosition{110, 4100}));
  EXPECT_EQ((*reopened)->Entry(1), (OffsetPosition{120, 8200}));
  EXPECT_EQ((*reopened)->Entry(2), (OffsetPosition{100, 0})) << "a zero slot";

  // A live append is what creates a deferred index that became active.
  const std::string active = tmp.Join("00000000000000000200.index");
  auto grown = OffsetIndex::Open(active, 200, 10 * 1024 * 1024, &fs, true, true);
  ASSERT_TRUE(grown.ok()) << grown.status().ToString();
  ASSERT_TRUE((*grown)->Resize(1024).ok());
  EXPECT_FALSE(std::filesystem::exists(active));
  ASSERT_TRUE((*grown)->Append(210, 4100).ok());
  ASSERT_TRUE((*grown)->WriteAppended().ok());
  EXPECT_EQ(std::filesystem::file_size(active), 8u) << "written, not mapped, at creation";
  ASSERT_TRUE((*grown)->Append(220, 8200).ok());
  ASSERT_TRUE((*grown)->WriteAppended().ok());
  EXPECT_EQ(std::filesystem::file_size(active), 1024u) << "extended before the mapping";
  ASSERT_TRUE((*grown)->Close().ok());
  EXPECT_EQ(std::filesystem::file_size(active), 16u);
}

// Until it is created, a deferred index renames and deletes only a name: the
// rename still replaces what its new path held, and a deletion finds nothing.
TEST(IndexFileSparseTest, ADeferredIndexRenamesAndDeletesWithoutAFile) {
  testing::TempDir tmp;
  const std::string path = tmp.Join("00000000000000000000.index");
  const std::string renamed = path + ".deleted";
  WriteStringToFile(renamed, "stale");
  auto index = OffsetIndex::Open(path, 0, 10 * 1024 * 1024, FileSystem::Default(), true, true);
  ASSERT_TRUE(index.ok()) << index.status().ToString();
  ASSERT_TRUE((*index)->Append(10, 4100).ok());
  ASSERT_TRUE((*index)->RenameTo(renamed).ok());
  EXPECT_FALSE(std::filesystem::exists(renamed)) << "replaced by a file not created yet";
  EXPECT_FALSE(std::filesystem::exists(path));
  EXPECT_EQ((*index)->path(), renamed);
  bool existed = true;
  ASSERT_TRUE((*index)->DeleteIfExists(&existed).ok());
  EXPECT_FALSE(existed);
  EXPECT_FALSE(std::filesystem::exists(renamed));
  EXPECT_TRUE((*index)->Close().ok());
  EXPECT_FALSE(std::filesystem::exists(renamed)) << "a deleted index is not created by Close";
}

// A clean start grows the active segment's trimmed indexes back to their
// full length (Resize with extend_file false) without a size change; the
// first live append extends the file before its window maps it, so the file
// then reads as Kafka's preallocated one; a close with no append trims
// nothing, and the file never changed.
TEST(IndexFileSparseTest, AGrowthThatLeavesTheFileIsExtendedByTheFirstMappedAppend) {
  testing::TempDir tmp;
  MapCountingFileSystem fs;
  const std::string path = tmp.Join("00000000000000000000.index");
  constexpr int64_t kMax = 10 * 1024 * 1024;
  {
    auto index = OffsetIndex::Open(path, 0, kMax, &fs);
    ASSERT_TRUE(index.ok()) << index.status().ToString();
    ASSERT_TRUE((*index)->Append(10, 4100).ok());
    ASSERT_TRUE((*index)->Close().ok());
  }
  ASSERT_EQ(std::filesystem::file_size(path), 8u);
  const int truncates = fs.truncates;
  {
    // Grown and closed with no append: no size change, no mapping.
    auto index = OffsetIndex::Open(path, 0, kMax, &fs);
    ASSERT_TRUE(index.ok()) << index.status().ToString();
    ASSERT_TRUE((*index)->Resize(kMax, /*extend_file=*/false).ok());
    EXPECT_EQ((*index)->max_entries(), size_t(kMax / 8));
    EXPECT_EQ(std::filesystem::file_size(path), 8u);
    ASSERT_TRUE((*index)->Close().ok());
    EXPECT_EQ(fs.truncates, truncates);
    EXPECT_EQ(fs.maps, 0);
  }
  ASSERT_EQ(std::filesystem::file_size(path), 8u);
  auto index = OffsetIndex::Open(path, 0, kMax, &fs);
  ASSERT_TRUE(index.ok()) << index.status().ToString();
  ASSERT_TRUE((*index)->Resize(kMax, /*extend_file=*/false).ok());
  ASSERT_TRUE((*index)->Append(20, 8200).ok());
  ASSERT_TRUE((*index)->WriteAppended().ok());
  EXPECT_EQ(fs.maps, 1);
  EXPECT_EQ(std::filesystem::file_size(path), uint64_t(kMax)) << "extended before the mapping";
  {
    // What a crash here leaves: two entries, then zeros, as Kafka's mmap.
    auto seen = OffsetIndex::Open(path, 0, kMax, FileSystem::Default(), false);
    ASSERT_TRUE(seen.ok()) << seen.status().ToString();
    EXPECT_EQ((*seen)->Entry(0), (OffsetPosition{10, 4100}));
    EXPECT_EQ((*seen)->Entry(1), (OffsetPosition{20, 8200}));
    EXPECT_EQ((*seen)->Entry(2), (OffsetPosition{0, 0}));
  }
  ASSERT_TRUE((*index)->Close().ok());
  EXPECT_EQ(std::filesystem::file_size(path), 16u);
}

// An index file of a page or less is read whole, without asking where its
// data ends (a clean start opens two per partition): a trailing hole reads
// as the zero slots it stands for, and the entries are Kafka's either way.
// A larger one is read only up to its hole.
TEST(IndexFileSparseTest, AFileOfAPageOrLessIsReadWholeWithoutLookingForItsHole) {
  testing::TempDir tmp;
  MapCountingFileSystem fs;
  const std::string small = tmp.Join("00000000000000000000.index");
  const std::string large = tmp.Join("00000000000000000100.index");
  for (const auto& [path, base, size] :
       {std::tuple{small, int64_t(0), 4096}, std::tuple{large, int64_t(100), 8192}}) {
    auto index = OffsetIndex::Open(path, base, size, &fs);
    ASSERT_TRUE(index.ok()) << index.status().ToString();
    ASSERT_TRUE((*index)->Append(base + 10, 4100).ok());
    ASSERT_TRUE((*index)->Append(base + 20, 8200).ok());
    ASSERT_TRUE((*index)->WriteAppended().ok());
    // Destroyed without Close: the file keeps its preallocated length.
  }
  ASSERT_EQ(std::filesystem::file_size(small), 4096u);
  ASSERT_EQ(std::filesystem::file_size(large), 8192u);

  // Opens a one-page file, which must be read without asking for its hole.
  auto open_page = [&fs](const std::string& path, int64_t base) {
    fs.data_ends = 0;
    auto index = OffsetIndex::Open(path, base, 10 * 1024 * 1024, &fs);
    EXPECT_TRUE(index.ok()) << index.status().ToString();
    EXPECT_EQ(fs.data_ends, 0);
    EXPECT_EQ((*index)->entries(), 4096u / 8);
    return index;
  };
  // Resets the index, as the loader's rebuild does, appends `entries` from
  // the first slot and closes it; reopened, it holds exactly those.
  auto rebuild = [&fs](OffsetIndex* index, const std::string& path,
                       const std::vector<OffsetPosition>& entries) {
    ASSERT_TRUE(index->Reset().ok());
    for (const OffsetPosition& e : entries) ASSERT_TRUE(index->Append(e.offset, e.position).ok());
    ASSERT_TRUE(index->Close().ok());
    EXPECT_EQ(std::filesystem::file_size(path), entries.size() * 8);
    auto closed = OffsetIndex::Open(path, index->base_offset(), 10 * 1024 * 1024, &fs, false);
    ASSERT_TRUE(closed.ok()) << closed.status().ToString();
    ASSERT_EQ((*closed)->entries(), entries.size());
    for (size_t i = 0; i < entries.size(); ++i) EXPECT_EQ((*closed)->Entry(i), entries[i]) << i;
  };

  auto reopened = open_page(small, 0);
  ASSERT_TRUE(reopened.ok());
  EXPECT_EQ((*reopened)->Entry(1), (OffsetPosition{20, 8200}));
  EXPECT_EQ((*reopened)->Entry(2), (OffsetPosition{0, 0}));
  EXPECT_TRUE((*reopened)->CheckEntries(1 << 20).IsCorruption()) << "a zero slot, as Kafka";
  rebuild(reopened->get(), small, {{30, 12300}});

  // A file of one page that is all hole (preallocated, never written): its
  // slots read as zeros, and a rebuild writes over them as over a sparse one.
  const std::string hole = tmp.Join("00000000000000000200.index");
  { std::ofstream create(hole); }
  std::filesystem::resize_file(hole, 4096);
  auto unwritten = open_page(hole, 200);
  ASSERT_TRUE(unwritten.ok());
  EXPECT_EQ((*unwritten)->Entry(0), (OffsetPosition{200, 0}));
  EXPECT_EQ((*unwritten)->Entry(511), (OffsetPosition{200, 0}));
  rebuild(unwritten->get(), hole, {{210, 4100}, {220, 8200}});

  fs.data_ends = 0;
  auto larger = OffsetIndex::Open(large, 100, 10 * 1024 * 1024, &fs);
  ASSERT_TRUE(larger.ok()) << larger.status().ToString();
  EXPECT_EQ(fs.data_ends, 1);
  EXPECT_EQ((*larger)->entries(), 8192u / 8);
  EXPECT_EQ((*larger)->Entry(1), (OffsetPosition{120, 8200}));
}

}  // namespace
}  // namespace daruma
