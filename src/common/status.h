// Status and Result<T>: expected failures travel as values, never as exceptions.
//
// Contract: a Status is either OK or carries a code and a human-readable message.
// Messages for data errors always name the file, the byte position and, where
// known, the offset, so an operator can act on them without reading code.
#pragma once

#include <cassert>
#include <optional>
#include <string>
#include <utility>
#include <variant>

namespace daruma {

enum class StatusCode {
  kOk = 0,
  kCorruption,       // bytes on disk violate the format (CRC, sizes, offsets)
  kInvalidArgument,  // bad input from a caller or a user (config, flags)
  kIoError,          // the OS refused an operation; routes to log-dir failure
  kNotFound,
  kOutOfRange,
  kUnsupported,
  kInvalidOffset,    // offsets not monotonic where they must be
  kOffsetOverflow,   // a batch cannot be addressed relative to its segment base
  kInvalidRecord,    // a record inside a batch is malformed
  kInvalidTxnState,  // producer state forbids the operation
  kAlreadyExists,
  kTooLarge,  // a size limit (decompression, frame) was exceeded
  kAborted,   // stopped on request before it finished (a compaction round)
};

const char* StatusCodeName(StatusCode code);

class [[nodiscard]] Status {
 public:
  Status() = default;
  Status(StatusCode code, std::string message) : code_(code), message_(std::move(message)) {}

  static Status Ok() { return Status(); }
  static Status Corruption(std::string m) { return {StatusCode::kCorruption, std::move(m)}; }
  static Status InvalidArgument(std::string m) {
    return {StatusCode::kInvalidArgument, std::move(m)};
  }
  static Status IoError(std::string m) { return {StatusCode::kIoError, std::move(m)}; }
  static Status NotFound(std::string m) { return {StatusCode::kNotFound, std::move(m)}; }
  static Status OutOfRange(std::string m) { return {StatusCode::kOutOfRange, std::move(m)}; }
  static Status Unsupported(std::string m) { return {StatusCode::kUnsupported, std::move(m)}; }
  static Status InvalidOffset(std::string m) { return {StatusCode::kInvalidOffset, std::move(m)}; }
  static Status OffsetOverflow(std::string m) {
    return {StatusCode::kOffsetOverflow, std::move(m)};
  }
  static Status InvalidRecord(std::string m) { return {StatusCode::kInvalidRecord, std::move(m)}; }
  static Status InvalidTxnState(std::string m) {
    return {StatusCode::kInvalidTxnState, std::move(m)};
  }
  static Status AlreadyExists(std::string m) { return {StatusCode::kAlreadyExists, std::move(m)}; }
  static Status TooLarge(std::string m) { return {StatusCode::kTooLarge, std::move(m)}; }
  static Status Aborted(std::string m) { return {StatusCode::kAborted, std::move(m)}; }

  bool ok() const { return code_ == StatusCode::kOk; }
  StatusCode code() const { return code_; }
  const std::string& message() const { return message_; }
  bool IsCorruption() const { return code_ == StatusCode::kCorruption; }
  bool IsIoError() const { return code_ == StatusCode::kIoError; }
  bool IsNotFound() const { return code_ == StatusCode::kNotFound; }

  // "Corruption: <message>", or "OK".
  std::string ToString() const;

  // Returns a copy whose message is prefixed with `context: ` (the detail is
  // kept).
  Status WithContext(const std::string& context) const;

  // A finer kind within the code, for callers that branch on more than the
  // code, so none of them ever parses a message. 0 means none; each layer
  // that sets one documents its values with the function that reads it (the
  // log layer's producer rejections: ProducerAppendErrorOf).
  int detail() const { return detail_; }
  Status WithDetail(int detail) const {
    Status copy = *this;
    copy.detail_ = detail;
    return copy;
  }

 private:
  StatusCode code_ = StatusCode::kOk;
  std::string message_;
  int detail_ = 0;
};

// Result<T> holds either a value or a non-OK Status.
template <typename T>
class [[nodiscard]] Result {
 public:
  Result(T value) : data_(std::move(value)) {}        // NOLINT: implicit by design
  Result(Status status) : data_(std::move(status)) {  // NOLINT: implicit by design
    assert(!std::get<Status>(data_).ok() && "Result built from an OK status has no value");
  }

  bool ok() const { return std::holds_alternative<T>(data_); }
  const Status& status() const {
    static const Status kOk;
    return ok() ? kOk : std::get<Status>(data_);
  }
  T& value() & { return std::get<T>(data_); }
  const T& value() const& { return std::get<T>(data_); }
  T&& value() && { return std::get<T>(std::move(data_)); }
  T* operator->() { return &value(); }
  const T* operator->() const { return &value(); }
  T& operator*() & { return value(); }
  const T& operator*() const& { return value(); }
  T&& operator*() && { return std::move(*this).value(); }

 private:
  std::variant<T, Status> data_;
};

}  // namespace daruma

#define DARUMA_CONCAT_INNER(a, b) a##b
#define DARUMA_CONCAT(a, b) DARUMA_CONCAT_INNER(a, b)

#define DARUMA_RETURN_IF_ERROR(expr)         \
  do {                                       \
    ::daruma::Status _daruma_st = (expr);    \
    if (!_daruma_st.ok()) return _daruma_st; \
  } while (0)

#define DARUMA_ASSIGN_OR_RETURN_IMPL(tmp, lhs, expr) \
  auto tmp = (expr);                                 \
  if (!tmp.ok()) return tmp.status();                \
  lhs = std::move(tmp).value()

#define DARUMA_ASSIGN_OR_RETURN(lhs, expr) \
  DARUMA_ASSIGN_OR_RETURN_IMPL(DARUMA_CONCAT(_daruma_res_, __LINE__), lhs, expr)
