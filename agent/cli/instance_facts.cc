#include "agent/cli/instance_facts.h"

#include <map>

#include "agent/cloud/aws_cloud_config.h"
#include "agent/cloud/ec2_tags.h"
#include "common/base/strings.h"

namespace handoff {

v1::NodeFacts ReadInstanceFacts(const InstanceMetadataOptions& metadata) {
  v1::NodeFacts facts;
  absl::StatusOr<InstanceIdentity> identity = ReadInstanceIdentity(metadata);
  if (!identity.ok()) {
    facts.set_metadata_error(std::string(identity.status().message()));
  } else {
    facts.set_instance_id(identity->instance_id);
    facts.set_local_hostname(identity->local_hostname);
    facts.set_availability_zone(identity->availability_zone);
  }
  return facts;
}

v1::NodeFacts ReadClusterTagFacts(const v1::NodeFacts& identity, const std::string& path,
                                  const absl::StatusOr<std::string>& cloud_config,
                                  const InstanceMetadataOptions& metadata) {
  v1::NodeFacts facts;
  if (!cloud_config.ok()) {
    facts.set_cluster_tags_error(StrCat("cannot read the managers' cloud config ", path, ": ",
                                        cloud_config.status().message()));
    return facts;
  }
  absl::StatusOr<AwsCloudConfig> config = ParseAwsCloudConfig(*cloud_config, path);
  if (!config.ok()) {
    facts.set_cluster_tags_error(std::string(config.status().message()));
    return facts;
  }
  facts.set_cloud_config_cluster_id(config->cluster_id);
  absl::StatusOr<std::map<std::string, std::string>> tags = ReadClusterTagsFromEc2(
      metadata, identity.instance_id(), Ec2EndpointFor(*config, identity.availability_zone()));
  if (!tags.ok()) {
    facts.set_cluster_tags_error(std::string(tags.status().message()));
    return facts;
  }
  facts.set_cluster_tags_known(true);
  facts.mutable_cluster_tags()->insert(tags->begin(), tags->end());
  return facts;
}

}  // namespace handoff
