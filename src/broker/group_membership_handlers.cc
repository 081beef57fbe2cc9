// JoinGroup, SyncGroup, Heartbeat and LeaveGroup (Kafka's KafkaApis group
// handlers): decode, hand the request to the GroupCoordinator, encode its
// answer. JoinGroup and SyncGroup may be answered later, when the last member
// joins, the leader's assignment arrives or a deadline passes (one of the
// coordinator's delayed operations); their answer is then built from the
// request's header and the broker context, which outlive the request.
#include "broker/api_handlers.h"
#include "protocol/messages.h"

namespace daruma::broker {

void HandleJoinGroup(HandlerEnv& env, const RequestHeader& header, ProtocolReader& body,
                     const Respond& respond) {
  Result<JoinGroupRequest> request = DecodeJoinGroupRequest(body, header.api_version);
  if (!request.ok()) return CloseMalformed(env, header, request.status(), respond);
  const BrokerContext& ctx = env.ctx;
  auto answer = [&ctx, header, respond](const JoinGroupResult& r) {
    JoinGroupResponse response;
    response.error_code = r.error;
    response.generation_id = r.generation_id;
    response.protocol_type = r.protocol_type;
    response.protocol_name = r.protocol_name;
    response.leader = r.leader_id;
    response.skip_assignment = r.skip_assignment;
    response.member_id = r.member_id;
    for (const JoinGroupResult::Member& m : r.members) {
      JoinGroupResponse::Member member;
      member.member_id = m.member_id;
      member.group_instance_id = m.group_instance_id;
      member.metadata = m.metadata;
      response.members.push_back(std::move(member));
    }
    respond(EncodeLaterResponseFrame(ctx, header, response, EncodeJoinGroupResponse), false);
  };
  if (env.groups == nullptr) {
    JoinGroupResult r;
    r.error = ErrorCode::kCoordinatorNotAvailable;
    return answer(r);
  }
  JoinGroupArgs args;
  args.group_id = std::move(request->group_id);
  args.member_id = std::move(request->member_id);
  args.group_instance_id = std::move(request->group_instance_id);
  args.protocol_type = std::move(request->protocol_type);
  for (auto& p : request->protocols)
    args.protocols.push_back({std::move(p.name), std::move(p.metadata)});
  args.session_timeout_ms = request->session_timeout_ms;
  args.rebalance_timeout_ms = header.api_version >= 1 ? request->rebalance_timeout_ms : -1;
  args.client_id = header.client_id.value_or("");
  args.client_host = env.client != nullptr ? env.client->host : "";
  // KIP-394: from v4 a new dynamic member is first given its id.
  args.require_known_member_id = header.api_version >= 4 && !args.group_instance_id;
  args.supports_skip_assignment = header.api_version >= 9;
  env.groups->JoinGroup(std::move(args), answer);
}

void HandleSyncGroup(HandlerEnv& env, const RequestHeader& header, ProtocolReader& body,
                     const Respond& respond) {
  Result<SyncGroupRequest> request = DecodeSyncGroupRequest(body, header.api_version);
  if (!request.ok()) return CloseMalformed(env, header, request.status(), respond);
  const BrokerContext& ctx = env.ctx;
  auto answer = [&ctx, header, respond](const SyncGroupResult& r) {
    SyncGroupResponse response;
    response.error_code = r.error;
    response.protocol_type = r.protocol_type;
    response.protocol_name = r.protocol_name;
    response.assignment = r.assignment;
    respond(EncodeLaterResponseFrame(ctx, header, response, EncodeSyncGroupResponse), false);
  };
  if (env.groups == nullptr) {
    SyncGroupResult r;
    r.error = ErrorCode::kCoordinatorNotAvailable;
    return answer(r);
  }
  SyncGroupArgs args;
  args.group_id = std::move(request->group_id);
  args.generation_id = request->generation_id;
  args.member_id = std::move(request->member_id);
  args.group_instance_id = std::move(request->group_instance_id);
  if (header.api_version >= 5) {
    args.protocol_type = std::move(request->protocol_type);
    args.protocol_name = std::move(request->protocol_name);
  }
  for (auto& a : request->assignments)
    args.assignments.emplace_back(std::move(a.member_id), std::move(a.assignment));
  env.groups->SyncGroup(std::move(args), answer);
}

void HandleHeartbeat(HandlerEnv& env, const RequestHeader& header, ProtocolReader& body,
                     const Respond& respond) {
  Result<HeartbeatRequest> request = DecodeHeartbeatRequest(body, header.api_version);
  if (!request.ok()) return CloseMalformed(env, header, request.status(), respond);
  HeartbeatResponse response;
  response.error_code =
      env.groups == nullptr
          ? ErrorCode::kCoordinatorNotAvailable
          : env.groups->Heartbeat(request->group_id, request->member_id, request->group_instance_id,
                                  request->generation_id);
  respond(EncodeResponseFrame(env, header, response, EncodeHeartbeatResponse), false);
}

void HandleLeaveGroup(HandlerEnv& env, const RequestHeader& header, ProtocolReader& body,
                      const Respond& respond) {
  Result<LeaveGroupRequest> request = DecodeLeaveGroupRequest(body, header.api_version);
  if (!request.ok()) return CloseMalformed(env, header, request.status(), respond);
  LeaveGroupResponse response;
  // v0-2 name one member at the top level; v3+ a batch (KIP-345).
  std::vector<MemberIdentity> members;
  if (header.api_version >= 3) {
    for (const auto& m : request->members) members.push_back({m.member_id, m.group_instance_id});
  } else {
    members.push_back({request->member_id, std::nullopt});
  }
  if (env.groups == nullptr) {
    response.error_code = ErrorCode::kCoordinatorNotAvailable;
  } else {
    LeaveGroupResult result = env.groups->LeaveGroup(request->group_id, members);
    response.error_code = result.error;
    if (header.api_version >= 3) {
      for (size_t i = 0; i < result.member_errors.size(); ++i) {
        LeaveGroupResponse::Member m;
        m.member_id = members[i].member_id;
        m.group_instance_id = members[i].group_instance_id;
        m.error_code = result.member_errors[i];
        response.members.push_back(std::move(m));
      }
    } else if (result.error == ErrorCode::kNone && !result.member_errors.empty()) {
      response.error_code = result.member_errors.front();
    }
  }
  respond(EncodeResponseFrame(env, header, response, EncodeLeaveGroupResponse), false);
}

}  // namespace daruma::broker
