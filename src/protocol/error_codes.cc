#include "protocol/error_codes.h"

namespace daruma {

const char* ErrorCodeName(ErrorCode code) {
  switch (code) {
    case ErrorCode::kUnknownServerError:
      return "UNKNOWN_SERVER_ERROR";
    case ErrorCode::kNone:
      return "NONE";
    case ErrorCode::kOffsetOutOfRange:
      return "OFFSET_OUT_OF_RANGE";
    case ErrorCode::kCorruptMessage:
      return "CORRUPT_MESSAGE";
    case ErrorCode::kUnknownTopicOrPartition:
      return "UNKNOWN_TOPIC_OR_PARTITION";
    case ErrorCode::kLeaderNotAvailable:
      return "LEADER_NOT_AVAILABLE";
    case ErrorCode::kNotLeaderOrFollower:
      return "NOT_LEADER_OR_FOLLOWER";
    case ErrorCode::kRequestTimedOut:
      return "REQUEST_TIMED_OUT";
    case ErrorCode::kMessageTooLarge:
      return "MESSAGE_TOO_LARGE";
    case ErrorCode::kOffsetMetadataTooLarge:
      return "OFFSET_METADATA_TOO_LARGE";
    case ErrorCode::kCoordinatorLoadInProgress:
      return "COORDINATOR_LOAD_IN_PROGRESS";
    case ErrorCode::kCoordinatorNotAvailable:
      return "COORDINATOR_NOT_AVAILABLE";
    case ErrorCode::kNotCoordinator:
      return "NOT_COORDINATOR";
    case ErrorCode::kInvalidTopicException:
      return "INVALID_TOPIC_EXCEPTION";
    case ErrorCode::kRecordListTooLarge:
      return "RECORD_LIST_TOO_LARGE";
    case ErrorCode::kNotEnoughReplicas:
      return "NOT_ENOUGH_REPLICAS";
    case ErrorCode::kInvalidRequiredAcks:
      return "INVALID_REQUIRED_ACKS";
    case ErrorCode::kIllegalGeneration:
      return "ILLEGAL_GENERATION";
    case ErrorCode::kInconsistentGroupProtocol:
      return "INCONSISTENT_GROUP_PROTOCOL";
    case ErrorCode::kInvalidGroupId:
      return "INVALID_GROUP_ID";
    case ErrorCode::kUnknownMemberId:
      return "UNKNOWN_MEMBER_ID";
    case ErrorCode::kInvalidSessionTimeout:
      return "INVALID_SESSION_TIMEOUT";
    case ErrorCode::kRebalanceInProgress:
      return "REBALANCE_IN_PROGRESS";
    case ErrorCode::kInvalidCommitOffsetSize:
      return "INVALID_COMMIT_OFFSET_SIZE";
    case ErrorCode::kInvalidTimestamp:
      return "INVALID_TIMESTAMP";
    case ErrorCode::kUnsupportedVersion:
      return "UNSUPPORTED_VERSION";
    case ErrorCode::kTopicAlreadyExists:
      return "TOPIC_ALREADY_EXISTS";
    case ErrorCode::kInvalidPartitions:
      return "INVALID_PARTITIONS";
    case ErrorCode::kInvalidReplicationFactor:
      return "INVALID_REPLICATION_FACTOR";
    case ErrorCode::kInvalidReplicaAssignment:
      return "INVALID_REPLICA_ASSIGNMENT";
    case ErrorCode::kInvalidConfig:
      return "INVALID_CONFIG";
    case ErrorCode::kInvalidRequest:
      return "INVALID_REQUEST";
    case ErrorCode::kUnsupportedForMessageFormat:
      return "UNSUPPORTED_FOR_MESSAGE_FORMAT";
    case ErrorCode::kOutOfOrderSequenceNumber:
      return "OUT_OF_ORDER_SEQUENCE_NUMBER";
    case ErrorCode::kDuplicateSequenceNumber:
      return "DUPLICATE_SEQUENCE_NUMBER";
    case ErrorCode::kInvalidProducerEpoch:
      return "INVALID_PRODUCER_EPOCH";
    case ErrorCode::kInvalidTxnState:
      return "INVALID_TXN_STATE";
    case ErrorCode::kInvalidProducerIdMapping:
      return "INVALID_PRODUCER_ID_MAPPING";
    case ErrorCode::kInvalidTransactionTimeout:
      return "INVALID_TRANSACTION_TIMEOUT";
    case ErrorCode::kConcurrentTransactions:
      return "CONCURRENT_TRANSACTIONS";
    case ErrorCode::kTransactionCoordinatorFenced:
      return "TRANSACTION_COORDINATOR_FENCED";
    case ErrorCode::kTransactionalIdAuthorizationFailed:
      return "TRANSACTIONAL_ID_AUTHORIZATION_FAILED";
    case ErrorCode::kOperationNotAttempted:
      return "OPERATION_NOT_ATTEMPTED";
    case ErrorCode::kKafkaStorageError:
      return "KAFKA_STORAGE_ERROR";
    case ErrorCode::kUnknownProducerId:
      return "UNKNOWN_PRODUCER_ID";
    case ErrorCode::kFetchSessionIdNotFound:
      return "FETCH_SESSION_ID_NOT_FOUND";
    case ErrorCode::kInvalidFetchSessionEpoch:
      return "INVALID_FETCH_SESSION_EPOCH";
    case ErrorCode::kTopicDeletionDisabled:
      return "TOPIC_DELETION_DISABLED";
    case ErrorCode::kFencedLeaderEpoch:
      return "FENCED_LEADER_EPOCH";
    case ErrorCode::kUnknownLeaderEpoch:
      return "UNKNOWN_LEADER_EPOCH";
    case ErrorCode::kUnsupportedCompressionType:
      return "UNSUPPORTED_COMPRESSION_TYPE";
    case ErrorCode::kMemberIdRequired:
      return "MEMBER_ID_REQUIRED";
    case ErrorCode::kGroupMaxSizeReached:
      return "GROUP_MAX_SIZE_REACHED";
    case ErrorCode::kFencedInstanceId:
      return "FENCED_INSTANCE_ID";
    case ErrorCode::kInvalidRecord:
      return "INVALID_RECORD";
    case ErrorCode::kUnstableOffsetCommit:
      return "UNSTABLE_OFFSET_COMMIT";
    case ErrorCode::kProducerFenced:
      return "PRODUCER_FENCED";
    case ErrorCode::kUnknownTopicId:
      return "UNKNOWN_TOPIC_ID";
    case ErrorCode::kInconsistentTopicId:
      return "INCONSISTENT_TOPIC_ID";
  }
  return "UNKNOWN_ERROR_CODE";
}

bool IsRetriable(ErrorCode code) {
  switch (code) {
    case ErrorCode::kCorruptMessage:
    case ErrorCode::kUnknownTopicOrPartition:
    case ErrorCode::kLeaderNotAvailable:
    case ErrorCode::kNotLeaderOrFollower:
    case ErrorCode::kRequestTimedOut:
    case ErrorCode::kCoordinatorLoadInProgress:
    case ErrorCode::kCoordinatorNotAvailable:
    case ErrorCode::kNotCoordinator:
    case ErrorCode::kNotEnoughReplicas:
    case ErrorCode::kConcurrentTransactions:
    case ErrorCode::kKafkaStorageError:
    case ErrorCode::kFetchSessionIdNotFound:
    case ErrorCode::kInvalidFetchSessionEpoch:
    case ErrorCode::kFencedLeaderEpoch:
    case ErrorCode::kUnknownLeaderEpoch:
    case ErrorCode::kUnstableOffsetCommit:
    case ErrorCode::kUnknownTopicId:
    case ErrorCode::kInconsistentTopicId:
      return true;
    default:
      return false;
  }
}

}  // namespace daruma
