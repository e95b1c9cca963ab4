// What the agent reads of its instance from the EC2 instance metadata service: the cluster tag,
// which AWS's downtime path asks for before the cloud-controller-manager starts (every instance
// tagged kubernetes.io/cluster/<cluster id> = owned | shared), and the instance's identity, which
// the preflight compares with the Node (the AWS providers key a Node by its private DNS name).
#ifndef HANDOFF_AGENT_CLOUD_INSTANCE_TAGS_H_
#define HANDOFF_AGENT_CLOUD_INSTANCE_TAGS_H_

#include <string>
#include <string_view>

#include "absl/status/statusor.h"
#include "absl/time/time.h"

namespace handoff {

// The key of an instance's cluster tag without its <cluster id>.
inline constexpr std::string_view kClusterTagPrefix = "kubernetes.io/cluster/";

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
// meta-data/tags/instance) for kubernetes.io/cluster/<cluster_id>, every request within
// options.timeout in all. kConfirmed when the tag is listed with owned or shared;
// FailedPrecondition when it is listed with another value (the move must not go on);
// kNotVisible, with the operator's describe-tags command in the message, when the metadata
// does not answer, gives no token or instance id, does not show the instance's tags (404), or
// shows them without this key. AWS never shows a key with '/' in the metadata (see the .cc), so
// on EC2 today the last case is the usual one, and kConfirmed needs a metadata service that
// lists such keys (the sandbox's). An empty options.endpoint asks nothing: kNotVisible.
// InvalidArgument for an empty or malformed cluster id (CheckClusterId). Blocks the caller up to
// options.timeout; thread-safe.
absl::StatusOr<ClusterTagCheck> CheckClusterTag(const std::string& cluster_id,
                                                const InstanceMetadataOptions& options);

struct InstanceIdentity {
  std::string instance_id;        // meta-data/instance-id
  std::string local_hostname;     // meta-data/local-hostname: the private DNS name
  std::string availability_zone;  // meta-data/placement/availability-zone
};

// Reads the three in one IMDSv2 session, every request within options.timeout in all.
// Unavailable, saying why, when the metadata does not answer, gives no token, or answers one of
// them with anything but 200 and one line. Blocks the caller up to options.timeout; thread-safe.
absl::StatusOr<InstanceIdentity> ReadInstanceIdentity(const InstanceMetadataOptions& options);

// The ECR registry of `account_id` in `region`: <account>.dkr.ecr.<region>.amazonaws.com, with
// .amazonaws.com.cn in the China regions (cn-*). Pure.
std::string EcrRegistryOf(std::string_view account_id, std::string_view region);

// The instance's own ECR registry, from the identity document's accountId and region
// (latest/dynamic/instance-identity/document), within options.timeout. Unavailable, saying why,
// when the metadata does not answer or the document lacks either.
absl::StatusOr<std::string> ReadEcrRegistry(const InstanceMetadataOptions& options);

// `aws ec2 describe-tags --filters Name=resource-id,Values=<instance_id>
// Name=key,Values=kubernetes.io/cluster/<cluster_id>`; "<instance-id>" for an unknown id.
std::string DescribeTagsCommand(std::string_view instance_id, std::string_view cluster_id);

}  // namespace handoff

#endif  // HANDOFF_AGENT_CLOUD_INSTANCE_TAGS_H_
