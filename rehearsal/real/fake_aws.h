// The fake AWS (tests/real/fake_aws.py, installed as <components>/bin/handoff-fake-aws) as the
// real clusters under the sandbox start it: moto's EC2 API and one instance metadata endpoint per
// node, described in the JSON file it writes once everything serves.
#ifndef HANDOFF_REHEARSAL_REAL_FAKE_AWS_H_
#define HANDOFF_REHEARSAL_REAL_FAKE_AWS_H_

#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/time/time.h"
#include "rehearsal/sandbox/process.h"

namespace handoff::sandbox::real {

// The cluster's id in the instances' tag kubernetes.io/cluster/<id> and the cloud config.
inline constexpr char kSandboxClusterId[] = "handoff-sandbox";

// What the fake AWS wrote in its ready file.
struct FakeAws {
  std::string ec2_url;
  // The same API over HTTPS (https://address:port), when the fake AWS serves it (--tls-host).
  std::string tls_url;
  std::string region;
  int imds_port = 0;
  struct Instance {
    std::string name, ip, instance_id, zone, private_dns_name, provider_id;
  };
  std::vector<Instance> instances;

  const Instance* Find(const std::string& name) const;
};

// InvalidArgument naming `path` when `text` is not a ready file with an ec2_url, a region, an
// imds_port and nodes each with a name, an instance_id and a provider_id. Pure.
absl::StatusOr<FakeAws> ParseFakeAwsReadyFile(const std::string& text, const std::string& path);

struct RunningFakeAws {
  std::unique_ptr<Process> process;
  FakeAws aws;
};

using SpawnFunction = std::function<absl::StatusOr<std::unique_ptr<Process>>(
    const std::vector<std::string>& argv, const std::string& log)>;

// Starts `argv` (handoff-fake-aws with its flags, --ready-file `ready` among them) with `spawn`
// (the sandbox's, which records the process before the seconds of waiting, so that a run killed
// meanwhile leaves nothing its cleanup does not know of), its output in `log`, and waits up to
// `timeout` for the ready file (moto takes seconds to import, and over 90 s on a loaded 2-core
// machine with kubeadm sandboxes beside it). An error, with the log's last
// lines, when it exits first or the time runs out; the process is stopped then.
absl::StatusOr<RunningFakeAws> StartFakeAws(const std::vector<std::string>& argv,
                                            const std::string& ready, const std::string& log,
                                            const SpawnFunction& spawn = Process::Spawn,
                                            absl::Duration timeout = absl::Minutes(3));

// Removes (`tagged` false) or puts back (owned) the kubernetes.io/cluster/<kSandboxClusterId>
// tag of `node`'s instance through the fake AWS's EC2 API, as an operator's `aws ec2
// delete-tags` / `create-tags` would. NotFound for a node without an instance.
absl::Status TagInstance(const FakeAws& aws, const std::string& node, bool tagged);

}  // namespace handoff::sandbox::real

#endif  // HANDOFF_REHEARSAL_REAL_FAKE_AWS_H_
