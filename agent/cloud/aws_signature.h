// AWS Signature Version 4 for the EC2 query API, as the AWS SDKs sign a request
// (https://docs.aws.amazon.com/IAM/latest/UserGuide/create-signed-request.html): the agent asks
// EC2 about its own instance with the instance profile's credentials, as the
// cloud-controller-manager does at start. Pure: the time is the caller's.
#ifndef HANDOFF_AGENT_CLOUD_AWS_SIGNATURE_H_
#define HANDOFF_AGENT_CLOUD_AWS_SIGNATURE_H_

#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "absl/time/time.h"

namespace handoff {

// Temporary credentials of an instance profile (meta-data/iam/security-credentials/<role>), or
// a user's keys (session_token "").
struct AwsCredentials {
  std::string access_key_id;
  std::string secret_access_key;
  std::string session_token;
};

// A POST of a form body to `host` (with ":port" when not the scheme's default, as the Host
// header carries it) at path "/".
struct SignedPost {
  std::string host;
  std::string body;  // application/x-www-form-urlencoded
};

// The headers to send with `request` (names in lower case), the authorization header last:
// content-type, host, x-amz-date (`now` in UTC), x-amz-security-token when the credentials carry
// one, each signed, and the signature for `region` and `service` ("ec2").
std::vector<std::pair<std::string, std::string>> SignPost(const SignedPost& request,
                                                          const AwsCredentials& credentials,
                                                          const std::string& region,
                                                          const std::string& service,
                                                          absl::Time now);

// A form's value as the query API wants it: RFC 3986 unreserved characters kept, every other
// byte as %XX (upper-case hex), a space as %20.
std::string FormEncode(std::string_view value);

}  // namespace handoff

#endif  // HANDOFF_AGENT_CLOUD_AWS_SIGNATURE_H_
