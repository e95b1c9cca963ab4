#include "rehearsal/sandbox/model_cluster.h"

#include <utility>

#include "common/base/strings.h"
#include "common/fs/file_system.h"
#include "rehearsal/fakeapi/api_store.h"
#include "rehearsal/fakeapi/fake_api_server.h"
#include "rehearsal/monitor/run_record.h"
#include "rehearsal/sandbox/simulated_cluster.h"

namespace handoff::sandbox {
namespace {

class ModelCluster : public SimulatedCluster {
 public:
  explicit ModelCluster(const ClusterSetup& setup) : SimulatedCluster(setup) {
    MonitorOptions options;
    options.lease_duration = setup.timing.lease_duration;
    options.retry_period = setup.timing.retry_period;
    // The cloud controllers the stand-ins run (routes are off, as kubeadm on AWS has them);
    // node-ipam is reported as soon as a record names it.
    options.controllers = {"service", "cloud-node-lifecycle"};
    monitor_ = std::make_unique<LiveMonitor>(*fs_, StrCat(setup.dir, "/records"), options);
  }
  ~ModelCluster() override { Stop(); }

  const MonitorReport& Poll(absl::Time now) override {
    (void)monitor_->Poll(absl::ToUnixNanos(now));
    return monitor_->report();
  }

  void CountGapsFrom(absl::Time t) override { monitor_->CountGapsFrom(absl::ToUnixNanos(t)); }
  absl::Duration MoveBudget() const override { return absl::Seconds(20); }

  std::vector<LeaseHolderChange> LeaseHolders() const override {
    absl::StatusOr<std::vector<RunRecord>> records =
        ReadRunRecords(*fs_, StrCat(setup_.dir, "/records"));
    if (!records.ok()) return {};
    return LeaseHolderChangesFromRecords(*std::move(records));
  }

  std::vector<std::string> ComponentLines() const override {
    return {"model: fake API server, stand-in managers"};
  }

  void Stop() override {
    StopKubelets();
    if (api_server_) api_server_->Stop();
  }

 protected:
  absl::StatusOr<std::string> StartApiServer(const ApiServerCertificates& certificates) override {
    store_ = std::make_unique<fakeapi::ApiStore>();
    std::vector<SandboxNode> specs;
    for (const ClusterNode& node : setup_.nodes) specs.push_back(node.spec);
    std::vector<SandboxNode> workers;
    for (const ClusterNode& node : setup_.workers) workers.push_back(node.spec);
    absl::Status seeded = store_->Seed(ClusterSeedYaml(specs, workers), "the sandbox's cluster");
    if (!seeded.ok()) return seeded;
    fakeapi::FakeApiServerOptions options;
    options.cert_file = certificates.serving_cert_file;
    options.key_file = certificates.serving_key_file;
    options.client_ca_file = certificates.client_ca_file;
    absl::StatusOr<std::unique_ptr<fakeapi::FakeApiServer>> server =
        fakeapi::FakeApiServer::Start(*store_, options);
    if (!server.ok()) return server.status();
    api_server_ = *std::move(server);
    return api_server_->url();
  }

  // The templates' defaults are the model's: a cloud config the stand-ins never read, no env.
  absl::Status AddLayoutInputs(const ClusterNode& /*node*/, LayoutInputs& /*inputs*/) override {
    return absl::OkStatus();
  }

  std::vector<std::string> KubeletArgs(const ClusterNode& node) const override {
    return {"--standin", StrCat(setup_.bin_dir, "/handoff-standin"), "--records",
            StrCat(setup_.dir, "/records/", node.spec.name, ".jsonl")};
  }

  std::string AgentTimeout() const override { return "15s"; }

 private:
  std::unique_ptr<LiveMonitor> monitor_;
  std::unique_ptr<fakeapi::ApiStore> store_;
  std::unique_ptr<fakeapi::FakeApiServer> api_server_;
};

}  // namespace

std::unique_ptr<SandboxCluster> NewModelCluster(const ClusterSetup& setup) {
  return std::make_unique<ModelCluster>(setup);
}

}  // namespace handoff::sandbox
