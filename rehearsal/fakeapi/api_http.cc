#include "rehearsal/fakeapi/api_http.h"

#include <utility>

#include "common/base/strings.h"
#include "common/kube/resource.h"

namespace handoff::fakeapi {
namespace {

// Go's url.QueryUnescape: '+' is a space, then percent escapes.
std::optional<std::string> QueryUnescape(std::string_view text) {
  std::string plus_decoded(text);
  for (char& c : plus_decoded) {
    if (c == '+') c = ' ';
  }
  return kube::Unescape(plus_decoded);
}

// The path (percent-decoded) and query of a request target: origin form ("/api/v1/nodes?a=b") or
// absolute form ("https://host:6443/api/v1/nodes"). std::nullopt for anything else, or a path
// with a malformed escape, which Go's url.ParseRequestURI refuses.
std::optional<std::pair<std::string, std::map<std::string, std::string>>> SplitTarget(
    std::string_view target) {
  for (std::string_view scheme : {"http://", "https://"}) {
    if (EqualsIgnoreCase(target.substr(0, scheme.size()), scheme)) {
      target.remove_prefix(scheme.size());
      const size_t slash = target.find('/');
      target = slash == std::string_view::npos ? "/" : target.substr(slash);
      break;
    }
  }
  if (target.empty() || target.front() != '/') return std::nullopt;
  const size_t question = target.find('?');
  std::optional<std::string> path = kube::Unescape(target.substr(0, question));
  if (!path) return std::nullopt;
  std::map<std::string, std::string> query;
  if (question != std::string_view::npos) {
    // Go's url.ParseQuery, as req.URL.Query() reads it: pairs with a malformed escape (or a ';')
    // are dropped; the first value of a repeated key wins.
    for (std::string_view pair : StrSplit(target.substr(question + 1), "&", /*skip_empty=*/true)) {
      if (pair.find(';') != std::string_view::npos) continue;
      const size_t equals = pair.find('=');
      std::optional<std::string> key = QueryUnescape(pair.substr(0, equals));
      std::optional<std::string> value =
          QueryUnescape(equals == std::string_view::npos ? "" : pair.substr(equals + 1));
      if (!key || !value) continue;
      query.emplace(*std::move(key), *std::move(value));
    }
  }
  return std::make_pair(*std::move(path), std::move(query));
}

std::optional<UserInfo> Authenticate(const ParsedRequest& request,
                                     const std::optional<UserInfo>& certificate_user,
                                     const std::map<std::string, UserInfo>& tokens) {
  if (certificate_user) return certificate_user;
  const std::string_view authorization = request.Header("authorization");
  if (StartsWith(authorization, "Bearer ")) {
    auto it = tokens.find(std::string(authorization.substr(7)));
    if (it == tokens.end()) return std::nullopt;  // 401
    UserInfo user = it->second;
    user.groups.emplace_back("system:authenticated");
    return user;
  }
  return UserInfo{std::string(kAnonymousUser), {"system:unauthenticated"}};
}

}  // namespace

HttpAnswer ServeRequest(ApiStore& store, const ParsedRequest& request,
                        const std::optional<UserInfo>& certificate_user,
                        const std::map<std::string, UserInfo>& tokens) {
  auto target = SplitTarget(request.target);
  if (!target) {
    return HttpAnswer{SerializeResponse(400, "text/plain; charset=utf-8", {},
                                        "400 Bad Request: invalid request target", true),
                      true};
  }
  ApiRequest api;
  api.method = request.method;
  api.path = std::move(target->first);
  api.query = std::move(target->second);
  api.body = request.body;
  api.body_too_large = request.body_too_large;
  api.user = Authenticate(request, certificate_user, tokens);
  const ApiResponse response = store.Handle(api);

  HttpHeaders headers(response.headers.begin(), response.headers.end());
  // A body left unread cannot be skipped to find the next request.
  const bool close = !request.keep_alive || request.body_too_large;
  return HttpAnswer{SerializeResponse(response.status, "application/json", headers, response.body,
                                      close, /*head_only=*/request.method == "HEAD"),
                    close};
}

std::string HandleRequestForTest(ApiStore& store, std::string_view raw_request,
                                 const std::optional<UserInfo>& certificate_user,
                                 const std::map<std::string, UserInfo>& tokens) {
  HttpRequestReader reader;
  reader.Consume(raw_request);
  switch (reader.status()) {
    case HttpRequestReader::Status::kBad:
      return reader.ErrorResponse();
    case HttpRequestReader::Status::kIncomplete:
      return "";
    case HttpRequestReader::Status::kComplete:
      break;
  }
  return ServeRequest(store, reader.request(), certificate_user, tokens).bytes;
}

}  // namespace handoff::fakeapi
