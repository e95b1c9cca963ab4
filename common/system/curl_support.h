// What every libcurl client in handoff needs the same way: the one global initialisation, owning
// handles for easy handles and header lists, the request timeout in libcurl's terms, and a
// response-body sink with a byte limit. The clients themselves (the agent's health checker and
// instance-metadata reader, the coordinator's Kubernetes transport) keep their own options and
// error messages.
#ifndef HANDOFF_COMMON_SYSTEM_CURL_SUPPORT_H_
#define HANDOFF_COMMON_SYSTEM_CURL_SUPPORT_H_

#include <curl/curl.h>

#include <cstddef>
#include <memory>
#include <string>
#include <utility>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/time/time.h"

namespace handoff {

// Runs curl_global_init once per process (it is not thread-safe and must precede every other
// libcurl call); every later call returns the first one's result. Thread-safe.
absl::Status InitCurlOnce();

struct CurlHandleDeleter {
  void operator()(CURL* curl) const { curl_easy_cleanup(curl); }
};
struct CurlListDeleter {
  void operator()(curl_slist* list) const { curl_slist_free_all(list); }
};
using CurlHandle = std::unique_ptr<CURL, CurlHandleDeleter>;
using CurlList = std::unique_ptr<curl_slist, CurlListDeleter>;

// InitCurlOnce, then a new easy handle. Internal when either fails.
absl::StatusOr<CurlHandle> NewCurlHandle();

// Appends `header` ("Name: value", or "Name:" to drop a header libcurl would add) to `list`.
void AppendCurlHeader(CurlList* list, const std::string& header);

// `timeout` in milliseconds for CURLOPT_TIMEOUT_MS, at least 1: 0 would mean no timeout to
// libcurl.
long CurlTimeoutMs(absl::Duration timeout);

// Collects a response body through CURLOPT_WRITEFUNCTION, at most `limit` bytes of it.
// Thread-compatible; one sink per transfer.
class CurlBodySink {
 public:
  enum class Overflow {
    // The transfer fails (CURLE_WRITE_ERROR) when the body would pass the limit: an answer
    // that large is not what the client asked for.
    kAbort,
    // The start of the body is kept and the rest discarded, and the transfer finishes normally:
    // for a client that needs the status code and only an excerpt of the body.
    kKeepStart,
  };

  CurlBodySink(size_t limit, Overflow overflow) : limit_(limit), overflow_(overflow) {}
  CurlBodySink(const CurlBodySink&) = delete;
  CurlBodySink& operator=(const CurlBodySink&) = delete;

  // Sets CURLOPT_WRITEFUNCTION and CURLOPT_WRITEDATA of `handle` to this sink, which must
  // outlive the transfer. The first option's error, if any.
  CURLcode Attach(CURL* handle);

  size_t limit() const { return limit_; }
  const std::string& body() const { return body_; }
  std::string TakeBody() { return std::move(body_); }
  // More than `limit` bytes came (with kAbort, the transfer was aborted for it).
  bool over_limit() const { return over_limit_; }

 private:
  static size_t OnData(char* data, size_t size, size_t count, void* user);

  size_t limit_;
  Overflow overflow_;
  std::string body_;
  bool over_limit_ = false;
};

}  // namespace handoff

#endif  // HANDOFF_COMMON_SYSTEM_CURL_SUPPORT_H_
