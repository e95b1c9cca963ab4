// The fake Kubernetes API server from raw bytes on a connection: the HTTP/1.1 reader
// (rehearsal/fakeapi/http_wire) and ServeRequest, as the server runs them, on a seeded store.
// Properties: a request reads the same whether its bytes come at once or in pieces; the reader
// never takes more bytes than given nor keeps a body past its limit; every answer is one
// well-formed HTTP/1.1 response whose Content-Length is its body's, and a JSON error is a
// metav1.Status with the response's code.
//
// Input: the bytes a client sends on one connection; requests are served in order (pipelined)
// until one is bad, incomplete or asks to close.
#include <cstddef>
#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <string_view>

#include "common/system/clock.h"
#include "rehearsal/fakeapi/api_http.h"
#include "rehearsal/fakeapi/api_store.h"
#include "rehearsal/fakeapi/http_wire.h"
#include "tests/fuzz/fuzz_check.h"
#include "tests/support/fake_clock.h"

namespace handoff::fakeapi {
namespace {

constexpr int kMaxRequests = 8;

constexpr char kSeed[] = R"(apiVersion: coordination.k8s.io/v1
kind: Lease
metadata: {name: kube-controller-manager, namespace: kube-system}
spec: {holderIdentity: cp-1_0, leaseDurationSeconds: 15}
---
apiVersion: v1
kind: Node
metadata: {name: cp-1}
)";

const std::map<std::string, UserInfo>& Tokens() {
  static const auto* const tokens = new std::map<std::string, UserInfo>{
      {"admin-token", UserInfo{"kubernetes-admin", {"system:masters"}}}};
  return *tokens;
}

// Feeds `input` to `reader` in pieces of `piece` bytes; returns the bytes it consumed.
size_t FeedInPieces(HttpRequestReader& reader, std::string_view input, size_t piece) {
  size_t used = 0;
  while (used < input.size() && reader.status() == HttpRequestReader::Status::kIncomplete) {
    const std::string_view chunk = input.substr(used, piece);
    const size_t taken = reader.Consume(chunk);
    FUZZ_CHECK(taken <= chunk.size(), "Consume took more bytes than it was given");
    used += taken;
    if (taken < chunk.size()) break;  // the request ended inside this piece
  }
  return used;
}

void CheckSameRequest(const HttpRequestReader& a, const HttpRequestReader& b) {
  FUZZ_CHECK(a.status() == b.status(), "the status depends on how the bytes arrived");
  if (a.status() != HttpRequestReader::Status::kComplete) return;
  const ParsedRequest& x = a.request();
  const ParsedRequest& y = b.request();
  FUZZ_CHECK(x.method == y.method && x.target == y.target && x.minor_version == y.minor_version &&
                 x.headers == y.headers && x.body == y.body &&
                 x.body_too_large == y.body_too_large && x.keep_alive == y.keep_alive,
             "the request read depends on how the bytes arrived: " + x.method + " " + x.target);
}

// Returns the response's status code after checking its framing. The answer to HEAD may keep the
// Content-Length of the body it leaves out.
int CheckResponse(std::string_view response, bool head_only = false) {
  const std::string shown(response.substr(0, 300));
  FUZZ_CHECK(response.substr(0, 9) == "HTTP/1.1 " && response.size() >= 12, shown);
  const int code = std::stoi(std::string(response.substr(9, 3)));
  FUZZ_CHECK(code >= 100 && code <= 599, shown);
  const size_t head_end = response.find("\r\n\r\n");
  FUZZ_CHECK(head_end != std::string_view::npos, "no end of headers: " + shown);
  const std::string head = AsciiLower(response.substr(0, head_end + 2));
  const std::string_view body = response.substr(head_end + 4);
  const size_t length_at = head.find("\r\ncontent-length: ");
  FUZZ_CHECK(length_at != std::string::npos, "no Content-Length: " + shown);
  const size_t value_at = length_at + 18;
  const std::string length = head.substr(value_at, head.find("\r\n", value_at) - value_at);
  FUZZ_CHECK((head_only && body.empty()) || length == std::to_string(body.size()),
             "Content-Length " + length + " for a body of " + std::to_string(body.size()) + ": " +
                 shown);
  const bool json = head.find("\r\ncontent-type: application/json") != std::string::npos;
  if (code >= 400 && !body.empty() && json) {
    const Json status = Json::parse(body, nullptr, /*allow_exceptions=*/false);
    FUZZ_CHECK(!status.is_discarded() && status.is_object() &&
                   status.value("kind", "") == "Status" && status.value("code", 0) == code,
               "a JSON error that is not a Status with its code: " + shown);
  }
  return code;
}

void FuzzOne(std::string_view input) {
  FakeClock clock;
  ApiStore store(clock);
  FUZZ_CHECK(store.Seed(kSeed, "seed.yaml").ok(), "the seed does not load");

  // Small limits too, so that the limit paths are reached with small inputs.
  HttpLimits small;
  small.max_header_bytes = 512;
  small.max_body_bytes = 256;
  for (const HttpLimits& limits : {HttpLimits(), small}) {
    std::string_view rest = input;
    for (int served = 0; served < kMaxRequests && !rest.empty(); ++served) {
      HttpRequestReader whole(limits);
      const size_t used = whole.Consume(rest);
      FUZZ_CHECK(used <= rest.size(), "Consume took more bytes than it was given");
      HttpRequestReader pieces(limits);
      const size_t piece = 1 + (rest.size() + static_cast<size_t>(served)) % 13;
      const size_t used_in_pieces = FeedInPieces(pieces, rest, piece);
      CheckSameRequest(whole, pieces);
      // A bad request closes the connection, so where the reader stopped then does not matter.
      FUZZ_CHECK(whole.status() == HttpRequestReader::Status::kBad || used_in_pieces == used,
                 "the request's length depends on how the bytes arrived");
      if (whole.status() == HttpRequestReader::Status::kIncomplete) break;
      if (whole.status() == HttpRequestReader::Status::kBad) {
        CheckResponse(whole.ErrorResponse());
        break;
      }
      const ParsedRequest& request = whole.request();
      FUZZ_CHECK(request.body.size() <= limits.max_body_bytes, "a body past the limit was kept");
      FUZZ_CHECK(!request.body_too_large || request.body.empty(), "a too-large body was kept");
      const HttpAnswer answer = ServeRequest(store, request, std::nullopt, Tokens());
      CheckResponse(answer.bytes, request.method == "HEAD");
      clock.Advance(absl::Seconds(1));
      if (answer.close || !request.keep_alive || request.body_too_large) break;
      rest.remove_prefix(used);
    }
  }
  // The entry point tests use gives the first answer the same way.
  const std::string first = HandleRequestForTest(store, input, std::nullopt, Tokens());
  if (!first.empty()) CheckResponse(first, input.substr(0, 5) == "HEAD ");
}

}  // namespace
}  // namespace handoff::fakeapi

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  handoff::fakeapi::FuzzOne(std::string_view(reinterpret_cast<const char*>(data), size));
  return 0;
}
