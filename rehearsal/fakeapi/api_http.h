// From HTTP to ApiStore and back: what the fake API server does with one request once its bytes
// are in, without sockets. The server's connections call ServeRequest; HandleRequestForTest runs
// the same path from raw bytes, for fuzzing and tests.
#ifndef HANDOFF_REHEARSAL_FAKEAPI_API_HTTP_H_
#define HANDOFF_REHEARSAL_FAKEAPI_API_HTTP_H_

#include <map>
#include <optional>
#include <string>
#include <string_view>

#include "rehearsal/fakeapi/api_store.h"
#include "rehearsal/fakeapi/http_wire.h"

namespace handoff::fakeapi {

struct HttpAnswer {
  std::string bytes;   // the whole response
  bool close = false;  // close the connection once it is sent
};

// Serves one complete request (HttpRequestReader::kComplete). The user is `certificate_user` (the
// verified client certificate's, groups included) when set, else the bearer token's in `tokens`
// (an unknown token fails authentication: 401), else system:anonymous. The target's path and
// query are percent-decoded (a malformed escape in the path is Go's plain 400); the response is
// the store's, as application/json.
HttpAnswer ServeRequest(ApiStore& store, const ParsedRequest& request,
                        const std::optional<UserInfo>& certificate_user,
                        const std::map<std::string, UserInfo>& tokens);

// The bytes the fake API server sends back for `raw_request`, one HTTP/1.1 request (request line,
// headers, body) as a client would write it on a connection whose client certificate names
// `certificate_user` (std::nullopt: none). Bytes after the first request are ignored. A request
// the reader refuses gets its error response; an incomplete one gets "" (the server would wait
// for the rest, then close the connection at its read timeout). The limits are the server's
// (HttpLimits, kMaxRequestBodyBytes, kMaxJsonDepth); "100 Continue" is not included.
std::string HandleRequestForTest(ApiStore& store, std::string_view raw_request,
                                 const std::optional<UserInfo>& certificate_user = std::nullopt,
                                 const std::map<std::string, UserInfo>& tokens = {});

}  // namespace handoff::fakeapi

#endif  // HANDOFF_REHEARSAL_FAKEAPI_API_HTTP_H_
