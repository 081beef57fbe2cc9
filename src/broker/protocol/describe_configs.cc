#include "broker/protocol/describe_configs.h"

#include "broker/protocol/codec_util.h"

namespace daruma::broker {
namespace {

constexpr ApiKey kKey = ApiKey::kDescribeConfigs;
using Response = DescribeConfigsResponse;

Response::Synonym ReadSynonym(ProtocolReader& r) {
  Response::Synonym s;
  s.name = r.ReadString("Results.Configs.Synonyms.Name", kClassic);
  s.value = r.ReadNullableString("Results.Configs.Synonyms.Value", kClassic);
  s.source = r.ReadInt8("Results.Configs.Synonyms.Source");
  return s;
}

Response::Config ReadConfig(ProtocolReader& r, int16_t version) {
  Response::Config c;
  c.name = r.ReadString("Results.Configs.Name", kClassic);
  c.value = r.ReadNullableString("Results.Configs.Value", kClassic);
  c.read_only = r.ReadBool("Results.Configs.ReadOnly");
  if (version == 0) c.is_default = r.ReadBool("Results.Configs.IsDefault");
  if (version >= 1) c.config_source = r.ReadInt8("Results.Configs.ConfigSource");
  c.is_sensitive = r.ReadBool("Results.Configs.IsSensitive");
  if (version >= 1) {
    c.synonyms = r.ReadArray<Response::Synonym>("Results.Configs.Synonyms", kClassic, ReadSynonym);
  }
  return c;
}

void WriteConfig(const Response::Config& c, int16_t version, ProtocolWriter& w) {
  w.WriteString(c.name, kClassic);
  w.WriteNullableString(c.value, kClassic);
  w.WriteBool(c.read_only);
  if (version == 0) w.WriteBool(c.is_default);
  if (version >= 1) w.WriteInt8(c.config_source);
  w.WriteBool(c.is_sensitive);
  if (version >= 1) {
    w.WriteArray(c.synonyms, kClassic, [](const Response::Synonym& s, ProtocolWriter& w) {
      w.WriteString(s.name, kClassic);
      w.WriteNullableString(s.value, kClassic);
      w.WriteInt8(s.source);
    });
  }
}

}  // namespace

Result<DescribeConfigsRequest> DecodeDescribeConfigsRequest(ProtocolReader& r, int16_t version) {
  DARUMA_RETURN_IF_ERROR(CheckDecodeVersion(kKey, version, "request"));
  DescribeConfigsRequest req;
  req.resources =
      r.ReadArray<DescribeConfigsRequest::Resource>("Resources", kClassic, [](ProtocolReader& r) {
        DescribeConfigsRequest::Resource res;
        res.resource_type = r.ReadInt8("Resources.ResourceType");
        res.resource_name = r.ReadString("Resources.ResourceName", kClassic);
        res.configuration_keys = r.ReadNullableArray<std::string>(
            "Resources.ConfigurationKeys", kClassic, [](ProtocolReader& r) {
              return r.ReadString("Resources.ConfigurationKeys", kClassic);
            });
        return res;
      });
  if (version >= 1) req.include_synonyms = r.ReadBool("IncludeSynonyms");
  return FinishDecode(r, std::move(req), kKey, version, "request");
}

void EncodeDescribeConfigsRequest(const DescribeConfigsRequest& req, int16_t version,
                                  ProtocolWriter& w) {
  w.WriteArray(
      req.resources, kClassic, [](const DescribeConfigsRequest::Resource& res, ProtocolWriter& w) {
        w.WriteInt8(res.resource_type);
        w.WriteString(res.resource_name, kClassic);
        w.WriteNullableArray(
            res.configuration_keys, kClassic,
            [](const std::string& key, ProtocolWriter& w) { w.WriteString(key, kClassic); });
      });
  if (version >= 1) w.WriteBool(req.include_synonyms);
}

void EncodeDescribeConfigsResponse(const DescribeConfigsResponse& resp, int16_t version,
                                   ProtocolWriter& w) {
  w.WriteInt32(resp.throttle_time_ms);
  w.WriteArray(resp.results, kClassic,
               [version](const Response::ResourceResult& res, ProtocolWriter& w) {
                 w.WriteInt16(int16_t(res.error_code));
                 w.WriteNullableString(res.error_message, kClassic);
                 w.WriteInt8(res.resource_type);
                 w.WriteString(res.resource_name, kClassic);
                 w.WriteArray(res.configs, kClassic,
                              [version](const Response::Config& c, ProtocolWriter& w) {
                                WriteConfig(c, version, w);
                              });
               });
}

Result<DescribeConfigsResponse> DecodeDescribeConfigsResponse(ProtocolReader& r, int16_t version) {
  DARUMA_RETURN_IF_ERROR(CheckDecodeVersion(kKey, version, "response"));
  DescribeConfigsResponse resp;
  resp.throttle_time_ms = r.ReadInt32("ThrottleTimeMs");
  resp.results =
      r.ReadArray<Response::ResourceResult>("Results", kClassic, [version](ProtocolReader& r) {
        Response::ResourceResult res;
        res.error_code = ErrorCode(r.ReadInt16("Results.ErrorCode"));
        res.error_message = r.ReadNullableString("Results.ErrorMessage", kClassic);
        res.resource_type = r.ReadInt8("Results.ResourceType");
        res.resource_name = r.ReadString("Results.ResourceName", kClassic);
        res.configs = r.ReadArray<Response::Config>(
            "Results.Configs", kClassic,
            [version](ProtocolReader& r) { return ReadConfig(r, version); });
        return res;
      });
  return FinishDecode(r, std::move(resp), kKey, version, "response");
}

}  // namespace daruma::broker
