// What the agent reads of the AWS providers' cloud config (the file of the managers'
// --cloud-config, gcfg's INI format, k8s.io/legacy-cloud-providers/aws CloudConfig): the
// cluster's id and where the EC2 API is. The cloud-controller-manager is given the in-tree
// kube-controller-manager's file, so both find the same cluster tag through the same endpoint.
#ifndef HANDOFF_AGENT_CLOUD_AWS_CLOUD_CONFIG_H_
#define HANDOFF_AGENT_CLOUD_AWS_CLOUD_CONFIG_H_

#include <string>
#include <string_view>

#include "absl/status/statusor.h"

namespace handoff {

struct AwsCloudConfig {
  std::string cluster_id;  // [Global] KubernetesClusterID (or the older KubernetesClusterTag)
  // The last [ServiceOverride "<n>"] whose Service is ec2: its URL and SigningRegion. "" when
  // none: the providers then ask https://ec2.<region>.amazonaws.com.
  std::string ec2_url;
  std::string ec2_signing_region;
};

// Parses the file's text: sections `[Name]` or `[Name "sub"]`, `key = value` lines (value
// optionally in double quotes), comments from ';' or '#'; section and key names compare without
// case, as gcfg's do; other sections and keys are skipped. InvalidArgument naming `source` and
// the line for a line that is none of these.
absl::StatusOr<AwsCloudConfig> ParseAwsCloudConfig(std::string_view text, std::string_view source);

}  // namespace handoff

#endif  // HANDOFF_AGENT_CLOUD_AWS_CLOUD_CONFIG_H_
