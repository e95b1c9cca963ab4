// One HTTP exchange with an AWS endpoint (the instance metadata service, the EC2 API) through
// libcurl, within a deadline, the answer's body bounded. The instance metadata reader
// (instance_tags.h) and the EC2 reader (ec2_tags.h) differ only in what they send.
#ifndef HANDOFF_AGENT_CLOUD_AWS_HTTP_H_
#define HANDOFF_AGENT_CLOUD_AWS_HTTP_H_

#include <string>
#include <utility>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/time/time.h"

namespace handoff {

struct AwsHttpRequest {
  std::string method = "GET";  // GET, PUT or POST
  std::string url;
  std::vector<std::pair<std::string, std::string>> headers;
  std::string body;  // sent with PUT and POST
  absl::Time deadline;
  absl::Duration timeout;  // the whole budget the deadline came from, for the messages
  // The instance metadata answers only the instance itself: a proxy from the environment would
  // ask it on the proxy's behalf. The EC2 API is reached as the AWS SDKs reach it, through
  // https_proxy/no_proxy when set.
  bool use_proxy = false;
  std::string what = "the instance metadata";  // names the service in the messages
  size_t max_answer_bytes = 64 << 10;
};

struct AwsHttpAnswer {
  long status = 0;
  std::string body;
};

// Unavailable when the service does not answer (nothing listens, or no answer before the
// deadline, or an answer over max_answer_bytes): the message names `what` and the URL. Internal
// when libcurl cannot be set up. Thread-safe.
absl::StatusOr<AwsHttpAnswer> SendAwsRequest(const AwsHttpRequest& request);

}  // namespace handoff

#endif  // HANDOFF_AGENT_CLOUD_AWS_HTTP_H_
