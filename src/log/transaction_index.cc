#include "log/transaction_index.h"

#include "common/bytes.h"

namespace daruma {
namespace {

void EncodeTxn(const AbortedTxn& txn, uint8_t* out) {
  StoreBe16(out, 0);
  StoreBe64(out + 2, uint64_t(txn.producer_id));
  StoreBe64(out + 10, uint64_t(txn.first_offset));
  StoreBe64(out + 18, uint64_t(txn.last_offset));
  StoreBe64(out + 26, uint64_t(txn.last_stable_offset));
}

AbortedTxn DecodeTxn(const uint8_t* p) {
  return {int64_t(LoadBe64(p + 2)), int64_t(LoadBe64(p + 10)), int64_t(LoadBe64(p + 18)),
          int64_t(LoadBe64(p + 26))};
}

}  // namespace

std::string AbortedTxn::ToString() const {
  return "AbortedTxn(producerId=" + std::to_string(producer_id) +
         ", firstOffset=" + std::to_string(first_offset) +
         ", lastOffset=" + std::to_string(last_offset) +
         ", lastStableOffset=" + std::to_string(last_stable_offset) + ")";
}

Result<std::vector<AbortedTxn>> TransactionIndex::ReadEntries(
    std::vector<uint64_t>* positions) const {
  std::vector<AbortedTxn> out;
  std::vector<uint8_t> bytes;
  if (!known_absent_) {
    Result<std::vector<uint8_t>> read = fs_->ReadFile(path_);
    if (read.ok()) {
      bytes = std::move(*read);
    } else if (!read.status().IsNotFound()) {
      return read.status();
    }  // else not created yet: no entries of its own
  }
  // Buffered entries read as they will be written: after the file's bytes.
  bytes.insert(bytes.end(), pending_.begin(), pending_.end());
  for (size_t pos = 0; pos + AbortedTxn::kSize <= bytes.size(); pos += AbortedTxn::kSize) {
    // Kafka reads the version as the first byte only (a signed byte).
    const int8_t version = int8_t(bytes[pos]);
    if (version > 0) {
      return Status::Corruption("unexpected aborted transaction version " +
                                std::to_string(version) + " in transaction index " + path_ +
                                " at byte " + std::to_string(pos) + ", current version is 0");
    }
    out.push_back(DecodeTxn(bytes.data() + pos));
    if (positions != nullptr) positions->push_back(pos);
  }
  return out;
}

Status TransactionIndex::CheckWritable() const {
  if (!writable_) return Status::InvalidArgument("transaction index " + path_ + " is read-only");
  return Status::Ok();
}

Status TransactionIndex::OpenForWrite() {
  if (file_ != nullptr) return Status::Ok();
  DARUMA_ASSIGN_OR_RETURN(file_, fs_->Open(path_, OpenMode::kCreate));
  end_.reset();
  known_absent_ = false;
  return Status::Ok();
}

Status TransactionIndex::CheckAppend(const AbortedTxn& txn) {
  DARUMA_RETURN_IF_ERROR(CheckWritable());
  if (!last_offset_known_) {
    DARUMA_ASSIGN_OR_RETURN(auto existing, ReadEntries(nullptr));
    if (!existing.empty()) last_offset_ = existing.back().last_offset;
    last_offset_known_ = true;
  }
  if (last_offset_.has_value() && *last_offset_ >= txn.last_offset) {
    return Status::InvalidOffset(
        "the last offset of appended transactions must increase "
        "sequentially, but " +
        std::to_string(txn.last_offset) + " is not greater than current last offset " +
        std::to_string(*last_offset_) + " of index " + path_);
  }
  return Status::Ok();
}

Status TransactionIndex::Append(const AbortedTxn& txn) {
  DARUMA_RETURN_IF_ERROR(WritePending());
  DARUMA_RETURN_IF_ERROR(CheckAppend(txn));
  uint8_t entry[AbortedTxn::kSize];
  EncodeTxn(txn, entry);
  DARUMA_RETURN_IF_ERROR(WriteAtEnd(entry));
  last_offset_ = txn.last_offset;
  return Status::Ok();
}

Status TransactionIndex::AppendBuffered(const AbortedTxn& txn) {
  DARUMA_RETURN_IF_ERROR(CheckAppend(txn));
  const size_t at = pending_.size();
  pending_.resize(at + AbortedTxn::kSize);
  EncodeTxn(txn, pending_.data() + at);
  last_offset_ = txn.last_offset;
  return Status::Ok();
}

Status TransactionIndex::WritePending() {
  if (pending_.empty()) return Status::Ok();
  DARUMA_RETURN_IF_ERROR(WriteAtEnd(pending_));
  pending_.clear();
  return Status::Ok();
}

Status TransactionIndex::WriteAtEnd(ByteSpan entries) {
  DARUMA_RETURN_IF_ERROR(OpenForWrite());
  if (!end_) {
    DARUMA_ASSIGN_OR_RETURN(uint64_t size, file_->Size());
    end_ = size;
  }
  if (Status st = file_->WriteAt(*end_, entries); !st.ok()) {
    end_.reset();  // part of the entries may be there: ask the file again
    return st;
  }
  *end_ += entries.size();
  return Status::Ok();
}

Result<std::vector<AbortedTxn>> TransactionIndex::AllAbortedTxns() const {
  return ReadEntries(nullptr);
}

Result<TxnIndexSearchResult> TransactionIndex::CollectAbortedTxns(int64_t fetch_offset,
                                                                  int64_t upper_bound) const {
  DARUMA_ASSIGN_OR_RETURN(auto all, ReadEntries(nullptr));
  TxnIndexSearchResult result;
  for (const AbortedTxn& txn : all) {
    if (txn.last_offset >= fetch_offset && txn.first_offset < upper_bound) {
      result.aborted.push_back(txn);
    }
    if (txn.last_stable_offset >= upper_bound) {
      result.is_complete = true;
      return result;
    }
  }
  return result;
}

Status TransactionIndex::TruncateTo(int64_t offset) {
  DARUMA_RETURN_IF_ERROR(CheckWritable());
  DARUMA_RETURN_IF_ERROR(WritePending());
  std::vector<uint64_t> positions;
  DARUMA_ASSIGN_OR_RETURN(auto all, ReadEntries(&positions));
  std::optional<int64_t> new_last;
  for (size_t i = 0; i < all.size(); ++i) {
    if (all[i].last_offset >= offset) {
      DARUMA_RETURN_IF_ERROR(OpenForWrite());
      end_.reset();
      DARUMA_RETURN_IF_ERROR(file_->Truncate(positions[i]));
      end_ = positions[i];
      last_offset_ = new_last;
      last_offset_known_ = true;
      return Status::Ok();
    }
    new_last = all[i].last_offset;
  }
  return Status::Ok();
}

Status TransactionIndex::Reset() {
  DARUMA_RETURN_IF_ERROR(CheckWritable());
  DARUMA_RETURN_IF_ERROR(WritePending());
  if (FileExists()) {
    DARUMA_RETURN_IF_ERROR(OpenForWrite());
    end_.reset();
    DARUMA_RETURN_IF_ERROR(file_->Truncate(0));
    end_ = 0;
  }
  last_offset_.reset();
  last_offset_known_ = true;
  return Status::Ok();
}

Status TransactionIndex::SanityCheck() const {
  DARUMA_ASSIGN_OR_RETURN(auto all, ReadEntries(nullptr));
  for (size_t i = 0; i < all.size(); ++i) {
    if (all[i].last_offset < base_offset_) {
      return Status::Corruption("last offset of aborted transaction " + all[i].ToString() +
                                " at byte " + std::to_string(i * AbortedTxn::kSize) + " in index " +
                                path_ + " is less than start offset " +
                                std::to_string(base_offset_));
    }
  }
  return Status::Ok();
}

Status TransactionIndex::Flush() {
  DARUMA_RETURN_IF_ERROR(WritePending());
  if (file_ == nullptr) return Status::Ok();
  return file_->Sync();
}

Status TransactionIndex::Close() {
  DARUMA_RETURN_IF_ERROR(WritePending());
  file_.reset();
  end_.reset();
  return Status::Ok();
}

Status TransactionIndex::DeleteIfExists(bool* existed) {
  // Written first, so *existed reads as after one Append each (the file
  // exists once an entry was appended).
  DARUMA_RETURN_IF_ERROR(WritePending());
  file_.reset();
  end_.reset();
  Status st = fs_->Remove(path_);
  if (existed != nullptr) *existed = st.ok();
  if (st.IsNotFound()) return Status::Ok();
  return st;
}

Status TransactionIndex::RenameTo(const std::string& new_path) {
  DARUMA_RETURN_IF_ERROR(WritePending());
  if (FileExists()) DARUMA_RETURN_IF_ERROR(fs_->Rename(path_, new_path));
  path_ = new_path;
  known_absent_ = false;  // the hint was about the old path
  return Status::Ok();
}

}  // namespace daruma
