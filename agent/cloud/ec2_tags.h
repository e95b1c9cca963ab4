// The instance's cluster tags as EC2 shows them, asked the way the cloud-controller-manager asks
// at start: the instance profile's credentials from the instance metadata, then DescribeInstances
// for the instance itself, signed (aws_signature.h), at the EC2 endpoint of the managers' cloud
// config. The instance metadata never shows a key with '/' (instance_tags.cc), so this is the
// only way a node can see its kubernetes.io/cluster/<id> tag. The permission is the one the
// cloud-controller-manager's control-plane policy grants (ec2:DescribeInstances).
#ifndef HANDOFF_AGENT_CLOUD_EC2_TAGS_H_
#define HANDOFF_AGENT_CLOUD_EC2_TAGS_H_

#include <map>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/time/time.h"
#include "agent/cloud/aws_cloud_config.h"
#include "agent/cloud/aws_http.h"
#include "agent/cloud/aws_signature.h"
#include "agent/cloud/instance_tags.h"

namespace handoff {

struct Ec2Endpoint {
  std::string url;     // "https://ec2.us-east-1.amazonaws.com"
  std::string region;  // the signing region
};

// The cloud config's ec2 ServiceOverride (its SigningRegion, else the instance's region), else
// https://ec2.<region>.amazonaws.com, where the region is the zone without its last letter (as
// the AWS providers derive it). Pure.
Ec2Endpoint Ec2EndpointFor(const AwsCloudConfig& config, std::string_view availability_zone);

// One call of EC2's query API: Action and Version first, then `parameters`, form-encoded, signed
// with `credentials` for ec2.region, within `timeout`. The answer as it came (EC2 answers an
// error with its XML and a 4xx or 5xx status), or Unavailable when EC2 does not answer.
absl::StatusOr<AwsHttpAnswer> CallEc2(
    const Ec2Endpoint& ec2, const AwsCredentials& credentials, const std::string& action,
    const std::vector<std::pair<std::string, std::string>>& parameters, absl::Duration timeout);

// Every kubernetes.io/cluster/<id> tag of `instance_id`: <id> → its value. Asks the metadata
// for a session, the instance profile's role (meta-data/iam/security-credentials/) and its
// credentials, then EC2; everything within metadata.timeout for the metadata and as long again
// for EC2. FailedPrecondition when the instance has no instance profile; PermissionDenied with
// EC2's error code and message when EC2 refuses (UnauthorizedOperation, AuthFailure, ...);
// Unavailable when either service does not answer or answers what is not its API; NotFound when
// EC2 does not know the instance. Blocks the caller; thread-safe.
absl::StatusOr<std::map<std::string, std::string>> ReadClusterTagsFromEc2(
    const InstanceMetadataOptions& metadata, const std::string& instance_id,
    const Ec2Endpoint& ec2);

// Parses a DescribeInstances answer (EC2's XML): the cluster tags of `instance_id`. NotFound
// when the answer has no such instance; PermissionDenied or Unavailable for an <Errors> answer
// (as above); Unavailable for what is not EC2's XML. Pure.
absl::StatusOr<std::map<std::string, std::string>> ParseDescribeInstancesTags(
    std::string_view xml, const std::string& instance_id);

}  // namespace handoff

#endif  // HANDOFF_AGENT_CLOUD_EC2_TAGS_H_
