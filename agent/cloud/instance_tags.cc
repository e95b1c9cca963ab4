#include "agent/cloud/instance_tags.h"

#include <curl/curl.h>

#include <algorithm>
#include <vector>

#include "agent/base/strings.h"
#include "agent/engine/settings.h"
#include "agent/system/curl_support.h"

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

constexpr std::string_view kTagPrefix = "kubernetes.io/cluster/";
// The metadata answers are a few lines; anything larger is not the metadata service.
constexpr size_t kMaxAnswerBytes = 64 << 10;
// IMDSv2 session tokens last at most 6 hours (21600 s), the value AWS's examples use.
constexpr std::string_view kTokenTtlHeader = "X-aws-ec2-metadata-token-ttl-seconds: 21600";
constexpr std::string_view kTokenHeader = "X-aws-ec2-metadata-token: ";

struct Answer {
  long status = 0;
  std::string body;
};

// One IMDSv2 session against the metadata endpoint, every request within one deadline.
class MetadataSession {
 public:
  MetadataSession(std::string endpoint, absl::Duration timeout)
      : endpoint_(std::move(endpoint)), timeout_(timeout), deadline_(absl::Now() + timeout) {
    while (!endpoint_.empty() && endpoint_.back() == '/') endpoint_.pop_back();
  }

  // Unavailable when the service does not answer (nothing listens, or no answer before the
  // deadline): the message says which, for the operator.
  absl::StatusOr<Answer> Send(const std::string& method, const std::string& path) {
    absl::StatusOr<CurlHandle> curl = NewCurlHandle();
    if (!curl.ok()) return curl.status();
    CURL* handle = curl->get();
    const std::string url = StrCat(endpoint_, "/", path);
    const long timeout_ms = CurlTimeoutMs(deadline_ - absl::Now());

    CurlList headers;
    if (method == "PUT") {
      AppendCurlHeader(&headers, std::string(kTokenTtlHeader));
    } else {
      AppendCurlHeader(&headers, StrCat(kTokenHeader, token_));
    }
    char error_buffer[CURL_ERROR_SIZE] = {};
    CurlBodySink received(kMaxAnswerBytes, CurlBodySink::Overflow::kAbort);
    CURLcode code = CURLE_OK;
    auto set = [&code](CURLcode result) {
      if (code == CURLE_OK) code = result;
    };
    set(curl_easy_setopt(handle, CURLOPT_URL, url.c_str()));
    set(curl_easy_setopt(handle, CURLOPT_ERRORBUFFER, error_buffer));
    set(received.Attach(handle));
    set(curl_easy_setopt(handle, CURLOPT_TIMEOUT_MS, timeout_ms));
    set(curl_easy_setopt(handle, CURLOPT_CONNECTTIMEOUT_MS, timeout_ms));
    // The default resolver timeout uses SIGALRM, unsafe in a multi-threaded process.
    set(curl_easy_setopt(handle, CURLOPT_NOSIGNAL, 1L));
    // The metadata service answers only the instance itself: an http_proxy inherited from the
    // environment would ask it on the proxy's behalf (and be refused, or answer for the proxy).
    set(curl_easy_setopt(handle, CURLOPT_NOPROXY, "*"));
    set(curl_easy_setopt(handle, CURLOPT_FOLLOWLOCATION, 0L));
    set(curl_easy_setopt(handle, CURLOPT_PROTOCOLS_STR, "http,https"));
    set(curl_easy_setopt(handle, CURLOPT_USERAGENT, "handoff"));
    set(curl_easy_setopt(handle, CURLOPT_HTTPHEADER, headers.get()));
    if (method == "PUT") {
      set(curl_easy_setopt(handle, CURLOPT_CUSTOMREQUEST, "PUT"));
      set(curl_easy_setopt(handle, CURLOPT_POSTFIELDSIZE_LARGE, static_cast<curl_off_t>(0)));
      set(curl_easy_setopt(handle, CURLOPT_POSTFIELDS, ""));
    } else {
      set(curl_easy_setopt(handle, CURLOPT_HTTPGET, 1L));
    }
    if (code != CURLE_OK) {
      return absl::InternalError(
          StrCat(method, " ", url, ": cannot configure libcurl: ", curl_easy_strerror(code)));
    }
    code = curl_easy_perform(handle);
    if (code != CURLE_OK) {
      if (received.over_limit()) {
        return absl::UnavailableError(
            StrCat(url, " answered more than ", kMaxAnswerBytes, " bytes: not instance metadata"));
      }
      const std::string detail = error_buffer[0] != '\0' ? error_buffer : curl_easy_strerror(code);
      if (code == CURLE_OPERATION_TIMEDOUT) {
        return absl::UnavailableError(StrCat("the instance metadata (", url,
                                             ") did not answer within ",
                                             absl::FormatDuration(timeout_), ": ", detail));
      }
      return absl::UnavailableError(
          StrCat("the instance metadata (", url, ") did not answer: ", detail));
    }
    Answer answer;
    curl_easy_getinfo(handle, CURLINFO_RESPONSE_CODE, &answer.status);
    answer.body = received.TakeBody();
    return answer;
  }

  void set_token(std::string token) { token_ = std::move(token); }
  const std::string& endpoint() const { return endpoint_; }

 private:
  std::string endpoint_;
  absl::Duration timeout_;
  absl::Time deadline_;
  std::string token_;
};

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
                " Name=key,Values=", kTagPrefix, cluster_id);
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
  const std::string key = StrCat(kTagPrefix, cluster_id);
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

  absl::StatusOr<Answer> token = session.Send("PUT", "latest/api/token");
  if (!token.ok()) return unanswered(token.status());
  if (token->status != 200 || StripWhitespace(token->body).empty()) {
    return NotVisible(StrCat("the instance metadata (", session.endpoint(),
                             ") gave no session token (HTTP ", token->status,
                             "), so handoff cannot read the tag ", key),
                      "", cluster_id);
  }
  session.set_token(std::string(StripWhitespace(token->body)));

  absl::StatusOr<Answer> id = session.Send("GET", "latest/meta-data/instance-id");
  if (!id.ok()) return unanswered(id.status());
  const std::string instance_id(StripWhitespace(id->body));
  if (id->status != 200 || instance_id.empty()) {
    return NotVisible(StrCat("the instance metadata (", session.endpoint(),
                             ") did not give the instance id (HTTP ", id->status,
                             "), so handoff cannot read the tag ", key),
                      "", cluster_id);
  }

  // AWS's own example lists the keys at meta-data/tags/instance (no final slash).
  absl::StatusOr<Answer> listing = session.Send("GET", "latest/meta-data/tags/instance");
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
  absl::StatusOr<Answer> value =
      session.Send("GET", StrCat("latest/meta-data/tags/instance/", key));
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
  absl::StatusOr<Answer> token = session.Send("PUT", "latest/api/token");
  if (!token.ok()) return token.status();
  if (token->status != 200 || StripWhitespace(token->body).empty()) {
    return absl::UnavailableError(StrCat("the instance metadata (", session.endpoint(),
                                         ") gave no session token (HTTP ", token->status, ")"));
  }
  session.set_token(std::string(StripWhitespace(token->body)));
  InstanceIdentity identity;
  for (auto [path, field] :
       {std::pair{"instance-id", &identity.instance_id},
        std::pair{"local-hostname", &identity.local_hostname},
        std::pair{"placement/availability-zone", &identity.availability_zone}}) {
    absl::StatusOr<Answer> answer = session.Send("GET", StrCat("latest/meta-data/", path));
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

}  // namespace handoff
