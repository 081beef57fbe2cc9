// Segment file naming (spec §6.2, §6.3).
//
// A segment with base offset B is stored as `<B>.log`, `<B>.index`,
// `<B>.timeindex` and `<B>.txnindex`, where <B> is the 20-digit zero-padded
// decimal offset, so lexical order equals numeric order. Producer snapshots use
// the same rendering of their end offset. The transient suffixes `.deleted`,
// `.cleaned` and `.swap` are appended to a complete file name
// (e.g. `00000000000000000000.log.deleted`).
//
// Parsing takes the part of a name before its FIRST '.' as a signed 64-bit
// decimal, exactly like Kafka.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

#include "common/status.h"

namespace daruma {

inline constexpr std::string_view kLogFileSuffix = ".log";
inline constexpr std::string_view kIndexFileSuffix = ".index";
inline constexpr std::string_view kTimeIndexFileSuffix = ".timeindex";
inline constexpr std::string_view kTxnIndexFileSuffix = ".txnindex";
inline constexpr std::string_view kProducerSnapshotFileSuffix = ".snapshot";
inline constexpr std::string_view kDeletedFileSuffix = ".deleted";
inline constexpr std::string_view kCleanedFileSuffix = ".cleaned";
inline constexpr std::string_view kSwapFileSuffix = ".swap";

// The 20-digit zero-padded rendering of `offset` (Java's NumberFormat with 20
// minimum digits: a negative offset gets a leading '-').
std::string FilenamePrefixFromOffset(int64_t offset);

// dir/<20 digits><kind suffix><suffix>; `suffix` is "" or one of the transient
// suffixes above.
std::string LogFileName(const std::string& dir, int64_t base_offset, std::string_view suffix = "");
std::string OffsetIndexFileName(const std::string& dir, int64_t base_offset,
                                std::string_view suffix = "");
std::string TimeIndexFileName(const std::string& dir, int64_t base_offset,
                              std::string_view suffix = "");
std::string TxnIndexFileName(const std::string& dir, int64_t base_offset,
                             std::string_view suffix = "");
std::string ProducerSnapshotFileName(const std::string& dir, int64_t offset,
                                     std::string_view suffix = "");

// The offset encoded in a file name (a path is reduced to its base name):
// the text before the first '.', as a signed 64-bit decimal. kInvalidArgument
// naming the file when there is no '.' or the prefix is not a number.
Result<int64_t> OffsetFromFileName(std::string_view name);

bool HasSuffix(std::string_view name, std::string_view suffix);
// Whether `name` (a file name or path) ends with an index suffix: .index,
// .timeindex or .txnindex.
bool IsIndexFileName(std::string_view name);

}  // namespace daruma
