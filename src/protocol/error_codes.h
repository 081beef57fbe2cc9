// Kafka protocol error codes used by this broker (spec kafka-protocol-subset.md
// §4). The numeric values are wire format; names follow Kafka's Errors enum.
// An ErrorCode read off the wire may hold a value not listed here.
#pragma once

#include <cstdint>

namespace daruma {

enum class ErrorCode : int16_t {
  kUnknownServerError = -1,
  kNone = 0,
  kOffsetOutOfRange = 1,
  kCorruptMessage = 2,
  kUnknownTopicOrPartition = 3,
  kLeaderNotAvailable = 5,
  kNotLeaderOrFollower = 6,
  kRequestTimedOut = 7,
  kMessageTooLarge = 10,
  kOffsetMetadataTooLarge = 12,
  kCoordinatorLoadInProgress = 14,
  kCoordinatorNotAvailable = 15,
  kNotCoordinator = 16,
  kInvalidTopicException = 17,
  kRecordListTooLarge = 18,
  kNotEnoughReplicas = 19,
  kInvalidRequiredAcks = 21,
  kIllegalGeneration = 22,
  kInconsistentGroupProtocol = 23,
  kInvalidGroupId = 24,
  kUnknownMemberId = 25,
  kInvalidSessionTimeout = 26,
  kRebalanceInProgress = 27,
  kInvalidCommitOffsetSize = 28,
  kInvalidTimestamp = 32,
  kUnsupportedVersion = 35,
  kTopicAlreadyExists = 36,
  kInvalidPartitions = 37,
  kInvalidReplicationFactor = 38,
  kInvalidReplicaAssignment = 39,
  kInvalidConfig = 40,
  kInvalidRequest = 42,
  kUnsupportedForMessageFormat = 43,
  kPolicyViolation = 44,
  kOutOfOrderSequenceNumber = 45,
  kDuplicateSequenceNumber = 46,
  kInvalidProducerEpoch = 47,
  kInvalidTxnState = 48,
  kInvalidProducerIdMapping = 49,
  kInvalidTransactionTimeout = 50,
  kConcurrentTransactions = 51,
  kTransactionCoordinatorFenced = 52,
  kTransactionalIdAuthorizationFailed = 53,
  kOperationNotAttempted = 55,
  kKafkaStorageError = 56,
  kUnknownProducerId = 59,
  kFetchSessionIdNotFound = 70,
  kInvalidFetchSessionEpoch = 71,
  kTopicDeletionDisabled = 73,
  kFencedLeaderEpoch = 74,
  kUnknownLeaderEpoch = 75,
  kUnsupportedCompressionType = 76,
  kNonEmptyGroup = 68,
  kGroupIdNotFound = 69,
  kMemberIdRequired = 79,
  kGroupMaxSizeReached = 81,
  kFencedInstanceId = 82,
  kElectionNotNeeded = 84,
  kNoReassignmentInProgress = 85,
  kGroupSubscribedToTopic = 86,
  kInvalidRecord = 87,
  kUnstableOffsetCommit = 88,
  kProducerFenced = 90,
  kUnknownTopicId = 100,
  kInconsistentTopicId = 103,
  kTransactionalIdNotFound = 105,
  kMismatchedEndpointType = 114,
  kUnsupportedEndpointType = 115,
  kTransactionAbortable = 120,
};

// Kafka's name ("UNKNOWN_TOPIC_OR_PARTITION"), or "UNKNOWN_ERROR_CODE".
const char* ErrorCodeName(ErrorCode code);
// Kafka's retriable classification (§4 table).
bool IsRetriable(ErrorCode code);

}  // namespace daruma
