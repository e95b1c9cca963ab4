#include "agent/cloud/instance_tags.h"

#include <algorithm>
#include <vector>

#include "agent/cloud/metadata_session.h"
#include "agent/engine/settings.h"
#include "common/base/strings.h"
#include "nlohmann/json.hpp"

// Why the tag is usually not visible in the instance metadata: AWS's EC2 user guide, "View tags
// for your EC2 instances using instance metadata"
// (https://docs.aws.amazon.com/AWSEC2/latest/UserGuide/work-with-tags-in-IMDS.html), says that
// when an instance allows tags in its metadata, its tag keys may hold only letters, digits and
// + - = . , _ : @, never a space or '/'; an instance that breaks this fails to launch, and
// allowing it on a running one is an error. A key such as kubernetes.io/cluster/<id> therefore
// never appears under meta-data/tags/instance, and an instance that lists its tags there most
// likely does not carry it at all. Only the EC2 API (DescribeTags) can show it, which needs
// credentials the agent does not have, so the check goes to the operator with the command.
// The key is still looked for in the listing, in case AWS lifts the restriction.

namespace handoff {
namespace {

ClusterTagCheck NotVisible(std::string why, std::string_view instance_id,
                           std::string_view cluster_id) {
  ClusterTagCheck check;
  check.outcome = ClusterTagCheck::Outcome::kNotVisible;
  check.message = StrCat(why, "; check the tag yourself: `",
                         DescribeTagsCommand(instance_id, cluster_id),
                         "` must show the value owned or shared");
  return check;
}

std::vector<std::string_view> Lines(std::string_view text) {
  std::vector<std::string_view> lines;
  for (std::string_view line : StrSplit(text, "\n", true)) {
    line = StripWhitespace(line);
    if (!line.empty()) lines.push_back(line);
  }
  return lines;
}

}  // namespace

std::string DescribeTagsCommand(std::string_view instance_id, std::string_view cluster_id) {
  return StrCat("aws ec2 describe-tags --filters Name=resource-id,Values=",
                instance_id.empty() ? std::string_view("<instance-id>") : instance_id,
                " Name=key,Values=", kClusterTagPrefix, cluster_id);
}

absl::StatusOr<ClusterTagCheck> CheckClusterTag(const std::string& cluster_id,
                                                const InstanceMetadataOptions& options) {
  if (cluster_id.empty()) {
    return absl::InvalidArgumentError(
        "no cluster id: set clusterId in the settings to the <id> of the instances' "
        "kubernetes.io/cluster/<id> tag");
  }
  if (absl::Status valid = CheckClusterId(cluster_id); !valid.ok()) {
    return absl::InvalidArgumentError(StrCat("clusterId: ", valid.message()));
  }
  const std::string key = StrCat(kClusterTagPrefix, cluster_id);
  if (options.endpoint.empty()) {
    return NotVisible("instanceMetadata.endpoint is \"\", so handoff does not ask the instance "
                      "metadata for the tag " + key,
                      "", cluster_id);
  }
  MetadataSession session(options.endpoint, options.timeout);
  auto unanswered = [&](const absl::Status& status) -> absl::StatusOr<ClusterTagCheck> {
    if (absl::IsUnavailable(status)) {
      return NotVisible(StrCat(status.message(), ", so handoff cannot read the tag ", key), "",
                        cluster_id);
    }
    return status;
  };

  if (absl::Status opened = session.Open(); !opened.ok()) return unanswered(opened);
  absl::StatusOr<AwsHttpAnswer> id = session.Get("meta-data/instance-id");
  if (!id.ok()) return unanswered(id.status());
  const std::string instance_id(StripWhitespace(id->body));
  if (id->status != 200 || instance_id.empty()) {
    return NotVisible(StrCat("the instance metadata (", session.endpoint(),
                             ") did not give the instance id (HTTP ", id->status,
                             "), so handoff cannot read the tag ", key),
                      "", cluster_id);
  }

  // AWS's own example lists the keys at meta-data/tags/instance (no final slash).
  absl::StatusOr<AwsHttpAnswer> listing = session.Get("meta-data/tags/instance");
  if (!listing.ok()) return unanswered(listing.status());
  if (listing->status == 404) {
    return NotVisible(StrCat("instance ", instance_id,
                             " does not show its tags in the instance metadata (tags/instance: "
                             "HTTP 404; they are off unless the instance allows them)"),
                      instance_id, cluster_id);
  }
  if (listing->status != 200) {
    return NotVisible(StrCat("the instance metadata (", session.endpoint(),
                             ") did not list instance ", instance_id, "'s tags (HTTP ",
                             listing->status, ")"),
                      instance_id, cluster_id);
  }
  const std::vector<std::string_view> keys = Lines(listing->body);
  if (std::find(keys.begin(), keys.end(), key) == keys.end()) {
    return NotVisible(
        StrCat("instance ", instance_id, " shows its tags in the instance metadata, but AWS "
               "never shows a key with '/' there (an instance that allows tags in its metadata may "
               "have no such key, see https://docs.aws.amazon.com/AWSEC2/latest/UserGuide/"
               "work-with-tags-in-IMDS.html), so ", key, " cannot be seen and is probably missing"),
        instance_id, cluster_id);
  }
  absl::StatusOr<AwsHttpAnswer> value = session.Get(StrCat("meta-data/tags/instance/", key));
  if (!value.ok()) return unanswered(value.status());
  if (value->status != 200) {
    return NotVisible(StrCat("the instance metadata lists ", key, " for instance ", instance_id,
                             " but did not give its value (HTTP ", value->status, ")"),
                      instance_id, cluster_id);
  }
  const std::string tag_value(StripWhitespace(value->body));
  if (tag_value != "owned" && tag_value != "shared") {
    return absl::FailedPreconditionError(StrCat(
        "instance ", instance_id, " has the tag ", key, "=", tag_value,
        "; the cloud-controller-manager takes only instances tagged owned or shared: fix the "
        "tag (aws ec2 create-tags --resources ", instance_id, " --tags Key=", key,
        ",Value=owned) before the node moves to external"));
  }
  ClusterTagCheck check;
  check.outcome = ClusterTagCheck::Outcome::kConfirmed;
  check.message = StrCat("instance ", instance_id, " carries ", key, "=", tag_value);
  return check;
}

absl::StatusOr<InstanceIdentity> ReadInstanceIdentity(const InstanceMetadataOptions& options) {
  if (options.endpoint.empty()) {
    return absl::UnavailableError(
        "instanceMetadata.endpoint is \"\", so handoff does not ask the instance metadata");
  }
  MetadataSession session(options.endpoint, options.timeout);
  if (absl::Status opened = session.Open(); !opened.ok()) return opened;
  InstanceIdentity identity;
  for (auto [path, field] :
       {std::pair{"instance-id", &identity.instance_id},
        std::pair{"local-hostname", &identity.local_hostname},
        std::pair{"placement/availability-zone", &identity.availability_zone}}) {
    absl::StatusOr<AwsHttpAnswer> answer = session.Get(StrCat("meta-data/", path));
    if (!answer.ok()) return answer.status();
    const std::string value(StripWhitespace(answer->body));
    if (answer->status != 200 || value.empty() || value.find('\n') != std::string::npos) {
      return absl::UnavailableError(StrCat("the instance metadata (", session.endpoint(),
                                           ") did not give meta-data/", path, " (HTTP ",
                                           answer->status, ")"));
    }
    *field = value;
  }
  return identity;
}

std::string EcrRegistryOf(std::string_view account_id, std::string_view region) {
  return StrCat(account_id, ".dkr.ecr.", region,
                StartsWith(region, "cn-") ? ".amazonaws.com.cn" : ".amazonaws.com");
}

absl::StatusOr<std::string> ReadEcrRegistry(const InstanceMetadataOptions& options) {
  if (options.endpoint.empty()) {
    return absl::UnavailableError(
        "instanceMetadata.endpoint is \"\", so handoff does not ask the instance metadata");
  }
  MetadataSession session(options.endpoint, options.timeout);
  if (absl::Status opened = session.Open(); !opened.ok()) return opened;
  constexpr char kDocument[] = "dynamic/instance-identity/document";
  absl::StatusOr<AwsHttpAnswer> answer = session.Get(kDocument);
  if (!answer.ok()) return answer.status();
  const nlohmann::json document =
      nlohmann::json::parse(answer->body, nullptr, /*allow_exceptions=*/false);
  auto text = [&](const char* key) -> std::string {
    if (!document.is_object() || !document.contains(key) || !document[key].is_string()) return "";
    return document[key].get<std::string>();
  };
  const std::string account = text("accountId");
  const std::string region = text("region");
  const bool digits = account.size() == 12 &&
                      account.find_first_not_of("0123456789") == std::string::npos;
  if (answer->status != 200 || !digits || region.empty() ||
      region.find_first_not_of("abcdefghijklmnopqrstuvwxyz0123456789-") != std::string::npos) {
    return absl::UnavailableError(StrCat("the instance metadata (", session.endpoint(),
                                         ") did not give ", kDocument, " with an accountId and a "
                                         "region (HTTP ", answer->status,
                                         "); name the registry in worker.ecrRegistry"));
  }
  return EcrRegistryOf(account, region);
}

}  // namespace handoff
