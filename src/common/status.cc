#include "common/status.h"

namespace daruma {

const char* StatusCodeName(StatusCode code) {
  switch (code) {
    case StatusCode::kOk:
      return "OK";
    case StatusCode::kCorruption:
      return "Corruption";
    case StatusCode::kInvalidArgument:
      return "Invalid argument";
    case StatusCode::kIoError:
      return "I/O error";
    case StatusCode::kNotFound:
      return "Not found";
    case StatusCode::kOutOfRange:
      return "Out of range";
    case StatusCode::kUnsupported:
      return "Unsupported";
    case StatusCode::kInvalidOffset:
      return "Invalid offset";
    case StatusCode::kOffsetOverflow:
      return "Offset overflow";
    case StatusCode::kInvalidRecord:
      return "Invalid record";
    case StatusCode::kInvalidTxnState:
      return "Invalid transaction state";
    case StatusCode::kAlreadyExists:
      return "Already exists";
    case StatusCode::kTooLarge:
      return "Too large";
    case StatusCode::kAborted:
      return "Aborted";
  }
  return "Unknown";
}

std::string Status::ToString() const {
  if (ok()) return "OK";
  return std::string(StatusCodeName(code_)) + ": " + message_;
}

Status Status::WithContext(const std::string& context) const {
  if (ok()) return *this;
  return Status(code_, context + ": " + message_).WithDetail(detail_);
}

}  // namespace daruma
