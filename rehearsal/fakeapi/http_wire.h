// HTTP/1.1 on the wire for the fake API server, without sockets: an incremental request reader
// that bounds everything it buffers, and the response writer. Pure; fed by the server's
// connections and by HandleRequestForTest (api_http.h), so fuzzing it fuzzes what is served.
//
// Limits follow kube-apiserver's http.Server (Go net/http) where the fake's clients can tell:
//   - request line and headers: at most HttpLimits::max_header_bytes (MaxHeaderBytes, 1 MiB),
//     else 431 Request Header Fields Too Large, then close;
//   - body: Content-Length or chunked; at most HttpLimits::max_body_bytes. A longer body is not
//     kept: the request completes with body_too_large set (the API layer answers 413) and the
//     connection cannot be reused;
//   - malformed requests get Go's plain-text "400 Bad Request[: why]" and the connection closes;
//     an unknown Transfer-Encoding gets 501, an Expect other than 100-continue 417, a major
//     version other than 1 gets 505.
// Not modelled: HTTP/2 (the fake offers no ALPN, so clients speak HTTP/1.1), absolute-form
// targets other than http(s)://authority/path, obsolete header line folding (refused).
#ifndef HANDOFF_REHEARSAL_FAKEAPI_HTTP_WIRE_H_
#define HANDOFF_REHEARSAL_FAKEAPI_HTTP_WIRE_H_

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "rehearsal/fakeapi/api_store.h"

namespace handoff::fakeapi {

struct HttpLimits {
  // Request line plus header lines, line ends included (Go's http.Server MaxHeaderBytes, which
  // kube-apiserver sets to 1 << 20 in k8s.io/apiserver/pkg/server/secure_serving.go).
  size_t max_header_bytes = size_t{1} << 20;
  // Decoded body bytes kept; see kMaxRequestBodyBytes.
  size_t max_body_bytes = kMaxRequestBodyBytes;
};

using HttpHeaders = std::vector<std::pair<std::string, std::string>>;

struct ParsedRequest {
  std::string method;  // as sent: "GET"
  std::string target;  // as sent: "/api/v1/nodes?labelSelector=a%3Db"
  int minor_version = 1;
  HttpHeaders headers;  // names in lower case, values trimmed, in the order sent
  std::string body;     // decoded (chunked framing removed)
  // The body was longer than HttpLimits::max_body_bytes: `body` is empty, and the rest of it was
  // not read, so the connection must close after the answer.
  bool body_too_large = false;
  bool keep_alive = true;  // HTTP/1.1 unless "Connection: close"; HTTP/1.0 only with keep-alive

  // The first value of a header (name in lower case), "" when absent.
  std::string_view Header(std::string_view lower_case_name) const;
};

// Reads one request at a time from a connection's bytes. Thread-compatible.
class HttpRequestReader {
 public:
  enum class Status {
    kIncomplete,  // give it more bytes
    kComplete,    // request() is ready; Reset() before the next one
    kBad,         // answer with ErrorResponse(), then close the connection
  };

  explicit HttpRequestReader(HttpLimits limits = HttpLimits());

  // Consumes bytes of the current request from the front of `input` and returns how many. It
  // stops at the end of the request (and consumes nothing once complete or bad), so the bytes of
  // a pipelined next request stay with the caller. Memory held is bounded by the limits.
  size_t Consume(std::string_view input);

  Status status() const { return status_; }
  // A byte of this request has arrived (the idle timeout no longer applies, the header one does).
  bool started() const { return started_; }
  // The request line and headers are in: the body is being read.
  bool head_complete() const { return state_ >= State::kBody; }
  // The head asked for "Expect: 100-continue" and the body is still to come: the server sends
  // "100 Continue" once.
  bool expects_continue() const { return expects_continue_ && status_ == Status::kIncomplete; }
  const ParsedRequest& request() const { return request_; }
  ParsedRequest& mutable_request() { return request_; }
  // For kBad: the complete response to send before closing.
  std::string ErrorResponse() const;
  // Ready for the next request of the connection.
  void Reset();

 private:
  enum class State { kHead, kBody, kChunkSize, kChunkData, kChunkDataEnd, kTrailer, kDone };

  size_t ConsumeHead(std::string_view input);
  size_t ConsumeBody(std::string_view input);
  // Reads bytes into line_ up to '\n'; true once a whole line is there.
  bool ReadLine(std::string_view input, size_t& used, size_t max_line);
  void ParseHead();
  void ParseHeaderLine(std::string_view line);
  void ParseChunkSize(std::string_view line);
  void Fail(int code, std::string detail);
  void Finish();

  HttpLimits limits_;
  Status status_ = Status::kIncomplete;
  State state_ = State::kHead;
  bool started_ = false;
  bool expects_continue_ = false;
  ParsedRequest request_;
  std::string head_;        // request line and headers so far
  size_t line_start_ = 0;   // where the current head line starts in head_
  bool request_line_seen_ = false;
  std::string line_;        // a chunk-size or trailer line so far
  size_t trailer_bytes_ = 0;
  uint64_t remaining_ = 0;  // body or chunk bytes still to read
  int64_t chunk_excess_ = 0;
  int error_code_ = 0;
  std::string error_detail_;
};

// ASCII letters in lower case; other bytes as they are (header names, schemes).
std::string AsciiLower(std::string_view text);
bool EqualsIgnoreCase(std::string_view a, std::string_view b);

// The interim response to "Expect: 100-continue".
inline constexpr std::string_view kContinueResponse = "HTTP/1.1 100 Continue\r\n\r\n";

// "OK", "Request Entity Too Large", ...; "Status" for a code without a registered phrase.
std::string_view ReasonPhrase(int code);

// One HTTP/1.1 response: status line, Content-Type, Content-Length, `headers`, and "Connection:
// close" when `close`. `head_only` (a HEAD request) leaves the body out but keeps its length.
std::string SerializeResponse(int code, std::string_view content_type, const HttpHeaders& headers,
                              std::string_view body, bool close, bool head_only = false);

}  // namespace handoff::fakeapi

#endif  // HANDOFF_REHEARSAL_FAKEAPI_HTTP_WIRE_H_
