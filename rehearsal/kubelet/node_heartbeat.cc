#include "rehearsal/kubelet/node_heartbeat.h"

#include <spdlog/spdlog.h>

#include <chrono>
#include <utility>

#include "common/base/strings.h"
#include "common/kube/http_transport.h"
#include "common/kube/kubeconfig.h"

namespace handoff::sandbox {
namespace {

constexpr char kNodeLeaseNamespace[] = "kube-node-lease";
constexpr int kLeaseDurationSeconds = 40;

// metav1.MicroTime: all six fractional digits, as the API server requires of a Lease.
std::string MicroTime(absl::Time time) {
  return absl::FormatTime("%Y-%m-%dT%H:%M:%E6SZ", absl::FromUnixMicros(absl::ToUnixMicros(time)),
                          absl::UTCTimeZone());
}

}  // namespace

absl::StatusOr<std::unique_ptr<NodeHeartbeat>> NodeHeartbeat::Start(
    const FileSystem& fs, const std::string& kubeconfig, const std::string& node_name,
    absl::Duration renew_interval) {
  absl::StatusOr<kube::ClusterCredentials> credentials = kube::LoadKubeconfig(fs, kubeconfig, "");
  if (!credentials.ok()) {
    return absl::InvalidArgumentError(
        StrCat("--kubeconfig=", kubeconfig, ": ", credentials.status().message()));
  }
  absl::StatusOr<std::unique_ptr<kube::HttpTransport>> transport =
      kube::NewCurlTransport(*credentials);
  if (!transport.ok()) return transport.status();
  std::unique_ptr<NodeHeartbeat> heartbeat(new NodeHeartbeat(node_name, renew_interval));
  heartbeat->clock_ = NewRealClock();
  kube::ClientOptions options = kube::ClientOptionsFor(*credentials);
  // One request per tick: a renewal that fails is the next tick's to try again.
  options.request_timeout = std::max(renew_interval, absl::Seconds(1));
  options.max_retries = 0;
  heartbeat->client_ =
      std::make_unique<kube::KubeClient>(*std::move(transport), *heartbeat->clock_, options);
  heartbeat->thread_ = std::thread([raw = heartbeat.get()] { raw->Loop(); });
  return heartbeat;
}

NodeHeartbeat::~NodeHeartbeat() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    stop_ = true;
  }
  stop_cv_.notify_all();
  if (thread_.joinable()) thread_.join();
}

absl::Status NodeHeartbeat::Renew() {
  const kube::ObjectRef ref{&kube::kLeases, kNodeLeaseNamespace, node_name_};
  absl::StatusOr<kube::Json> lease = client_->Get(ref);
  const std::string now = MicroTime(clock_->Now());
  if (absl::IsNotFound(lease.status())) {
    const kube::Json created = {
        {"apiVersion", "coordination.k8s.io/v1"},
        {"kind", "Lease"},
        {"metadata", {{"name", node_name_}, {"namespace", kNodeLeaseNamespace}}},
        {"spec",
         {{"holderIdentity", node_name_},
          {"leaseDurationSeconds", kLeaseDurationSeconds},
          {"renewTime", now}}}};
    return client_->Create(kube::kLeases, kNodeLeaseNamespace, created).status();
  }
  if (!lease.ok()) return lease.status();
  kube::Json renewed = *std::move(lease);
  renewed["spec"]["holderIdentity"] = node_name_;
  renewed["spec"]["leaseDurationSeconds"] = kLeaseDurationSeconds;
  renewed["spec"]["renewTime"] = now;
  return client_->Update(ref, renewed).status();
}

void NodeHeartbeat::Loop() {
  std::unique_lock<std::mutex> lock(mu_);
  while (!stop_) {
    lock.unlock();
    if (absl::Status renewed = Renew(); !renewed.ok()) {
      spdlog::warn("the node's Lease {}/{} was not renewed (again in {}): {}", kNodeLeaseNamespace,
                   node_name_, absl::FormatDuration(renew_interval_),
                   std::string(renewed.message()));
    }
    lock.lock();
    stop_cv_.wait_for(lock, absl::ToChronoMilliseconds(renew_interval_), [this] { return stop_; });
  }
}

}  // namespace handoff::sandbox
