#include "agent/cloud/aws_http.h"

#include <curl/curl.h>

#include "common/base/strings.h"
#include "common/system/curl_support.h"

namespace handoff {

absl::StatusOr<AwsHttpAnswer> SendAwsRequest(const AwsHttpRequest& request) {
  absl::StatusOr<CurlHandle> curl = NewCurlHandle();
  if (!curl.ok()) return curl.status();
  CURL* handle = curl->get();
  const std::string& url = request.url;
  const long timeout_ms = CurlTimeoutMs(request.deadline - absl::Now());

  CurlList headers;
  for (const auto& [name, value] : request.headers) {
    AppendCurlHeader(&headers, StrCat(name, ": ", value));
  }
  char error_buffer[CURL_ERROR_SIZE] = {};
  CurlBodySink received(request.max_answer_bytes, CurlBodySink::Overflow::kAbort);
  CURLcode code = CURLE_OK;
  auto set = [&code](CURLcode result) {
    if (code == CURLE_OK) code = result;
  };
  set(curl_easy_setopt(handle, CURLOPT_URL, url.c_str()));
  set(curl_easy_setopt(handle, CURLOPT_ERRORBUFFER, error_buffer));
  set(received.Attach(handle));
  set(curl_easy_setopt(handle, CURLOPT_TIMEOUT_MS, timeout_ms));
  set(curl_easy_setopt(handle, CURLOPT_CONNECTTIMEOUT_MS, timeout_ms));
  // The default resolver timeout uses SIGALRM, unsafe in a multi-threaded process.
  set(curl_easy_setopt(handle, CURLOPT_NOSIGNAL, 1L));
  if (!request.use_proxy) set(curl_easy_setopt(handle, CURLOPT_NOPROXY, "*"));
  set(curl_easy_setopt(handle, CURLOPT_FOLLOWLOCATION, 0L));
  set(curl_easy_setopt(handle, CURLOPT_PROTOCOLS_STR, "http,https"));
  set(curl_easy_setopt(handle, CURLOPT_USERAGENT, "handoff"));
  set(curl_easy_setopt(handle, CURLOPT_HTTPHEADER, headers.get()));
  if (request.method == "GET") {
    set(curl_easy_setopt(handle, CURLOPT_HTTPGET, 1L));
  } else {
    set(curl_easy_setopt(handle, CURLOPT_CUSTOMREQUEST, request.method.c_str()));
    set(curl_easy_setopt(handle, CURLOPT_POSTFIELDSIZE_LARGE,
                         static_cast<curl_off_t>(request.body.size())));
    set(curl_easy_setopt(handle, CURLOPT_POSTFIELDS, request.body.c_str()));
  }
  if (code != CURLE_OK) {
    return absl::InternalError(
        StrCat(request.method, " ", url, ": cannot configure libcurl: ", curl_easy_strerror(code)));
  }
  code = curl_easy_perform(handle);
  if (code != CURLE_OK) {
    if (received.over_limit()) {
      return absl::UnavailableError(
          StrCat(url, " answered more than ", received.limit(), " bytes: not ", request.what));
    }
    const std::string detail = error_buffer[0] != '\0' ? error_buffer : curl_easy_strerror(code);
    if (code == CURLE_OPERATION_TIMEDOUT) {
      return absl::UnavailableError(StrCat(request.what, " (", url, ") did not answer within ",
                                           absl::FormatDuration(request.timeout), ": ", detail));
    }
    return absl::UnavailableError(StrCat(request.what, " (", url, ") did not answer: ", detail));
  }
  AwsHttpAnswer answer;
  curl_easy_getinfo(handle, CURLINFO_RESPONSE_CODE, &answer.status);
  answer.body = received.TakeBody();
  return answer;
}

}  // namespace handoff
