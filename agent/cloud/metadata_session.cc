#include "agent/cloud/metadata_session.h"

#include "common/base/strings.h"

namespace handoff {
namespace {

// IMDSv2 session tokens last at most 6 hours (21600 s), the value AWS's examples use.
constexpr char kTokenTtlHeader[] = "X-aws-ec2-metadata-token-ttl-seconds";
constexpr char kTokenHeader[] = "X-aws-ec2-metadata-token";

}  // namespace

MetadataSession::MetadataSession(std::string endpoint, absl::Duration timeout)
    : endpoint_(std::move(endpoint)), timeout_(timeout), deadline_(absl::Now() + timeout) {
  while (!endpoint_.empty() && endpoint_.back() == '/') endpoint_.pop_back();
}

absl::Status MetadataSession::Open() {
  absl::StatusOr<AwsHttpAnswer> token = Send("PUT", "latest/api/token");
  if (!token.ok()) return token.status();
  if (token->status != 200 || StripWhitespace(token->body).empty()) {
    return absl::UnavailableError(StrCat("the instance metadata (", endpoint_,
                                         ") gave no session token (HTTP ", token->status, ")"));
  }
  token_ = std::string(StripWhitespace(token->body));
  return absl::OkStatus();
}

absl::StatusOr<AwsHttpAnswer> MetadataSession::Get(const std::string& path) {
  return Send("GET", StrCat("latest/", path));
}

absl::StatusOr<AwsHttpAnswer> MetadataSession::Send(const std::string& method,
                                                    const std::string& path) {
  AwsHttpRequest request;
  request.method = method;
  request.url = StrCat(endpoint_, "/", path);
  if (method == "PUT") {
    request.headers.emplace_back(kTokenTtlHeader, "21600");
  } else {
    request.headers.emplace_back(kTokenHeader, token_);
  }
  request.deadline = deadline_;
  request.timeout = timeout_;
  return SendAwsRequest(request);
}

}  // namespace handoff
