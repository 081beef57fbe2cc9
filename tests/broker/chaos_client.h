// Clients that misbehave, for tests/broker/client_chaos_test.cc: a raw POSIX
// socket with the knobs a careless or hostile client turns (partial frames,
// close with FIN or RST, half-close, a tiny receive buffer, never reading),
// and whole request frames of every kind the broker answers.
//
// Every blocking call is bounded: receives time out after `timeout_seconds`,
// so a broker that stops answering fails the test instead of hanging it.
#pragma once

#include <netinet/in.h>
#include <netinet/tcp.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <unistd.h>

#include <cerrno>
#include <cstdint>
#include <filesystem>
#include <optional>
#include <string>
#include <vector>

#include "common/bytes.h"
#include "protocol/messages.h"
#include "protocol/request_header.h"

namespace daruma::broker::testing {

class ChaosSocket {
 public:
  enum class CloseHow { kFin, kReset };

  // `receive_buffer` > 0 shrinks SO_RCVBUF before connecting (a slow reader
  // whose window fills at once).
  explicit ChaosSocket(uint16_t port, int timeout_seconds = 10, int receive_buffer = 0) {
    fd_ = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (fd_ < 0) return;
    if (receive_buffer > 0) {
      ::setsockopt(fd_, SOL_SOCKET, SO_RCVBUF, &receive_buffer, sizeof(receive_buffer));
    }
    timeval tv{timeout_seconds, 0};
    ::setsockopt(fd_, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
    ::setsockopt(fd_, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof(tv));
    sockaddr_in addr{};
    addr.sin_family = AF_INET;
    addr.sin_port = htons(port);
    addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    if (::connect(fd_, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)) != 0) {
      ::close(fd_);
      fd_ = -1;
    }
  }
  ~ChaosSocket() { Close(CloseHow::kFin); }
  ChaosSocket(const ChaosSocket&) = delete;
  ChaosSocket& operator=(const ChaosSocket&) = delete;
  ChaosSocket(ChaosSocket&& other) noexcept : fd_(other.fd_) { other.fd_ = -1; }

  bool connected() const { return fd_ >= 0; }

  // All of `bytes` (MSG_NOSIGNAL: the test process must not die of a broker
  // that closed first). False on any error.
  bool Send(ByteSpan bytes) {
    size_t done = 0;
    while (fd_ >= 0 && done < bytes.size()) {
      const ssize_t n = ::send(fd_, bytes.data() + done, bytes.size() - done, MSG_NOSIGNAL);
      if (n < 0 && errno == EINTR) continue;
      if (n <= 0) return false;
      done += size_t(n);
    }
    return fd_ >= 0;
  }

  // Exactly `n` bytes, or nullopt on EOF, error or timeout.
  std::optional<Bytes> Receive(size_t n) {
    Bytes out(n);
    size_t done = 0;
    while (fd_ >= 0 && done < n) {
      const ssize_t r = ::recv(fd_, out.data() + done, n - done, 0);
      if (r < 0 && errno == EINTR) continue;
      if (r <= 0) return std::nullopt;
      done += size_t(r);
    }
    if (fd_ < 0) return std::nullopt;
    return out;
  }

  // One response frame without its size prefix.
  std::optional<Bytes> ReceiveFrame() {
    std::optional<Bytes> size = Receive(4);
    if (!size) return std::nullopt;
    const uint32_t n = LoadBe32(size->data());
    return Receive(n);
  }

  // True when the broker closed the connection (EOF or reset, not a timeout).
  bool ClosedByPeer() {
    uint8_t b;
    while (true) {
      const ssize_t r = ::recv(fd_, &b, 1, 0);
      if (r < 0 && errno == EINTR) continue;
      if (r == 0) return true;
      if (r < 0) return errno == ECONNRESET;
      // Bytes still arriving (an answer): keep reading to the end.
    }
  }

  void ShutdownSend() { ::shutdown(fd_, SHUT_WR); }

  // kReset: SO_LINGER 0, so close() sends RST instead of FIN (a client
  // killed by the kernel, or one whose unread data is discarded).
  void Close(CloseHow how) {
    if (fd_ < 0) return;
    if (how == CloseHow::kReset) {
      linger l{1, 0};
      ::setsockopt(fd_, SOL_SOCKET, SO_LINGER, &l, sizeof(l));
    }
    ::close(fd_);
    fd_ = -1;
  }

