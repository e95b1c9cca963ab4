#include <curl/curl.h>

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <cstring>
#include <mutex>
#include <string>

#include "common/base/strings.h"
#include "common/system/curl_support.h"
#include "common/kube/http_transport.h"

namespace handoff::kube {
namespace {

// A response bigger than this is refused rather than held in memory: no object or list handoff
// reads comes close (a 5000-node list is a few tens of MiB).
constexpr size_t kMaxResponseBytes = 256u << 20;

// The response's headers by lower-case name.
using Headers = std::map<std::string, std::string>;

size_t OnHeader(char* data, size_t size, size_t count, void* user) {
  auto* headers = static_cast<Headers*>(user);
  const size_t bytes = size * count;
  std::string_view line(data, bytes);
  const size_t colon = line.find(':');
  if (colon != std::string_view::npos) {
    std::string name(line.substr(0, colon));
    std::transform(name.begin(), name.end(), name.begin(),
                   [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
    (*headers)[name] = std::string(StripWhitespace(line.substr(colon + 1)));
  } else if (StartsWith(line, "HTTP/")) {
    headers->clear();  // a new response (after 100 Continue): forget the last one
  }
  return bytes;
}

curl_blob Blob(const std::string& data) {
  curl_blob blob;
  blob.data = const_cast<char*>(data.data());
  blob.len = data.size();
  blob.flags = CURL_BLOB_COPY;
  return blob;
}

// Whether a failed TLS handshake was the peer hanging up (EOF or a reset, no TLS alert) rather
// than a refusal of the certificates.
bool HungUpInHandshake(const std::string& detail, long os_errno) {
  return os_errno == ECONNRESET || os_errno == EPIPE ||
         detail.find("SSL_ERROR_SYSCALL") != std::string::npos ||
         detail.find("unexpected eof") != std::string::npos;
}

class CurlTransport : public HttpTransport {
 public:
  explicit CurlTransport(ClusterCredentials credentials, CurlHandle curl)
      : credentials_(std::move(credentials)), curl_(std::move(curl)) {}

  absl::StatusOr<HttpResponse> Send(const HttpRequest& request) override {
    // One handle for all requests keeps the TLS connection alive between them (curl_easy_reset
    // keeps the connection cache); the lock makes concurrent use safe, if serial.
    std::lock_guard<std::mutex> lock(mutex_);
    CURL* handle = curl_.get();
    curl_easy_reset(handle);
    const std::string url = credentials_.server + request.path;
    const long timeout_ms = CurlTimeoutMs(request.timeout);

    CurlList headers;
    AppendCurlHeader(&headers, "Accept: application/json");
    if (!request.body.empty()) AppendCurlHeader(&headers, "Content-Type: application/json");
    if (!credentials_.bearer_token.empty()) {
      // The kubeconfig parser refuses such a token; credentials made any other way are checked
      // here, so that no request ever carries a header the token injected.
      if (absl::Status usable = CheckHeaderValue(credentials_.bearer_token); !usable.ok()) {
        return absl::InvalidArgumentError(StrCat("the bearer token ", usable.message()));
      }
      AppendCurlHeader(&headers, StrCat("Authorization: Bearer ", credentials_.bearer_token));
    }
    // libcurl adds "Expect: 100-continue" to large bodies, costing a round trip for nothing.
    AppendCurlHeader(&headers, "Expect:");

    char error_buffer[CURL_ERROR_SIZE] = {};
    CurlBodySink body(kMaxResponseBytes, CurlBodySink::Overflow::kAbort);
    Headers response_headers;
    CURLcode code = CURLE_OK;
    auto set = [&code](CURLcode result) {
      if (code == CURLE_OK) code = result;
    };
    set(curl_easy_setopt(handle, CURLOPT_URL, url.c_str()));
    set(curl_easy_setopt(handle, CURLOPT_ERRORBUFFER, error_buffer));
    set(body.Attach(handle));
    set(curl_easy_setopt(handle, CURLOPT_HEADERFUNCTION, OnHeader));
    set(curl_easy_setopt(handle, CURLOPT_HEADERDATA, &response_headers));
    set(curl_easy_setopt(handle, CURLOPT_TIMEOUT_MS, timeout_ms));
    set(curl_easy_setopt(handle, CURLOPT_CONNECTTIMEOUT_MS, std::min(timeout_ms, 10'000L)));
    // The default resolver timeout uses SIGALRM, unsafe in a multi-threaded process.
    set(curl_easy_setopt(handle, CURLOPT_NOSIGNAL, 1L));
    // The API server is reached directly: an https_proxy inherited from the environment (common
    // on nodes that pull images through one) must not see the credentials.
    set(curl_easy_setopt(handle, CURLOPT_NOPROXY, "*"));
    set(curl_easy_setopt(handle, CURLOPT_FOLLOWLOCATION, 0L));
    set(curl_easy_setopt(handle, CURLOPT_PROTOCOLS_STR, "http,https"));
    set(curl_easy_setopt(handle, CURLOPT_USERAGENT, "handoff"));
    set(curl_easy_setopt(handle, CURLOPT_HTTPHEADER, headers.get()));
    if (request.method == "GET") {
      set(curl_easy_setopt(handle, CURLOPT_HTTPGET, 1L));
    } else {
      set(curl_easy_setopt(handle, CURLOPT_CUSTOMREQUEST, request.method.c_str()));
      if (request.method == "POST" || request.method == "PUT" || !request.body.empty()) {
        set(curl_easy_setopt(handle, CURLOPT_POSTFIELDSIZE_LARGE,
                             static_cast<curl_off_t>(request.body.size())));
        set(curl_easy_setopt(handle, CURLOPT_POSTFIELDS, request.body.c_str()));
      }
    }
    if (credentials_.insecure_skip_tls_verify) {
      // Only when the kubeconfig says so; the caller has already printed the warning.
      set(curl_easy_setopt(handle, CURLOPT_SSL_VERIFYPEER, 0L));
      set(curl_easy_setopt(handle, CURLOPT_SSL_VERIFYHOST, 0L));
    } else {
      set(curl_easy_setopt(handle, CURLOPT_SSL_VERIFYPEER, 1L));
      set(curl_easy_setopt(handle, CURLOPT_SSL_VERIFYHOST, 2L));
      if (!credentials_.ca_pem.empty()) {
        // Trust the kubeconfig's CA and nothing else, as kubectl does: without clearing them,
        // libcurl would also trust every CA in the system bundle and directory.
        curl_blob ca = Blob(credentials_.ca_pem);
        set(curl_easy_setopt(handle, CURLOPT_CAINFO, nullptr));
        set(curl_easy_setopt(handle, CURLOPT_CAPATH, nullptr));
        set(curl_easy_setopt(handle, CURLOPT_CAINFO_BLOB, &ca));
      }
    }
    if (!credentials_.client_cert_pem.empty()) {
      curl_blob cert = Blob(credentials_.client_cert_pem);
      curl_blob key = Blob(credentials_.client_key_pem);
      set(curl_easy_setopt(handle, CURLOPT_SSLCERTTYPE, "PEM"));
      set(curl_easy_setopt(handle, CURLOPT_SSLCERT_BLOB, &cert));
      set(curl_easy_setopt(handle, CURLOPT_SSLKEYTYPE, "PEM"));
      set(curl_easy_setopt(handle, CURLOPT_SSLKEY_BLOB, &key));
    }
    if (code != CURLE_OK) {
      return absl::InternalError(StrCat(request.method, " ", url,
                                        ": cannot configure libcurl: ", curl_easy_strerror(code)));
    }

    code = curl_easy_perform(handle);
    if (code != CURLE_OK) {
      absl::Status error = TransferError(request, url, code, error_buffer, body.over_limit());
      // libcurl keeps a connection whose transfer failed (timed out above all) in the handle's
      // cache and sends the next request on it. Behind a TCP load balancer that connection stays
      // pinned to an API server that stopped answering (a node's kube-apiserver in its shutdown
      // grace), so every retry would wait out its timeout there: the handle goes, and every
      // connection with it.
      if (absl::StatusOr<CurlHandle> fresh = NewCurlHandle(); fresh.ok()) {
        curl_ = *std::move(fresh);
      }
      return error;
    }
    long status = 0;
    curl_easy_getinfo(handle, CURLINFO_RESPONSE_CODE, &status);
    HttpResponse response;
    response.status = static_cast<int>(status);
    response.body = body.TakeBody();
    response.headers = std::move(response_headers);
    return response;
  }

 private:
  absl::Status TransferError(const HttpRequest& request, const std::string& url, CURLcode code,
                             const char* error_buffer, bool too_big) {
    std::string detail = error_buffer[0] != '\0' ? error_buffer : curl_easy_strerror(code);
    long os_errno = 0;
    if (curl_easy_getinfo(curl_.get(), CURLINFO_OS_ERRNO, &os_errno) == CURLE_OK && os_errno != 0) {
      StrAppend(&detail, " (", std::strerror(static_cast<int>(os_errno)), ")");
    }
    const std::string what = StrCat(request.method, " ", url, ": ");
    switch (code) {
      case CURLE_COULDNT_RESOLVE_HOST:
      case CURLE_COULDNT_CONNECT:
        return absl::UnavailableError(
            StrCat(what, detail, "; check that the API server is up and that ",
                   credentials_.kubeconfig, " names it (server: ", credentials_.server, ")"));
      case CURLE_OPERATION_TIMEDOUT:
        return absl::DeadlineExceededError(
            StrCat(what, "no answer within ", absl::FormatDuration(request.timeout), ": ", detail));
      case CURLE_PEER_FAILED_VERIFICATION:
        return absl::FailedPreconditionError(StrCat(
            what, "the API server's certificate is not trusted: ", detail, "; check that ",
            credentials_.kubeconfig, " (cluster \"", credentials_.cluster_name,
            "\") has the cluster's CA in certificate-authority(-data) and that the server URL is "
            "a name or address the certificate lists"));
      case CURLE_SSL_CONNECT_ERROR:
        if (HungUpInHandshake(detail, os_errno)) {
          // No TLS alert: the peer closed the connection before the handshake was done, so no
          // request went out. A TCP load balancer does this while the kube-apiserver behind it
          // restarts (its health check takes it out a second or two later): retry, as client-go
          // does, rather than blame the credentials.
          return absl::UnavailableError(
              StrCat(what, "the server closed the connection during the TLS handshake: ", detail,
                     "; nothing was sent. Check that the API server (", credentials_.server,
                     ") and any load balancer in front of it are up"));
        }
        [[fallthrough]];
      case CURLE_SSL_CERTPROBLEM:
      case CURLE_SSL_CIPHER:
      case CURLE_SSL_CACERT_BADFILE:
      case CURLE_SSL_ENGINE_NOTFOUND:
      case CURLE_SSL_ENGINE_SETFAILED:
      case CURLE_USE_SSL_FAILED:
      case CURLE_SSL_ISSUER_ERROR:
      case CURLE_SSL_CLIENTCERT:
        return absl::FailedPreconditionError(StrCat(what, "TLS handshake failed: ", detail,
                                                    "; check the client certificate and key "
                                                    "of user \"",
                                                    credentials_.user_name, "\" in ",
                                                    credentials_.kubeconfig));
      case CURLE_WRITE_ERROR:
        if (too_big) {
          return absl::ResourceExhaustedError(
              StrCat(what, "the response is larger than ", kMaxResponseBytes >> 20, " MiB"));
        }
        return absl::InternalError(StrCat(what, detail));
      default:
        return absl::InternalError(StrCat(what, detail));
    }
  }

  ClusterCredentials credentials_;
  CurlHandle curl_;
  std::mutex mutex_;
};

}  // namespace

absl::StatusOr<std::unique_ptr<HttpTransport>> NewCurlTransport(
    const ClusterCredentials& credentials) {
  absl::StatusOr<CurlHandle> curl = NewCurlHandle();
  if (!curl.ok()) return curl.status();
  return std::make_unique<CurlTransport>(credentials, *std::move(curl));
}

}  // namespace handoff::kube
