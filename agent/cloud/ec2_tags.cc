#include "agent/cloud/ec2_tags.h"

#include <pugixml.hpp>

#include "absl/strings/match.h"
#include "agent/cloud/instance_tags.h"
#include "agent/cloud/metadata_session.h"
#include "common/base/strings.h"
#include "nlohmann/json.hpp"

namespace handoff {
namespace {

// The API version the AWS SDKs send for EC2's query API.
constexpr char kEc2ApiVersion[] = "2016-11-15";
// A DescribeInstances answer for one instance is a few kilobytes.
constexpr size_t kMaxEc2AnswerBytes = 1 << 20;

// The host and port of `url` (scheme://host[:port][/...]), as the Host header carries them.
std::string HostOf(std::string_view url) {
  const size_t scheme = url.find("://");
  if (scheme != std::string_view::npos) url.remove_prefix(scheme + 3);
  return std::string(url.substr(0, url.find('/')));
}

// The instance profile's credentials: the role listed at iam/security-credentials/, then its
// JSON document.
absl::StatusOr<AwsCredentials> ReadCredentials(MetadataSession& session,
                                               const std::string& instance_id) {
  absl::StatusOr<AwsHttpAnswer> roles = session.Get("meta-data/iam/security-credentials/");
  if (!roles.ok()) return roles.status();
  const std::string role(StripWhitespace(roles->body.substr(0, roles->body.find('\n'))));
  if (roles->status == 404 || (roles->status == 200 && role.empty())) {
    return absl::FailedPreconditionError(
        StrCat("instance ", instance_id,
               " has no instance profile (meta-data/iam/security-credentials/ is empty), so "
               "neither handoff nor the cloud-controller-manager can ask EC2"));
  }
  if (roles->status != 200) {
    return absl::UnavailableError(StrCat("the instance metadata (", session.endpoint(),
                                         ") did not list the instance profile's role (HTTP ",
                                         roles->status, ")"));
  }
  absl::StatusOr<AwsHttpAnswer> document =
      session.Get(StrCat("meta-data/iam/security-credentials/", role));
  if (!document.ok()) return document.status();
  const nlohmann::json json = nlohmann::json::parse(document->body, nullptr, false);
  AwsCredentials credentials;
  if (document->status == 200 && json.is_object()) {
    credentials.access_key_id = json.value("AccessKeyId", "");
    credentials.secret_access_key = json.value("SecretAccessKey", "");
    credentials.session_token = json.value("Token", "");
  }
  if (credentials.access_key_id.empty() || credentials.secret_access_key.empty()) {
    return absl::UnavailableError(StrCat("the instance metadata (", session.endpoint(),
                                         ") gave no credentials for the role ", role, " (HTTP ",
                                         document->status, ")"));
  }
  return credentials;
}

}  // namespace

Ec2Endpoint Ec2EndpointFor(const AwsCloudConfig& config, std::string_view availability_zone) {
  const std::string region(
      availability_zone.substr(0, availability_zone.empty() ? 0 : availability_zone.size() - 1));
  Ec2Endpoint endpoint;
  if (!config.ec2_url.empty()) {
    endpoint.url = config.ec2_url;
    endpoint.region = config.ec2_signing_region.empty() ? region : config.ec2_signing_region;
  } else {
    endpoint.url = StrCat("https://ec2.", region, ".amazonaws.com");
    endpoint.region = region;
  }
  return endpoint;
}

absl::StatusOr<std::map<std::string, std::string>> ParseDescribeInstancesTags(
    std::string_view xml, const std::string& instance_id) {
  pugi::xml_document document;
  if (!document.load_buffer(xml.data(), xml.size())) {
    return absl::UnavailableError("EC2 answered DescribeInstances with what is not its XML");
  }
  if (pugi::xml_node error = document.child("Response").child("Errors").child("Error")) {
    const std::string code = error.child_value("Code");
    const std::string message = StrCat("EC2 refused DescribeInstances for ", instance_id, ": ",
                                       code, ": ", error.child_value("Message"));
    if (code == "InvalidInstanceID.NotFound" || code == "InvalidInstanceID.Malformed") {
      return absl::NotFoundError(message);
    }
    if (code == "UnauthorizedOperation" || code == "AuthFailure" ||
        absl::StartsWith(code, "InvalidClientTokenId") || code == "SignatureDoesNotMatch" ||
        code == "RequestExpired") {
      return absl::PermissionDeniedError(message);
    }
    return absl::UnavailableError(message);
  }
  pugi::xml_node reservations = document.child("DescribeInstancesResponse").child("reservationSet");
  if (!reservations) {
    return absl::UnavailableError("EC2 answered DescribeInstances without a reservationSet");
  }
  for (pugi::xml_node reservation : reservations.children("item")) {
    for (pugi::xml_node instance : reservation.child("instancesSet").children("item")) {
      if (instance_id != instance.child_value("instanceId")) continue;
      std::map<std::string, std::string> tags;
      for (pugi::xml_node tag : instance.child("tagSet").children("item")) {
        const std::string_view key = tag.child_value("key");
        if (!StartsWith(key, kClusterTagPrefix)) continue;
        tags[std::string(key.substr(kClusterTagPrefix.size()))] = tag.child_value("value");
      }
      return tags;
    }
  }
  return absl::NotFoundError(
      StrCat("EC2 answered DescribeInstances without instance ", instance_id));
}

absl::StatusOr<AwsHttpAnswer> CallEc2(
    const Ec2Endpoint& ec2, const AwsCredentials& credentials, const std::string& action,
    const std::vector<std::pair<std::string, std::string>>& parameters, absl::Duration timeout) {
  SignedPost post;
  post.host = HostOf(ec2.url);
  post.body = StrCat("Action=", FormEncode(action), "&Version=", kEc2ApiVersion);
  for (const auto& [name, value] : parameters) {
    StrAppend(&post.body, "&", FormEncode(name), "=", FormEncode(value));
  }
  AwsHttpRequest request;
  request.method = "POST";
  request.url = ec2.url;
  if (!EndsWith(request.url, "/")) request.url.push_back('/');
  request.headers = SignPost(post, credentials, ec2.region, "ec2", absl::Now());
  request.body = post.body;
  request.timeout = timeout;
  request.deadline = absl::Now() + timeout;
  request.use_proxy = true;
  request.what = "EC2";
  request.max_answer_bytes = kMaxEc2AnswerBytes;
  return SendAwsRequest(request);
}

absl::StatusOr<std::map<std::string, std::string>> ReadClusterTagsFromEc2(
    const InstanceMetadataOptions& metadata, const std::string& instance_id,
    const Ec2Endpoint& ec2) {
  if (metadata.endpoint.empty()) {
    return absl::UnavailableError(
        "instanceMetadata.endpoint is \"\", so handoff has no instance profile to ask EC2 with");
  }
  MetadataSession session(metadata.endpoint, metadata.timeout);
  if (absl::Status opened = session.Open(); !opened.ok()) return opened;
  absl::StatusOr<AwsCredentials> credentials = ReadCredentials(session, instance_id);
  if (!credentials.ok()) return credentials.status();

  absl::StatusOr<AwsHttpAnswer> answer = CallEc2(ec2, *credentials, "DescribeInstances",
                                                 {{"InstanceId.1", instance_id}}, metadata.timeout);
  if (!answer.ok()) return answer.status();
  absl::StatusOr<std::map<std::string, std::string>> tags =
      ParseDescribeInstancesTags(answer->body, instance_id);
  if (!tags.ok() && answer->status != 200 && absl::IsUnavailable(tags.status()) &&
      !StrContains(tags.status().message(), "refused")) {
    return absl::UnavailableError(
        StrCat("EC2 (", ec2.url, ") answered DescribeInstances with HTTP ", answer->status));
  }
  return tags;
}

}  // namespace handoff
