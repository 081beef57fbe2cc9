#include "protocol/messages.h"

namespace daruma {

std::vector<ApiVersionsResponse::Key> AdvertisedApiKeys() {
  std::vector<ApiVersionsResponse::Key> keys;
  for (const ApiVersionRange& range : AdvertisedApis()) {
    ApiVersionsResponse::Key key;
    key.api_key = range.key;
    key.min_version = range.min;
    key.max_version = range.max;
    keys.push_back(std::move(key));
  }
  return keys;
}

}  // namespace daruma
