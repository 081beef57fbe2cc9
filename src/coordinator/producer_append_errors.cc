#include "coordinator/producer_append_errors.h"

namespace daruma {

ErrorCode ErrorCodeForProducerAppend(ProducerAppendError error) {
  switch (error) {
    case ProducerAppendError::kInvalidProducerEpoch:
      return ErrorCode::kInvalidProducerEpoch;
    case ProducerAppendError::kOutOfOrderSequence:
      return ErrorCode::kOutOfOrderSequenceNumber;
    case ProducerAppendError::kInvalidTxnState:
      return ErrorCode::kInvalidTxnState;
    case ProducerAppendError::kTransactionCoordinatorFenced:
      return ErrorCode::kTransactionCoordinatorFenced;
  }
  return ErrorCode::kUnknownServerError;
}

}  // namespace daruma
