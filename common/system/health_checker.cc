#include "common/system/health_checker.h"

#include <curl/curl.h>

#include <cstring>

#include "common/base/strings.h"
#include "common/system/curl_support.h"

namespace handoff {
namespace {

// How much of an error response's body goes into the message: enough for a component's
// "[-]leaderElection failed: ..." line, not a whole page.
constexpr size_t kBodyExcerptBytes = 200;

// One line, printable: bodies end in newlines and may hold anything.
std::string PrintableExcerpt(const CurlBodySink& body) {
  std::string out;
  for (char c : body.body()) {
    out.push_back(c >= 0x20 && c < 0x7f ? c : ' ');
  }
  std::string trimmed(StripWhitespace(out));
  if (body.over_limit()) trimmed += "...";
  return trimmed;
}

// One GET of `endpoint` within `timeout`, the body going to `body`: a kKeepStart sink, since the
// status code is what counts and a long body must not fail the transfer.
absl::StatusOr<long> Perform(const HealthEndpoint& endpoint, absl::Duration timeout,
                             CurlBodySink* body) {
  const std::string url = endpoint.Url();
  if (endpoint.scheme != "https" && endpoint.scheme != "http") {
    return absl::InvalidArgumentError(
        StrCat("health check ", url, ": scheme must be http or https"));
  }
  absl::StatusOr<CurlHandle> curl = NewCurlHandle();
  if (!curl.ok()) {
    return absl::Status(curl.status().code(), StrCat("health check ", url, ": ",
                                                     curl.status().message()));
  }

  const long timeout_ms = CurlTimeoutMs(timeout);
  char error_buffer[CURL_ERROR_SIZE] = {};
  CURL* handle = curl->get();
  CURLcode code = CURLE_OK;
  auto set = [&](CURLcode result) {
    if (code == CURLE_OK) code = result;
  };
  set(curl_easy_setopt(handle, CURLOPT_URL, url.c_str()));
  set(curl_easy_setopt(handle, CURLOPT_HTTPGET, 1L));
  set(curl_easy_setopt(handle, CURLOPT_ERRORBUFFER, error_buffer));
  set(body->Attach(handle));
  set(curl_easy_setopt(handle, CURLOPT_TIMEOUT_MS, timeout_ms));
  // The default SIGALRM-based resolver timeout is unsafe in a multi-threaded agent.
  set(curl_easy_setopt(handle, CURLOPT_NOSIGNAL, 1L));
  // The endpoint is on this node; an https_proxy/no_proxy inherited from the environment
  // (common on nodes that pull images through a proxy) must not divert it.
  set(curl_easy_setopt(handle, CURLOPT_NOPROXY, "*"));
  set(curl_easy_setopt(handle, CURLOPT_FOLLOWLOCATION, 0L));
  // Not verified on purpose: the kube-controller-manager and cloud-controller-manager serve a
  // self-signed certificate generated at startup on loopback, and their /healthz is anonymous.
  // The check proves that the restarted process answers 200, not who it is.
  set(curl_easy_setopt(handle, CURLOPT_SSL_VERIFYPEER, 0L));
  set(curl_easy_setopt(handle, CURLOPT_SSL_VERIFYHOST, 0L));
  set(curl_easy_setopt(handle, CURLOPT_USERAGENT, "handoff-agent"));
  if (code != CURLE_OK) {
    return absl::InternalError(
        StrCat("health check ", url, ": cannot configure libcurl: ", curl_easy_strerror(code)));
  }

  code = curl_easy_perform(handle);
  if (code != CURLE_OK) {
    std::string detail = error_buffer[0] != '\0' ? error_buffer : curl_easy_strerror(code);
    long os_errno = 0;
    if (curl_easy_getinfo(handle, CURLINFO_OS_ERRNO, &os_errno) == CURLE_OK && os_errno != 0) {
      StrAppend(&detail, " (", std::strerror(static_cast<int>(os_errno)), ")");
    }
    if (code == CURLE_OPERATION_TIMEDOUT) {
      return absl::UnavailableError(StrCat("GET ", url, ": no answer within the timeout of ",
                                           absl::FormatDuration(timeout), ": ", detail));
    }
    return absl::UnavailableError(StrCat("GET ", url, ": ", detail));
  }
  long status = 0;
  curl_easy_getinfo(handle, CURLINFO_RESPONSE_CODE, &status);
  return status;
}

class CurlHealthChecker : public HealthChecker {
 public:
  absl::Status Check(const HealthEndpoint& endpoint, absl::Duration timeout) override {
    CurlBodySink body(kBodyExcerptBytes, CurlBodySink::Overflow::kKeepStart);
    absl::StatusOr<long> status = Perform(endpoint, timeout, &body);
    if (!status.ok()) return status.status();
    if (*status != 200) {
      std::string excerpt = PrintableExcerpt(body);
      return absl::UnavailableError(StrCat("GET ", endpoint.Url(), ": HTTP ", *status,
                                           excerpt.empty() ? "" : ": ", excerpt));
    }
    return absl::OkStatus();
  }

  absl::StatusOr<HttpAnswer> Get(const HealthEndpoint& endpoint, absl::Duration timeout,
                                 size_t max_body) override {
    CurlBodySink body(max_body, CurlBodySink::Overflow::kKeepStart);
    absl::StatusOr<long> status = Perform(endpoint, timeout, &body);
    if (!status.ok()) return status.status();
    HttpAnswer answer;
    answer.status = *status;
    answer.truncated = body.over_limit();
    answer.body = body.TakeBody();
    return answer;
  }
};

}  // namespace

absl::StatusOr<HttpAnswer> HealthChecker::Get(const HealthEndpoint& endpoint, absl::Duration,
                                              size_t) {
  return absl::UnimplementedError(StrCat("GET ", endpoint.Url(), ": this checker only checks"));
}

std::string HealthEndpoint::Url() const {
  std::string url_host = host;
  if (host.find(':') != std::string::npos && !StartsWith(host, "[")) {
    // An IPv6 literal; a zone ("fe80::1%eth0") needs its '%' escaped inside the brackets
    // (RFC 6874), which libcurl understands.
    url_host = "[";
    for (char c : host) {
      if (c == '%') {
        url_host += "%25";
      } else {
        url_host.push_back(c);
      }
    }
    url_host += "]";
  }
  return StrCat(scheme, "://", url_host, ":", port, StartsWith(path, "/") ? "" : "/", path);
}

std::unique_ptr<HealthChecker> NewCurlHealthChecker() {
  return std::make_unique<CurlHealthChecker>();
}

}  // namespace handoff
