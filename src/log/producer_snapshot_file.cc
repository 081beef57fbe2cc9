#include "log/producer_snapshot_file.h"

#include <cinttypes>
#include <cstdio>
#include <memory>

#include "common/crc32c.h"

namespace daruma {

namespace layout = producer_snapshot_layout;

namespace {

std::string Hex32(uint32_t v) {
  char buf[16];
  std::snprintf(buf, sizeof(buf), "0x%08" PRIx32, v);
  return buf;
}

Status Corrupt(const std::string& path, size_t position, const std::string& what) {
  return Status::Corruption("producer snapshot " + path + ": byte " + std::to_string(position) +
                            ": " + what);
}

void EncodeEntry(const ProducerSnapshotEntry& e, ByteWriter* w) {
  w->WriteInt64(e.producer_id);
  w->WriteInt16(e.epoch);
  w->WriteInt32(e.last_sequence);
  w->WriteInt64(e.last_offset);
  w->WriteInt32(e.offset_delta);
  w->WriteInt64(e.timestamp);
  w->WriteInt32(e.coordinator_epoch);
  w->WriteInt64(e.current_txn_first_offset);
}

// The caller guarantees 46 readable bytes, so the reads cannot fail.
ProducerSnapshotEntry DecodeEntry(ByteReader* r) {
  ProducerSnapshotEntry e;
  r->ReadInt64(&e.producer_id);
  r->ReadInt16(&e.epoch);
  r->ReadInt32(&e.last_sequence);
  r->ReadInt64(&e.last_offset);
  r->ReadInt32(&e.offset_delta);
  r->ReadInt64(&e.timestamp);
  r->ReadInt32(&e.coordinator_epoch);
  r->ReadInt64(&e.current_txn_first_offset);
  return e;
}

}  // namespace

ProducerSnapshotEntry ToSnapshotEntry(const ProducerStateEntry& entry) {
  ProducerSnapshotEntry e;
  e.producer_id = entry.producer_id();
  e.epoch = entry.producer_epoch();
  e.last_sequence = entry.LastSeq();
  e.last_offset = entry.LastDataOffset();
  e.offset_delta = entry.LastOffsetDelta();
  e.timestamp = entry.last_timestamp();
  e.coordinator_epoch = entry.coordinator_epoch();
  e.current_txn_first_offset = entry.current_txn_first_offset().value_or(-1);
  return e;
}

ProducerStateEntry FromSnapshotEntry(const ProducerSnapshotEntry& e) {
  std::optional<int64_t> txn_first;
  if (e.current_txn_first_offset >= 0) txn_first = e.current_txn_first_offset;
  std::optional<BatchMetadata> batch;
  if (e.last_offset >= 0) {
    batch = BatchMetadata{e.last_sequence, e.last_offset, e.offset_delta, e.timestamp};
  }
  return ProducerStateEntry(e.producer_id, e.epoch, e.coordinator_epoch, e.timestamp, txn_first,
                            batch);
}

Bytes EncodeProducerSnapshot(const std::vector<ProducerSnapshotEntry>& entries) {
  Bytes out;
  out.reserve(layout::kEntriesOffset + entries.size() * layout::kEntrySize);
  ByteWriter w(&out);
  w.WriteInt16(layout::kVersion);
  w.WriteUint32(0);  // CRC placeholder, filled in below
  w.WriteInt32(int32_t(entries.size()));
  for (const ProducerSnapshotEntry& e : entries) EncodeEntry(e, &w);
  const uint32_t crc = Crc32c(out.data() + layout::kCountOffset, out.size() - layout::kCountOffset);
  StoreBe32(out.data() + layout::kCrcOffset, crc);
  return out;
}

Result<std::vector<ProducerSnapshotEntry>> DecodeProducerSnapshot(ByteSpan bytes,
                                                                  const std::string& path) {
  if (bytes.size() < layout::kEntriesOffset) {
    return Corrupt(path, bytes.size(),
                   "file is " + std::to_string(bytes.size()) + " bytes, shorter than the " +
                       std::to_string(layout::kEntriesOffset) + "-byte header");
  }
  const int16_t version = int16_t(LoadBe16(bytes.data() + layout::kVersionOffset));
  if (version != layout::kVersion) {
    return Corrupt(path, layout::kVersionOffset,
                   "version: expected " + std::to_string(layout::kVersion) + ", found " +
                       std::to_string(version));
  }
  const uint32_t stored = LoadBe32(bytes.data() + layout::kCrcOffset);
  const uint32_t computed =
      Crc32c(bytes.data() + layout::kCountOffset, bytes.size() - layout::kCountOffset);
  if (stored != computed) {
    return Corrupt(path, layout::kCrcOffset,
                   "CRC: stored " + Hex32(stored) + ", computed " + Hex32(computed) +
                       " over bytes [6, " + std::to_string(bytes.size()) + ")");
  }
  const int32_t count = int32_t(LoadBe32(bytes.data() + layout::kCountOffset));
  const size_t available = bytes.size() - layout::kEntriesOffset;
  if (count < 0 || uint64_t(count) * layout::kEntrySize > available) {
    return Corrupt(path, layout::kCountOffset,
                   "entry count " + std::to_string(count) + " needs " +
                       std::to_string(int64_t(count) * int64_t(layout::kEntrySize)) +
                       " bytes of entries, file has " + std::to_string(available));
  }
  ByteReader reader(bytes.subspan(layout::kEntriesOffset));
  std::vector<ProducerSnapshotEntry> entries;
  entries.reserve(size_t(count));
  for (int32_t i = 0; i < count; ++i) entries.push_back(DecodeEntry(&reader));
  return entries;
}

Status WriteProducerSnapshot(FileSystem* fs, const std::string& path,
                             const std::vector<ProducerSnapshotEntry>& entries, bool sync) {
  const Bytes bytes = EncodeProducerSnapshot(entries);
  DARUMA_ASSIGN_OR_RETURN(std::unique_ptr<File> file, fs->Open(path, OpenMode::kTruncate));
  DARUMA_RETURN_IF_ERROR(file->WriteAt(0, bytes));
  if (!sync) return Status::Ok();
  DARUMA_RETURN_IF_ERROR(file->Sync());
  // The file is new: its name is durable only once the directory is synced.
  return fs->SyncDir(ParentDir(path));
}

Result<std::vector<ProducerSnapshotEntry>> ReadProducerSnapshot(FileSystem* fs,
                                                                const std::string& path) {
  DARUMA_ASSIGN_OR_RETURN(std::vector<uint8_t> bytes, fs->ReadFile(path));
  return DecodeProducerSnapshot(bytes, path);
}

}  // namespace daruma
