#include "coordinator/group_metadata.h"

#include <algorithm>

namespace daruma {

const char* GroupStateName(GroupState state) {
  switch (state) {
    case GroupState::kEmpty:
      return "Empty";
    case GroupState::kPreparingRebalance:
      return "PreparingRebalance";
    case GroupState::kCompletingRebalance:
      return "CompletingRebalance";
    case GroupState::kStable:
      return "Stable";
    case GroupState::kDead:
      return "Dead";
  }
  return "Unknown";
}

std::optional<GroupState> ParseGroupState(std::string_view name) {
  // Kafka compares the filter case-insensitively (ListGroups v4 StatesFilter).
  auto same = [&](const char* known) {
    const std::string_view k(known);
    return k.size() == name.size() &&
           std::equal(k.begin(), k.end(), name.begin(),
                      [](char a, char b) { return std::tolower(a) == std::tolower(b); });
  };
  for (GroupState s : {GroupState::kEmpty, GroupState::kPreparingRebalance,
                       GroupState::kCompletingRebalance, GroupState::kStable, GroupState::kDead}) {
    if (same(GroupStateName(s))) return s;
  }
  return std::nullopt;
}

const Bytes* MemberMetadata::MetadataFor(const std::string& protocol) const {
  for (const GroupProtocol& p : protocols) {
    if (p.name == protocol) return &p.metadata;
  }
  return nullptr;
}

bool MemberMetadata::SameProtocols(const std::vector<GroupProtocol>& other) const {
  if (other.size() != protocols.size()) return false;
  for (size_t i = 0; i < other.size(); ++i) {
    if (other[i].name != protocols[i].name || other[i].metadata != protocols[i].metadata) {
      return false;
    }
  }
  return true;
}

bool GroupMetadata::TransitionTo(GroupState to, int64_t now_ms) {
  bool valid = false;
  switch (to) {
    case GroupState::kEmpty:
      valid = state_ == GroupState::kPreparingRebalance;
      break;
    case GroupState::kPreparingRebalance:
      valid = state_ == GroupState::kStable || state_ == GroupState::kCompletingRebalance ||
              state_ == GroupState::kEmpty;
      break;
    case GroupState::kCompletingRebalance:
      valid = state_ == GroupState::kPreparingRebalance;
      break;
    case GroupState::kStable:
      valid = state_ == GroupState::kCompletingRebalance;
      break;
    case GroupState::kDead:
      valid = state_ != GroupState::kDead;
      break;
  }
  if (!valid) return false;
  state_ = to;
  state_timestamp_ = now_ms;
  return true;
}

MemberMetadata* GroupMetadata::FindMember(const std::string& member_id) {
  auto it = members_.find(member_id);
  return it == members_.end() ? nullptr : &it->second;
}

const std::string* GroupMetadata::StaticMemberId(const std::string& instance_id) const {
  auto it = static_members_.find(instance_id);
  return it == static_members_.end() ? nullptr : &it->second;
}

void GroupMetadata::AddMember(MemberMetadata member) {
  if (members_.empty()) protocol_type_ = member.protocol_type;
  if (!leader_id_) leader_id_ = member.member_id;
  if (member.group_instance_id) static_members_[*member.group_instance_id] = member.member_id;
  std::string id = member.member_id;
  members_.emplace(std::move(id), std::move(member));
}

void GroupMetadata::RemoveMember(const std::string& member_id) {
  auto it = members_.find(member_id);
  if (it == members_.end()) return;
  if (it->second.group_instance_id) static_members_.erase(*it->second.group_instance_id);
  members_.erase(it);
  if (leader_id_ && *leader_id_ == member_id) {
    // Kafka prefers a member that has already rejoined; any member otherwise.
    leader_id_.reset();
    for (const auto& [id, m] : members_) {
      if (m.awaiting_join) {
        leader_id_ = id;
        break;
      }
    }
    if (!leader_id_ && !members_.empty()) leader_id_ = members_.begin()->first;
  }
}

MemberMetadata& GroupMetadata::ReplaceStaticMember(const std::string& old_id,
                                                   const std::string& new_id) {
  auto node = members_.extract(old_id);
  node.key() = new_id;
  node.mapped().member_id = new_id;
  if (node.mapped().group_instance_id) static_members_[*node.mapped().group_instance_id] = new_id;
  auto it = members_.insert(std::move(node)).position;
  if (leader_id_ && *leader_id_ == old_id) leader_id_ = new_id;
  return it->second;
}

bool GroupMetadata::SupportsProtocols(const std::string& protocol_type,
                                      const std::vector<GroupProtocol>& protocols) const {
  if (members_.empty()) return !protocol_type.empty() && !protocols.empty();
  if (!protocol_type_ || *protocol_type_ != protocol_type) return false;
  for (const GroupProtocol& p : protocols) {
    bool everyone = true;
    for (const auto& [id, m] : members_) {
      if (m.MetadataFor(p.name) == nullptr) {
        everyone = false;
        break;
      }
    }
    if (everyone) return true;
  }
  return false;
}

std::string GroupMetadata::SelectProtocol() const {
  // Candidates: the protocols every member supports, in the first member's order.
  std::vector<std::string> candidates;
  if (members_.empty()) return "";
  for (const GroupProtocol& p : members_.begin()->second.protocols) {
    bool everyone = true;
    for (const auto& [id, m] : members_) everyone = everyone && m.MetadataFor(p.name) != nullptr;
    if (everyone) candidates.push_back(p.name);
  }
  // Each member votes for its most preferred candidate.
  std::map<std::string, int> votes;
  for (const auto& [id, m] : members_) {
    for (const GroupProtocol& p : m.protocols) {
      if (std::find(candidates.begin(), candidates.end(), p.name) != candidates.end()) {
        ++votes[p.name];
        break;
      }
    }
  }
  std::string best;
  int most = -1;
  for (const std::string& c : candidates) {
    if (votes[c] > most) {
      most = votes[c];
      best = c;
    }
  }
  return best;
}

bool GroupMetadata::HasAllMembersJoined() const {
  if (!pending_members_.empty()) return false;
  for (const auto& [id, m] : members_) {
    if (!m.awaiting_join) return false;
  }
  return true;
}

int32_t GroupMetadata::MaxRebalanceTimeoutMs() const {
  int32_t most = 0;
  for (const auto& [id, m] : members_) most = std::max(most, m.rebalance_timeout_ms);
  return most;
}

void GroupMetadata::InitNextGeneration(int64_t now_ms) {
  ++generation_id_;
  if (!members_.empty()) {
    protocol_name_ = SelectProtocol();
    TransitionTo(GroupState::kCompletingRebalance, now_ms);
  } else {
    protocol_name_.reset();
    TransitionTo(GroupState::kEmpty, now_ms);
  }
}

GroupMetadataValue GroupMetadata::ToRecordValue(int64_t now_ms) const {
  GroupMetadataValue v;
  v.protocol_type = protocol_type_.value_or("");
  v.generation = generation_id_;
  v.protocol = protocol_name_;
  v.leader = leader_id_;
  v.current_state_timestamp = now_ms;
  for (const auto& [id, m] : members_) {
    GroupMemberValue mv;
    mv.member_id = id;
    mv.group_instance_id = m.group_instance_id;
    mv.client_id = m.client_id;
    mv.client_host = m.client_host;
    mv.rebalance_timeout = m.rebalance_timeout_ms;
    mv.session_timeout = m.session_timeout_ms;
    if (protocol_name_) {
      if (const Bytes* meta = m.MetadataFor(*protocol_name_)) mv.subscription = *meta;
    }
    mv.assignment = m.assignment;
    v.members.push_back(std::move(mv));
  }
  return v;
}

void GroupMetadata::LoadFrom(const GroupMetadataValue& value, int64_t now_ms) {
  members_.clear();
  static_members_.clear();
  pending_members_.clear();
  protocol_type_ = value.protocol_type;
  generation_id_ = value.generation;
  protocol_name_ = value.protocol;
  leader_id_ = value.leader;
  state_timestamp_ = value.current_state_timestamp >= 0 ? value.current_state_timestamp : now_ms;
  for (const GroupMemberValue& mv : value.members) {
    MemberMetadata m;
    m.member_id = mv.member_id;
    m.group_instance_id = mv.group_instance_id;
    m.client_id = mv.client_id;
    m.client_host = mv.client_host;
    m.rebalance_timeout_ms = mv.rebalance_timeout;
    m.session_timeout_ms = mv.session_timeout;
    m.protocol_type = value.protocol_type;
    m.protocols.push_back({value.protocol.value_or(""), mv.subscription});
    m.assignment = mv.assignment;
    if (m.group_instance_id) static_members_[*m.group_instance_id] = m.member_id;
    members_.emplace(m.member_id, std::move(m));
  }
  state_ = members_.empty() ? GroupState::kEmpty : GroupState::kStable;
  if (members_.empty()) leader_id_.reset();
}

std::set<std::string> GroupMetadata::SubscribedTopics() const {
  std::set<std::string> topics;
  if (!protocol_type_ || *protocol_type_ != "consumer" || !protocol_name_) return topics;
  for (const auto& [id, m] : members_) {
    const Bytes* meta = m.MetadataFor(*protocol_name_);
    if (meta == nullptr) continue;
    if (auto t = ConsumerSubscriptionTopics(*meta)) topics.insert(t->begin(), t->end());
  }
  return topics;
}

void ApplyCommittedTxnOffsets(GroupOffsetMap& committed, const GroupOffsetMap& pending) {
  for (const auto& [tp, offset] : pending) {
    auto it = committed.find(tp);
    if (it == committed.end()) {
      committed.emplace(tp, offset);
    } else if (offset.record_offset > it->second.record_offset) {
      it->second = offset;
    }
  }
}

bool GroupMetadata::HasPendingTxnOffset(const std::pair<std::string, int32_t>& tp) const {
  for (const auto& [producer_id, offsets] : pending_txn_offsets_) {
    if (offsets.count(tp)) return true;
  }
  return false;
}

void GroupMetadata::RemoveOffset(const std::pair<std::string, int32_t>& tp) {
  offsets_.erase(tp);
  for (auto& [producer_id, offsets] : pending_txn_offsets_) offsets.erase(tp);
}

bool GroupMetadata::CompleteTxn(int64_t producer_id, bool commit) {
  auto it = pending_txn_offsets_.find(producer_id);
  if (it == pending_txn_offsets_.end()) return false;
  if (commit) ApplyCommittedTxnOffsets(offsets_, it->second);
  pending_txn_offsets_.erase(it);
  return true;
}

}  // namespace daruma
