// ListPartitionReassignments (KIP-455): no reassignment is ever in progress
// on a single node (AlterPartitionReassignments only accepts the current
// assignment), so the answer is always an empty topic list with no error,
// whether Topics is null (all) or names topics, known or not (Kafka's
// controller skips topics it does not know).
#include "broker/api_handlers.h"
#include "protocol/messages.h"

namespace daruma::broker {

void HandleListPartitionReassignments(HandlerEnv& env, const RequestHeader& header,
                                      ProtocolReader& body, const Respond& respond) {
  Result<ListPartitionReassignmentsRequest> request =
      DecodeListPartitionReassignmentsRequest(body, header.api_version);
  if (!request.ok()) return CloseMalformed(env, header, request.status(), respond);
  ListPartitionReassignmentsResponse response;
  respond(EncodeResponseFrame(env, header, response, EncodeListPartitionReassignmentsResponse),
          false);
}

}  // namespace daruma::broker
