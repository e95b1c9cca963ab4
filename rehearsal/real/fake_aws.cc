#include "rehearsal/real/fake_aws.h"

#include <signal.h>

#include <fstream>
#include <sstream>
#include <utility>

#include "absl/time/clock.h"
#include "agent/cloud/ec2_tags.h"
#include "common/base/strings.h"
#include "nlohmann/json.hpp"
#include "rehearsal/real/control_plane.h"

namespace handoff::sandbox::real {

const FakeAws::Instance* FakeAws::Find(const std::string& name) const {
  for (const Instance& instance : instances) {
    if (instance.name == name) return &instance;
  }
  return nullptr;
}

absl::StatusOr<FakeAws> ParseFakeAwsReadyFile(const std::string& text, const std::string& path) {
  using ReadyJson = nlohmann::json;
  ReadyJson json = ReadyJson::parse(text, nullptr, /*allow_exceptions=*/false);
  auto text_field = [](const ReadyJson& object, const char* key) {
    auto found = object.find(key);
    return found != object.end() && found->is_string() ? found->get<std::string>() : "";
  };
  if (!json.is_object() || !json.contains("nodes") || !json["nodes"].is_array()) {
    return absl::InvalidArgumentError(StrCat(path, ": not the fake AWS's ready file (no nodes)"));
  }
  FakeAws aws;
  aws.ec2_url = text_field(json, "ec2_url");
  aws.tls_url = text_field(json, "tls_url");
  aws.region = text_field(json, "region");
  if (json.contains("imds_port") && json["imds_port"].is_number_integer()) {
    aws.imds_port = json["imds_port"].get<int>();
  }
  for (const ReadyJson& node : json["nodes"]) {
    if (!node.is_object()) {
      return absl::InvalidArgumentError(StrCat(path, ": a node that is not an object"));
    }
    FakeAws::Instance instance{text_field(node, "name"),
                               text_field(node, "ip"),
                               text_field(node, "instance_id"),
                               text_field(node, "zone"),
                               text_field(node, "private_dns_name"),
                               text_field(node, "provider_id")};
    if (instance.name.empty() || instance.instance_id.empty() || instance.provider_id.empty()) {
      return absl::InvalidArgumentError(
          StrCat(path, ": a node without name, instance_id or provider_id"));
    }
    aws.instances.push_back(std::move(instance));
  }
  if (aws.ec2_url.empty() || aws.region.empty() || aws.imds_port <= 0) {
    return absl::InvalidArgumentError(StrCat(path, ": ec2_url, region or imds_port missing"));
  }
  return aws;
}

absl::StatusOr<RunningFakeAws> StartFakeAws(const std::vector<std::string>& argv,
                                            const std::string& ready, const std::string& log,
                                            const SpawnFunction& spawn, absl::Duration timeout) {
  absl::StatusOr<std::unique_ptr<Process>> started = spawn(argv, log);
  if (!started.ok()) return started.status();
  RunningFakeAws running;
  running.process = *std::move(started);
  const absl::Time deadline = absl::Now() + timeout;
  while (true) {
    std::ifstream in(ready, std::ios::binary);
    if (in) {
      std::ostringstream text;
      text << in.rdbuf();
      absl::StatusOr<FakeAws> aws = ParseFakeAwsReadyFile(text.str(), ready);
      if (!aws.ok()) {
        running.process->Stop(SIGTERM, absl::Seconds(5));
        return aws.status();
      }
      running.aws = *std::move(aws);
      return running;
    }
    // Waiting on the process paces the look at the ready file and notices an exit at once.
    int status = 0;
    if (running.process->WaitFor(absl::Milliseconds(100), &status)) {
      return absl::UnavailableError(StrCat("the fake AWS exited (", DescribeWaitStatus(status),
                                           "); its log is ", log, ", which ends with:\n",
                                           LogTail(log)));
    }
    if (absl::Now() >= deadline) {
      running.process->Stop(SIGTERM, absl::Seconds(5));
      return absl::DeadlineExceededError(StrCat("the fake AWS did not get ready within ",
                                                absl::FormatDuration(timeout), "; see ", log));
    }
  }
}

absl::Status TagInstance(const FakeAws& aws, const std::string& node, bool tagged) {
  const FakeAws::Instance* instance = aws.Find(node);
  if (instance == nullptr)
    return absl::NotFoundError(StrCat("the fake AWS has no instance for ", node));
  // moto checks no signature; the operator's keys are any.
  const AwsCredentials operator_keys{"AKIAHANDOFFSANDBOX01", "handoff-sandbox-operator", ""};
  absl::StatusOr<AwsHttpAnswer> answer = CallEc2(
      Ec2Endpoint{aws.ec2_url, aws.region}, operator_keys, tagged ? "CreateTags" : "DeleteTags",
      {{"ResourceId.1", instance->instance_id},
       {"Tag.1.Key", StrCat("kubernetes.io/cluster/", kSandboxClusterId)},
       {"Tag.1.Value", "owned"}},
      absl::Seconds(10));
  if (!answer.ok()) return answer.status();
  if (answer->status != 200) {
    return absl::InternalError(StrCat(
        "the fake AWS answered ", tagged ? "CreateTags" : "DeleteTags", " for ",
        instance->instance_id, " with HTTP ", answer->status, ": ", answer->body.substr(0, 300)));
  }
  return absl::OkStatus();
}

}  // namespace handoff::sandbox::real
