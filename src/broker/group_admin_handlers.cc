// DescribeGroups, ListGroups and DeleteGroups: the views and the one
// destructive operation Kafka's admin tools (kafka-consumer-groups.sh,
// AdminClient) use on consumer groups.
#include "broker/api_handlers.h"
#include "protocol/messages.h"

namespace daruma::broker {

void HandleDescribeGroups(HandlerEnv& env, const RequestHeader& header, ProtocolReader& body,
                          const Respond& respond) {
  Result<DescribeGroupsRequest> request = DecodeDescribeGroupsRequest(body, header.api_version);
  if (!request.ok()) return CloseMalformed(env, header, request.status(), respond);
  DescribeGroupsResponse response;
  for (const std::string& id : request->groups) {
    DescribeGroupsResponse::Group g;
    g.group_id = id;
    if (env.groups == nullptr) {
      g.error_code = ErrorCode::kCoordinatorNotAvailable;
      response.groups.push_back(std::move(g));
      continue;
    }
    GroupDescription d = env.groups->DescribeGroup(id);
    g.error_code = d.error;
    g.group_state = d.state;
    g.protocol_type = d.protocol_type;
    g.protocol_data = d.protocol_data;
    for (GroupDescription::Member& m : d.members) {
      DescribeGroupsResponse::Member member;
      member.member_id = std::move(m.member_id);
      member.group_instance_id = std::move(m.group_instance_id);
      member.client_id = std::move(m.client_id);
      member.client_host = std::move(m.client_host);
      member.member_metadata = std::move(m.metadata);
      member.member_assignment = std::move(m.assignment);
      g.members.push_back(std::move(member));
    }
    response.groups.push_back(std::move(g));
  }
  respond(EncodeResponseFrame(env, header, response, EncodeDescribeGroupsResponse), false);
}

void HandleListGroups(HandlerEnv& env, const RequestHeader& header, ProtocolReader& body,
                      const Respond& respond) {
  Result<ListGroupsRequest> request = DecodeListGroupsRequest(body, header.api_version);
  if (!request.ok()) return CloseMalformed(env, header, request.status(), respond);
  ListGroupsResponse response;
  if (env.groups == nullptr) {
    response.error_code = ErrorCode::kCoordinatorNotAvailable;
  } else {
    // Every group here is a classic one (KIP-848 types filter, v5).
    bool classic_wanted = request->types_filter.empty();
    for (const std::string& type : request->types_filter) {
      std::string lower;
      for (char c : type) lower += char(std::tolower(static_cast<unsigned char>(c)));
      classic_wanted = classic_wanted || lower == "classic";
    }
    auto [error, groups] = env.groups->ListGroups(request->states_filter);
    response.error_code = error;
    if (classic_wanted) {
      for (GroupListing& l : groups) {
        ListGroupsResponse::Group g;
        g.group_id = std::move(l.group_id);
        g.protocol_type = std::move(l.protocol_type);
        g.group_state = std::move(l.state);
        g.group_type = "classic";
        response.groups.push_back(std::move(g));
      }
    }
  }
  respond(EncodeResponseFrame(env, header, response, EncodeListGroupsResponse), false);
}

void HandleDeleteGroups(HandlerEnv& env, const RequestHeader& header, ProtocolReader& body,
                        const Respond& respond) {
  Result<DeleteGroupsRequest> request = DecodeDeleteGroupsRequest(body, header.api_version);
  if (!request.ok()) return CloseMalformed(env, header, request.status(), respond);
  DeleteGroupsResponse response;
  for (const std::string& id : request->groups_names) {
    DeleteGroupsResponse::Result r;
    r.group_id = id;
    r.error_code =
        env.groups == nullptr ? ErrorCode::kCoordinatorNotAvailable : env.groups->DeleteGroup(id);
    response.results.push_back(std::move(r));
  }
  respond(EncodeResponseFrame(env, header, response, EncodeDeleteGroupsResponse), false);
}

}  // namespace daruma::broker
