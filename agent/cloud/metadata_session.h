// One IMDSv2 session with the EC2 instance metadata service: a session token, then GETs with
// it, every request within one deadline. Shared by the readers of the instance's identity and
// cluster tag (instance_tags.h) and of its instance profile's credentials (ec2_tags.h).
#ifndef HANDOFF_AGENT_CLOUD_METADATA_SESSION_H_
#define HANDOFF_AGENT_CLOUD_METADATA_SESSION_H_

#include <string>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/time/time.h"
#include "agent/cloud/aws_http.h"

namespace handoff {

class MetadataSession {
 public:
  // `endpoint` is scheme://host[:port], trailing slashes dropped; the deadline starts now.
  MetadataSession(std::string endpoint, absl::Duration timeout);

  // PUT latest/api/token. Unavailable when the service does not answer or gives no token (the
  // message says which, naming the endpoint).
  absl::Status Open();
  // GET latest/<path> with the session's token. Unavailable when the service does not answer.
  absl::StatusOr<AwsHttpAnswer> Get(const std::string& path);

  const std::string& endpoint() const { return endpoint_; }

 private:
  absl::StatusOr<AwsHttpAnswer> Send(const std::string& method, const std::string& path);

  std::string endpoint_;
  absl::Duration timeout_;
  absl::Time deadline_;
  std::string token_;
};

}  // namespace handoff

#endif  // HANDOFF_AGENT_CLOUD_METADATA_SESSION_H_
