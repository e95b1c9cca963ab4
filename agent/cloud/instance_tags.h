// The instance's cluster tag, read from the EC2 instance metadata service, which AWS's downtime
// path asks for before the cloud-controller-manager starts: every instance tagged
// kubernetes.io/cluster/<cluster id> = owned | shared.
#ifndef HANDOFF_AGENT_CLOUD_INSTANCE_TAGS_H_
#define HANDOFF_AGENT_CLOUD_INSTANCE_TAGS_H_

#include <string>

#include "absl/status/statusor.h"
#include "absl/time/time.h"

namespace handoff {

struct ClusterTagCheck {
  enum class Outcome {
    kConfirmed,   // the tag is there with owned or shared
    kNotVisible,  // the metadata cannot show it: the operator must check it (message says how)
  };
  Outcome outcome = Outcome::kNotVisible;
  std::string message;  // one line for the operator
};

struct InstanceMetadataOptions {
  std::string endpoint = "http://169.254.169.254";
  absl::Duration timeout = absl::Seconds(2);
};

// Asks the instance metadata (IMDSv2: a session token, then meta-data/instance-id and
// meta-data/tags/instance/) for kubernetes.io/cluster/<cluster_id>. FailedPrecondition when the
// tag is visible and wrong or missing where it would be visible (the move must not go on);
// kNotVisible when the instance does not expose its tags there, or the metadata does not
// answer; InvalidArgument for an empty cluster id.
absl::StatusOr<ClusterTagCheck> CheckClusterTag(const std::string& cluster_id,
                                                const InstanceMetadataOptions& options);

}  // namespace handoff

#endif  // HANDOFF_AGENT_CLOUD_INSTANCE_TAGS_H_
