#include "common/system/curl_support.h"

#include <algorithm>
#include <cstdint>
#include <limits>
#include <mutex>

#include "common/base/strings.h"

namespace handoff {

absl::Status InitCurlOnce() {
  static std::once_flag once;
  static CURLcode result = CURLE_OK;
  std::call_once(once, [] { result = curl_global_init(CURL_GLOBAL_DEFAULT); });
  if (result != CURLE_OK) {
    return absl::InternalError(StrCat("cannot initialise libcurl: ", curl_easy_strerror(result)));
  }
  return absl::OkStatus();
}

absl::StatusOr<CurlHandle> NewCurlHandle() {
  if (absl::Status init = InitCurlOnce(); !init.ok()) return init;
  CurlHandle curl(curl_easy_init());
  if (curl == nullptr) return absl::InternalError("cannot create a libcurl handle");
  return curl;
}

void AppendCurlHeader(CurlList* list, const std::string& header) {
  list->reset(curl_slist_append(list->release(), header.c_str()));
}

long CurlTimeoutMs(absl::Duration timeout) {
  return static_cast<long>(std::clamp<int64_t>(absl::ToInt64Milliseconds(timeout), 1,
                                               std::numeric_limits<long>::max()));
}

CURLcode CurlBodySink::Attach(CURL* handle) {
  CURLcode code = curl_easy_setopt(handle, CURLOPT_WRITEFUNCTION, &CurlBodySink::OnData);
  if (code != CURLE_OK) return code;
  return curl_easy_setopt(handle, CURLOPT_WRITEDATA, this);
}

size_t CurlBodySink::OnData(char* data, size_t size, size_t count, void* user) {
  auto* sink = static_cast<CurlBodySink*>(user);
  const size_t bytes = size * count;
  const size_t room = sink->limit_ - std::min(sink->limit_, sink->body_.size());
  if (bytes <= room) {
    sink->body_.append(data, bytes);
    return bytes;
  }
  sink->over_limit_ = true;
  if (sink->overflow_ == Overflow::kAbort) return 0;  // aborts the transfer
  // Taking the whole chunk lets the transfer go on to its end: the status code is what counts.
  sink->body_.append(data, room);
  return bytes;
}

}  // namespace handoff