 private:
  int fd_ = -1;
};

// A request frame, size prefix included.
template <typename Request, typename Encode>
Bytes RequestFrame(ApiKey key, int16_t version, const Request& request, Encode encode,
                   int32_t correlation_id = 7) {
  ProtocolWriter writer;
  EncodeRequestHeader({key, version, correlation_id, std::string("chaos")}, writer);
  encode(request, version, writer);
  Bytes body = writer.Release();
  Bytes frame(4);
  StoreBe32(frame.data(), uint32_t(body.size()));
  frame.insert(frame.end(), body.begin(), body.end());
  return frame;
}

// A Produce of `batch` to one partition.
inline Bytes ProduceFrame(const std::string& topic, int32_t partition, const Bytes& batch,
                          int16_t acks = -1, int32_t correlation_id = 7) {
  ProduceRequest request;
  request.acks = acks;
  request.timeout_ms = 30000;
  request.topic_data.push_back({topic, {{partition, ByteSpan(batch)}}});
  return RequestFrame(ApiKey::kProduce, 7, request, EncodeProduceRequest, correlation_id);
}

// A Fetch of one partition from `offset`.
inline Bytes FetchFrame(const std::string& topic, int32_t partition, int64_t offset,
                        int32_t max_wait_ms, int32_t max_bytes = 1048576,
                        int32_t correlation_id = 7) {
  FetchRequest request;
  request.max_wait_ms = max_wait_ms;
  request.min_bytes = 1;
  request.max_bytes = max_bytes;
  FetchRequest::Partition p;
  p.partition = partition;
  p.fetch_offset = offset;
  p.partition_max_bytes = max_bytes;
  request.topics.push_back({.topic = topic, .partitions = {p}});
  return RequestFrame(ApiKey::kFetch, 11, request, EncodeFetchRequest, correlation_id);
}

// One valid frame of every API the broker implements, named for test output.
// None changes the broker's state except Produce (one small record).
struct NamedFrame {
  std::string name;
  Bytes frame;
};

inline std::vector<NamedFrame> EveryRequestKind(const std::string& topic, const Bytes& batch) {
  std::vector<NamedFrame> out;
  out.push_back({"ApiVersions", RequestFrame(ApiKey::kApiVersions, 2, ApiVersionsRequest{},
                                             EncodeApiVersionsRequest)});
  MetadataRequest metadata;
  metadata.topics = std::vector<MetadataRequest::Topic>{{.name = topic}};
  out.push_back({"Metadata", RequestFrame(ApiKey::kMetadata, 4, metadata, EncodeMetadataRequest)});
  out.push_back({"Produce", ProduceFrame(topic, 0, batch)});
  out.push_back({"Fetch", FetchFrame(topic, 0, 0, 0)});
  ListOffsetsRequest list;
  list.topics.push_back({topic, {{.partition_index = 0, .timestamp = kListOffsetsLatest}}});
  out.push_back(
      {"ListOffsets", RequestFrame(ApiKey::kListOffsets, 2, list, EncodeListOffsetsRequest)});
  CreateTopicsRequest create;  // the topic exists: TOPIC_ALREADY_EXISTS, no change
  create.topics.push_back({topic, 1, 1, {}, {}});
  out.push_back(
      {"CreateTopics", RequestFrame(ApiKey::kCreateTopics, 4, create, EncodeCreateTopicsRequest)});
  DeleteTopicsRequest del;
  del.topic_names = {"chaos-no-such-topic"};
  out.push_back(
      {"DeleteTopics", RequestFrame(ApiKey::kDeleteTopics, 1, del, EncodeDeleteTopicsRequest)});
  DescribeConfigsRequest describe;
  describe.resources.push_back({kResourceTypeTopic, topic, std::nullopt});
  out.push_back({"DescribeConfigs", RequestFrame(ApiKey::kDescribeConfigs, 1, describe,
                                                 EncodeDescribeConfigsRequest)});
  FindCoordinatorRequest find;
  find.key = "chaos-group";
  out.push_back({"FindCoordinator",
                 RequestFrame(ApiKey::kFindCoordinator, 2, find, EncodeFindCoordinatorRequest)});
  return out;
}

// Open descriptors of this process, and how many of them are sockets.
struct DescriptorCount {
  int all = 0;
  int sockets = 0;
  bool operator==(const DescriptorCount&) const = default;
};

inline DescriptorCount CountDescriptors() {
  DescriptorCount count;
  std::error_code ec;
  for (std::filesystem::directory_iterator it("/proc/self/fd", ec), end; !ec && it != end;
       it.increment(ec)) {
    ++count.all;
    std::error_code link_ec;
    const std::filesystem::path target = std::filesystem::read_symlink(it->path(), link_ec);
    if (!link_ec && target.string().starts_with("socket:")) ++count.sockets;
  }
  return count;
}

}  // namespace daruma::broker::testing
