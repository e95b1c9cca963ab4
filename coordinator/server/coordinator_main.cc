#include "coordinator/server/coordinator_main.h"

#include <algorithm>
#include <cstdint>
#include <cstdlib>
#include <filesystem>
#include <iostream>
#include <optional>
#include <thread>

#include "CLI/CLI.hpp"
#include "absl/time/time.h"
#include "agent/cli/cli_config.h"
#include "agent/engine/settings.h"
#include "common/base/strings.h"
#include "common/fs/atomic_file.h"
#include "common/fs/file_system.h"
#include "common/fs/output_file.h"
#include "common/fs/read_limit.h"
#include "common/pki/pki.h"
#include "common/system/clock.h"
#include "common/system/log_setup.h"
#include "common/system/metrics_server.h"
#include "common/system/service_lifecycle.h"
#include "common/system/shutdown_signal.h"
#include "common/kube/client.h"
#include "coordinator/kube/etcd_members.h"
#include "common/kube/http_transport.h"
#include "common/kube/kubeconfig.h"
#include "coordinator/preflight/cluster_checks.h"
#include "coordinator/server/cluster_facts.h"
#include "coordinator/server/controller_thread.h"
#include "coordinator/server/coordinator_metrics.h"
#include "coordinator/server/coordinator_server.h"
#include "coordinator/server/lease_releaser.h"
#include "coordinator/server/rollout_controller.h"
#include "coordinator/store/store.h"
#include "prometheus/registry.h"
#include "spdlog/spdlog.h"

namespace handoff::server {
namespace {

constexpr int kExitOk = 0;
constexpr int kExitConfig = 2;

constexpr char kDescription[] =
    "handoff-coordinator sequences the rolling move of a control plane's nodes from the in-tree\n"
    "AWS cloud provider to the cloud-controller-manager (and back), one node at a time, so that\n"
    "no cloud controller ever runs in two managers. Node agents (handoff-agent run) dial it and\n"
    "hold a stream; operators drive it with handoffctl. Every connection is mutual TLS with\n"
    "certificates from the handoff CA: agents O=handoff:agents, CN=<node>; operators\n"
    "O=handoff:operators. Progress and an audit history live in <state-dir>/coordinator.db;\n"
    "after a crash it resumes, asking every agent for its node's state first. A database that\n"
    "is empty, cut short, damaged or not handoff's is refused (exit 2) and left as it is:\n"
    "restore it, or start once with --reset-damaged-state.\n"
    "Exit codes: 0 stopped on SIGTERM/SIGINT; 2 bad configuration, a state database it cannot\n"
    "trust, or cannot serve.\n";

struct Options {
  std::string listen = "0.0.0.0:7450";
  std::string port_file;
  std::string state_dir = "/var/lib/handoff-coordinator";
  std::string ca = "/etc/handoff/pki/ca.crt";
  std::string cert = "/etc/handoff/pki/coordinator.crt";
  std::string key = "/etc/handoff/pki/coordinator.key";
  std::string cert_refresh_interval = "60s";
  std::string nodes;
  std::string settings;
  std::string kubeconfig;
  std::string context;
  bool no_cluster_checks = false;
  std::string lease_release = "on";
  std::string etcd_endpoint;  // the replace strategy's etcd member list; "" reads none
  std::string etcd_ca;
  std::string etcd_cert;
  std::string etcd_key;
  std::string gap_limit = "60s";
  int64_t history_keep = 100000;
  std::string facts_interval = "5s";
  std::string plan_timeout = "30s";
  std::string shutdown_grace = "10s";
  std::string metrics_listen = "127.0.0.1:7451";
  std::string log_format = "auto";
  bool reflection = false;
  bool reset_damaged_state = false;
};

absl::StatusOr<absl::Duration> PositiveDuration(const std::string& flag, const std::string& text) {
  absl::Duration duration;
  if (!absl::ParseDuration(text, &duration) || duration <= absl::ZeroDuration()) {
    return absl::InvalidArgumentError(
        StrCat(flag, " \"", text, "\" is not a positive duration such as 5s or 1m"));
  }
  return duration;
}

absl::StatusOr<std::string> ReadPem(const FileSystem& fs, const std::string& flag,
                                    const std::string& path) {
  absl::StatusOr<std::string> text = fs.ReadFile(path, kPemRead);
  if (!text.ok()) return absl::InvalidArgumentError(StrCat(flag, ": ", text.status().message()));
  return text;
}

// The rollout's goal, pause, the move in flight and the history are in the database only: one the
// store refuses is never replaced without the operator's word, and then kept beside the new one.
absl::StatusOr<std::unique_ptr<store::Store>> OpenStore(const std::string& path, bool reset_damaged,
                                                        Clock& clock) {
  absl::StatusOr<std::unique_ptr<store::Store>> store = store::Store::Open(path);
  if (store.ok()) {
    if (reset_damaged) {
      spdlog::info("--reset-damaged-state: {} is sound; it is used as it is", path);
    }
    return store;
  }
  if (!absl::IsDataLoss(store.status())) return store.status();
  if (!reset_damaged) {
    return absl::DataLossError(StrCat(
        store.status().message(),
        "\nThe coordinator does not start on a state it cannot trust; the file is left as it is. "
        "Restore it from a backup, or start once with --reset-damaged-state to keep it beside "
        "as ",
        path,
        ".damaged-<time> and begin with an empty state (the rollout's goal, pause and history "
        "start anew; the agents report their nodes' states when they connect)."));
  }
  spdlog::warn("--reset-damaged-state: {}", std::string(store.status().message()));
  absl::StatusOr<std::string> kept = store::SetAside(path, clock.Now());
  if (!kept.ok()) return kept.status();
  spdlog::warn(
      "--reset-damaged-state: kept the damaged database as {} (with its -wal and -shm, if any); "
      "starting with a new, empty state: the rollout's goal, pause and history start anew",
      *kept);
  return store::Store::Open(path);
}

// A certificate every client would refuse is a configuration error, named with its file and
// dates here rather than as handshakes failing on the agents' side.
absl::Status CheckOwnCertificate(const Options& options, const std::string& ca,
                                 const std::string& cert, const std::string& key, absl::Time now) {
  if (absl::Status pair = pki::CheckKeyPair(pki::KeyPair{cert, key}); !pair.ok()) {
    return absl::InvalidArgumentError(
        StrCat("--key ", options.key, " with --cert ", options.cert, ": ", pair.message()));
  }
  if (absl::Status verified = pki::VerifyChain(ca, cert, now, pki::KeyUsage::kServerAuth);
      !verified.ok()) {
    return absl::InvalidArgumentError(
        StrCat("--cert ", options.cert, " with --ca ", options.ca, ": ", verified.message(),
               "; agents and operators would refuse it: issue a new one "
               "(handoffctl certs issue --coordinator)"));
  }
  absl::StatusOr<pki::CertificateInfo> info = pki::InspectCertificate(cert);
  if (info.ok() && pki::ExpiresSoon(*info, now)) {
    spdlog::warn(
        "--cert {}: the coordinator's certificate expires at {} (in {}); agents and operators "
        "will refuse it from then on: issue a new one (handoffctl certs issue --coordinator)",
        options.cert, absl::FormatTime("%Y-%m-%dT%H:%M:%SZ", info->not_after, absl::UTCTimeZone()),
        absl::FormatDuration(absl::Trunc(info->not_after - now, absl::Minutes(1))));
  }
  return absl::OkStatus();
}

int Fail(const absl::Status& status) {
  std::cerr << "handoff-coordinator: " << status.message() << "\n";
  return kExitConfig;
}

// `file`: the options --config stood for; an error about one of them names its file and key.
int Run(const Options& options, const ConfigArgs& file) {
  auto fail = [&](const absl::Status& status) {
    return Fail(AttributeToConfigFile(status, file));
  };
  absl::StatusOr<absl::Duration> facts_interval =
      PositiveDuration("--facts-interval", options.facts_interval);
  if (!facts_interval.ok()) return fail(facts_interval.status());
  absl::StatusOr<absl::Duration> plan_timeout =
      PositiveDuration("--plan-timeout", options.plan_timeout);
  if (!plan_timeout.ok()) return fail(plan_timeout.status());
  absl::StatusOr<absl::Duration> gap_limit = PositiveDuration("--gap-limit", options.gap_limit);
  if (!gap_limit.ok()) return fail(gap_limit.status());
  absl::StatusOr<absl::Duration> grace =
      PositiveDuration("--shutdown-grace", options.shutdown_grace);
  if (!grace.ok()) return fail(grace.status());
  absl::StatusOr<absl::Duration> cert_refresh =
      PositiveDuration("--cert-refresh-interval", options.cert_refresh_interval);
  if (cert_refresh.ok() && *cert_refresh < absl::Seconds(1)) {
    cert_refresh = absl::InvalidArgumentError(
        StrCat("--cert-refresh-interval \"", options.cert_refresh_interval,
               "\" is shorter than 1s: the files would be read over and over for nothing"));
  }
  if (!cert_refresh.ok()) return fail(cert_refresh.status());
  // Before any thread starts (service_lifecycle.h).
  std::unique_ptr<ServiceNotifier> notifier = NewSystemdNotifier();
  ServiceLifecycleOptions lifecycle_options;
  lifecycle_options.logger = spdlog::default_logger();
  lifecycle_options.stop_means = StrCat("running calls get ", absl::FormatDuration(*grace));
  absl::StatusOr<std::unique_ptr<ServiceLifecycle>> lifecycle =
      ServiceLifecycle::Start(std::move(lifecycle_options), *notifier);
  if (!lifecycle.ok()) return fail(lifecycle.status());
  if (options.no_cluster_checks == !options.kubeconfig.empty()) {
    return fail(absl::InvalidArgumentError(
        "give --kubeconfig (the coordinator reads the migration-lease RBAC and the lease from the "
        "API server) or, for rehearsals without a cluster, --no-cluster-checks — exactly one"));
  }
  std::vector<std::string> nodes = ToStrings(StrSplit(options.nodes, ",", /*skip_empty=*/true));
  if (nodes.empty()) {
    return fail(absl::InvalidArgumentError(
        "--nodes: name every control-plane node, in rollout order, e.g. --nodes cp-1,cp-2,cp-3"));
  }

  std::unique_ptr<FileSystem> fs = NewPosixFileSystem("/");
  std::unique_ptr<Clock> clock = NewRealClock();
  std::string settings_yaml;
  if (!options.settings.empty()) {
    absl::StatusOr<std::string> text = fs->ReadFile(std::filesystem::absolute(options.settings), kSettingsRead);
    if (!text.ok())
      return fail(absl::InvalidArgumentError(StrCat("--settings: ", text.status().message())));
    settings_yaml = *std::move(text);
  }
  absl::StatusOr<std::string> ca = ReadPem(*fs, "--ca", std::filesystem::absolute(options.ca));
  if (!ca.ok()) return fail(ca.status());
  absl::StatusOr<std::string> cert =
      ReadPem(*fs, "--cert", std::filesystem::absolute(options.cert));
  if (!cert.ok()) return fail(cert.status());
  absl::StatusOr<std::string> key = ReadPem(*fs, "--key", std::filesystem::absolute(options.key));
  if (!key.ok()) return fail(key.status());
  if (absl::Status usable = CheckOwnCertificate(options, *ca, *cert, *key, clock->Now());
      !usable.ok()) {
    return fail(usable);
  }

  const std::string state_dir = std::filesystem::absolute(options.state_dir).lexically_normal();
  absl::Status made = EnsureDirectory(*fs, state_dir, 0700);
  if (!made.ok()) return fail(made);
  absl::StatusOr<std::unique_ptr<FileSystem::Lock>> lock = fs->TryLock(StrCat(state_dir, "/lock"));
  if (!lock.ok() && absl::IsUnavailable(lock.status())) {
    return fail(absl::UnavailableError(
        StrCat("another coordinator uses ", state_dir, ": ", lock.status().message())));
  }
  if (!lock.ok()) {
    // Not held by anyone: the lock file cannot be made or opened (a read-only or foreign
    // --state-dir), which says nothing about another coordinator.
    return fail(absl::Status(lock.status().code(),
                             StrCat("--state-dir ", state_dir,
                                    ": cannot take its lock file: ", lock.status().message())));
  }
  absl::StatusOr<std::unique_ptr<store::Store>> store =
      OpenStore(StrCat(state_dir, "/coordinator.db"), options.reset_damaged_state, *clock);
  if (!store.ok()) return fail(store.status());

  // Told from here on; served only just before the gRPC server, so that a start refused for
  // anything else never holds the port.
  auto registry = std::make_shared<prometheus::Registry>();
  std::unique_ptr<CoordinatorMetrics> metrics;
  if (!MetricsOff(options.metrics_listen)) {
    metrics = std::make_unique<CoordinatorMetrics>(*registry);
  }

  std::unique_ptr<FactsSource> facts;
  KubeFactsSource* kube_facts_source = nullptr;  // facts, when read from the cluster
  std::unique_ptr<LeaseReleaser> releaser;
  if (options.no_cluster_checks) {
    spdlog::warn(
        "--no-cluster-checks: migration-lease RBAC and lease ownership are NOT checked, and no "
        "lease is released; use this only for rehearsals without a cluster");
    facts = std::make_unique<AssumedFactsSource>();
  } else {
    absl::StatusOr<kube::ClusterCredentials> credentials =
        kube::LoadKubeconfig(*fs, std::filesystem::absolute(options.kubeconfig), options.context);
    if (!credentials.ok()) return fail(credentials.status());
    for (const std::string& warning : credentials->warnings) spdlog::warn("{}", warning);
    // One client per thread that uses it: the facts' ticker and the releaser's worker.
    auto client = [&]() -> absl::StatusOr<std::unique_ptr<kube::KubeClient>> {
      absl::StatusOr<std::unique_ptr<kube::HttpTransport>> transport =
          kube::NewCurlTransport(*credentials);
      if (!transport.ok()) return transport.status();
      return std::make_unique<kube::KubeClient>(*std::move(transport), *clock,
                                                kube::ClientOptionsFor(*credentials));
    };
    absl::StatusOr<std::unique_ptr<kube::KubeClient>> facts_client = client();
    if (!facts_client.ok()) return fail(facts_client.status());
    std::unique_ptr<kube::EtcdMemberLister> etcd;
    if (!options.etcd_endpoint.empty()) {
      absl::StatusOr<std::vector<std::string>> endpoints =
          kube::ParseEtcdEndpoints(options.etcd_endpoint);
      if (!endpoints.ok()) return fail(endpoints.status());
      // The files are read once, here, so that a missing one fails the start.
      absl::StatusOr<kube::ClusterCredentials> etcd_credentials = kube::EtcdCredentials(
          *fs, endpoints->front(), options.etcd_ca, options.etcd_cert, options.etcd_key);
      if (!etcd_credentials.ok()) return fail(etcd_credentials.status());
      etcd = std::make_unique<kube::EtcdMemberLister>(
          *std::move(endpoints), [credentials = *etcd_credentials](const std::string& endpoint) {
            kube::ClusterCredentials to = credentials;
            to.server = endpoint;
            return kube::NewCurlTransport(to);
          });
    }
    auto kube_facts = std::make_unique<KubeFactsSource>(
        *std::move(facts_client), *clock, kube::RbacOptions{}, kube::LeaseNames{}, std::move(etcd));
    // What `handoffctl preflight` reads, for the same checks before `start` (settings that do
    // not parse are the start's own refusal; the checks then read with the defaults).
    preflight::ClusterCheckOptions checks;
    if (absl::StatusOr<Settings> settings = ParseSettings(settings_yaml, "--settings");
        settings.ok()) {
      checks.settings = *std::move(settings);
    }
    checks.rbac.migration_lease = checks.settings.leader_name;
    kube_facts->ReadClusterChecks(std::move(checks), absl::Seconds(30));
    kube_facts_source = kube_facts.get();
    facts = std::move(kube_facts);
    if (options.lease_release == "on") {
      absl::StatusOr<std::unique_ptr<kube::KubeClient>> release_client = client();
      if (!release_client.ok()) return fail(release_client.status());
      releaser =
          std::make_unique<LeaseReleaser>(*std::move(release_client), *clock, metrics.get());
    } else {
      spdlog::info("--lease-release=off: a stopped manager's leases expire on their own");
    }
  }

  ControllerOptions controller_options;
  controller_options.nodes = nodes;
  controller_options.settings_yaml = settings_yaml;
  controller_options.plan_timeout = *plan_timeout;
  controller_options.move_listener = releaser.get();
  controller_options.fresh_facts_after_moves = !options.no_cluster_checks;
  controller_options.events = metrics.get();
  controller_options.history_keep = options.history_keep;
  if (kube_facts_source != nullptr) {
    // A start the last view refuses is judged again on one read then (the facts' client, under
    // the source's lock).
    controller_options.read_cluster_view = [kube_facts_source] {
      return kube_facts_source->ReadClusterViewNow();
    };
  }
  absl::StatusOr<std::unique_ptr<RolloutController>> controller =
      RolloutController::Create(**store, *clock, controller_options);
  if (!controller.ok()) return fail(controller.status());
  if (releaser) {
    RolloutController* audited = controller->get();
    releaser->SetAudit([audited](const std::string& kind, const std::string& node,
                                 const std::string& message, const std::string& detail_json) {
      audited->RecordAudit(kind, node, message, detail_json);
    });
  }
  // The first facts before any agent can connect, so the first decisions use them.
  (*controller)->SetFacts(facts->Check({}));
  DetectorOptions detector;
  detector.nodes = nodes;
  detector.gap_limit_ms = absl::ToInt64Milliseconds(*gap_limit);
  // The controller's work from the gRPC reactors and the detector's findings run here, one at a
  // time; it outlives the server and the run watch, which post to it.
  ControllerThread controller_thread;
  RunWatch run_watch(**controller, detector, metrics.get(), &controller_thread);
  if (metrics) {
    (*controller)->Watch([watched = metrics.get()](const pb::RolloutStatus& status) {
      watched->ObserveStatus(status);
    });
  }

  std::unique_ptr<MetricsServer> metrics_server;
  if (metrics) {
    absl::StatusOr<std::unique_ptr<MetricsServer>> served =
        MetricsServer::Start(options.metrics_listen, registry);
    if (!served.ok()) {
      return fail(absl::InvalidArgumentError(
          StrCat("--metrics-listen: ", served.status().message())));
    }
    metrics_server = *std::move(served);
    spdlog::info("serving metrics on {}", metrics_server->url());
    if (std::optional<std::string> warning = ExposureWarning(options.metrics_listen)) {
      spdlog::warn("{}", *warning);
    }
  }

  ServerOptions server_options;
  server_options.listen = options.listen;
  server_options.ca_pem = *ca;
  server_options.cert_pem = *cert;
  server_options.key_pem = *key;
  // Read again from here on: a replaced certificate is served to new connections.
  server_options.tls_files = rpc::TlsFiles{std::filesystem::absolute(options.ca),
                                           std::filesystem::absolute(options.cert),
                                           std::filesystem::absolute(options.key)};
  server_options.cert_refresh_interval = *cert_refresh;
  server_options.reflection = options.reflection;
  server_options.run_watch = &run_watch;
  server_options.controller_thread = &controller_thread;
  absl::StatusOr<std::unique_ptr<CoordinatorServer>> server =
      CoordinatorServer::Start(**controller, server_options);
  if (!server.ok()) return fail(server.status());
  spdlog::info("serving on port {} for nodes {} (state in {})", (*server)->port(), options.nodes,
               state_dir);
  if (!options.port_file.empty()) {
    absl::Status written =
        WriteOutputFile(*fs, options.port_file, StrCat((*server)->port(), "\n"), 0644);
    if (!written.ok()) {
      return fail(absl::Status(written.code(), StrCat("--port-file ", written.message())));
    }
  }

  const ShutdownSignal& stop = (*lifecycle)->shutdown();
  std::thread ticker([&] {
    absl::Time next_facts = clock->Now() + *facts_interval;
    absl::Time next_tick = clock->Now() + absl::Seconds(1);
    // Every --facts-interval, and as soon as a move's result makes the next move wait for them.
    while (!stop.WaitTimeoutOrShutdown(absl::Milliseconds(100))) {
      if (clock->Now() >= next_facts || (*controller)->WantsFacts()) {
        (*controller)->SetFacts(facts->Check((*controller)->LeavingNodes()));
        next_facts = clock->Now() + *facts_interval;
      }
      if (clock->Now() >= next_tick) {
        (*controller)->Tick();
        next_tick = clock->Now() + absl::Seconds(1);
      }
    }
  });

  // Ready: the state is loaded and the port serves. The main loop keeps systemd's watchdog fed
  // and the status line current until a signal.
  auto describe = [&] {
    const pb::RolloutStatus status = (*controller)->Status();
    return StrCat("serving on port ", (*server)->port(), " for nodes ", options.nodes,
                  "; rollout ", status.rollout_id().empty() ? "not started" : status.rollout_id(),
                  " ", pb::RolloutStatus::Phase_Name(status.phase()),
                  status.next().empty() ? "" : StrCat(": ", status.next()));
  };
  (*lifecycle)->Ready(describe());
  while (!(*lifecycle)->WaitTimeoutOrShutdown(absl::Seconds(5))) (*lifecycle)->Status(describe());
  ticker.join();
  (*server)->Shutdown(*grace);
  // Releases already decided reach the history while the controller still exists.
  releaser.reset();
  return kExitOk;
}

}  // namespace

int RunCoordinator(int argc, const char* const* argv) {
  Options options;
  CLI::App app(kDescription, "handoff-coordinator");
  app.add_option("--listen", options.listen,
                 "Address to serve on, host:port (port 0: any free one)")
      ->capture_default_str();
  app.add_option("--port-file", options.port_file,
                 "Write the port served on to this file once serving (for scripts and tests)");
  app.add_option("--state-dir", options.state_dir,
                 "Directory of the rollout's database and lock (created 0700)")
      ->capture_default_str();
  app.add_option("--ca", options.ca, "The handoff CA certificate (PEM) every client must chain to")
      ->capture_default_str();
  app.add_option("--cert", options.cert, "The coordinator's certificate (PEM)")
      ->capture_default_str();
  app.add_option("--key", options.key, "The coordinator's private key (PEM)")
      ->capture_default_str();
  app.add_option("--cert-refresh-interval", options.cert_refresh_interval,
                 "How often to read --ca, --cert and --key again: replaced files are served to "
                 "new connections without a restart (a key that is not the certificate's is "
                 "refused with a warning, the previous pair kept); at least 1s")
      ->capture_default_str();
  app.add_option("--nodes", options.nodes,
                 "Every control-plane node, comma-separated, in rollout order (each runs an agent "
                 "whose certificate CN is the node name)")
      ->required();
  app.add_option("--settings", options.settings,
                 "Migration settings YAML sent to every agent with each move (as handoff-agent "
                 "--settings; node-local paths stay the agent's)");
  app.add_option("--kubeconfig", options.kubeconfig,
                 "Kubeconfig to read the migration-lease RBAC and the lease with");
  app.add_option("--context", options.context, "Kubeconfig context (default: its current one)");
  app.add_flag("--no-cluster-checks", options.no_cluster_checks,
               "Take the RBAC and the migration lease as ready without a cluster: rehearsals on "
               "copies of node files only");
  app.add_option("--etcd-endpoint", options.etcd_endpoint,
                 "etcd client URLs, comma-separated (https://127.0.0.1:2379 on a kubeadm node): "
                 "the replace strategy takes a leaving node out only once etcd's member list no "
                 "longer names it. Asked in turn until one answers, after the members' own client "
                 "URLs from the last answer, so that the list is still read once the node first "
                 "named is replaced. Without it, the operator confirms with etcdctl and runs "
                 "`handoffctl nodes remove`");
  app.add_option("--etcd-ca", options.etcd_ca,
                 "etcd's CA (kubeadm: /etc/kubernetes/pki/etcd/ca.crt)");
  app.add_option("--etcd-cert", options.etcd_cert,
                 "A client certificate etcd's CA signed (kubeadm: "
                 "/etc/kubernetes/pki/etcd/healthcheck-client.crt)");
  app.add_option("--etcd-key", options.etcd_key, "Its key");
  app.add_option("--lease-release", options.lease_release,
                 "on: when a move stops the manager holding a lease, release the lease on its "
                 "behalf (the write client-go makes on a voluntary release) once the node's agent "
                 "proves the old process exited, so a successor takes it at its next retry instead "
                 "of waiting the lease out; only if the lease still names the holder recorded "
                 "before the move and was not renewed since, each decision in the history. off: "
                 "leases expire on their own")
      ->check(CLI::IsMember({"on", "off"}))
      ->capture_default_str();
  app.add_option("--gap-limit", options.gap_limit,
                 "The live double-run detector halts a moving rollout when a cloud controller "
                 "that ran has run nowhere for longer than this (the agents sample each "
                 "manager's /healthz?verbose). A successor takes a lease one lease duration after "
                 "it last saw it renewed, a kube-controller-manager waits out two (main, then "
                 "migration): keep it above twice --leader-elect-lease-duration plus a manager's "
                 "start. Two managers running one controller halt it always")
      ->capture_default_str();
  app.add_option("--history-keep", options.history_keep,
                 "How many history entries to keep: the oldest beyond it are deleted (in "
                 "batches of 1000). 0 keeps every entry. Each agent can add at most 30 entries "
                 "at once and one every 2s (connects, disconnects, reports; the moves' commands "
                 "and results are never held back)")
      ->check(CLI::NonNegativeNumber)
      ->capture_default_str();
  app.add_option("--facts-interval", options.facts_interval,
                 "How often to re-read the RBAC and the lease")
      ->capture_default_str();
  app.add_option("--plan-timeout", options.plan_timeout,
                 "How long `handoffctl plan` waits for the agents' diffs")
      ->capture_default_str();
  app.add_option("--shutdown-grace", options.shutdown_grace,
                 "On SIGTERM, how long running calls get before they are cancelled")
      ->capture_default_str();
  app.add_flag("--reflection", options.reflection, "Serve gRPC server reflection");
  app.add_option("--metrics-listen", options.metrics_listen,
                 "Serve Prometheus metrics on http://HOST:PORT/metrics, bound to that address "
                 "only (port 0: any free one, logged at start); off or \"\": none")
      ->capture_default_str();
  app.add_option("--log-format", options.log_format, kLogFormatHelp)
      ->check(CLI::IsMember(LogFormatNames()))
      ->capture_default_str();
  app.add_flag("--reset-damaged-state", options.reset_damaged_state,
               "If <state-dir>/coordinator.db is empty, cut short, damaged or not a handoff "
               "database, keep it (and its -wal/-shm) beside as coordinator.db.damaged-<UTC time> "
               "and start with a new, empty state instead of refusing to start. A sound database "
               "is used as it is. Drop the flag once started");
  std::string config_path;  // read before parsing (cli_config.h); kept for --help
  AddConfigOption(app, config_path, "state-dir: /var/lib/handoff-coordinator");
  std::vector<std::string> args(argv + std::min(argc, 1), argv + argc);
  absl::StatusOr<ConfigArgs> config = LoadConfigFile(app, args);
  if (!config.ok()) return Fail(config.status());
  args.insert(args.begin(), config->args.begin(), config->args.end());
  std::reverse(args.begin(), args.end());  // CLI11 parses a reversed vector
  try {
    app.parse(args);
  } catch (const CLI::ParseError& error) {
    if (error.get_exit_code() != 0 && !config->sources.empty()) {
      return Fail(AttributeToConfigFile(absl::InvalidArgumentError(error.what()), *config));
    }
    int code = app.exit(error, std::cout, std::cerr);
    return code == 0 ? kExitOk : kExitConfig;
  }
  absl::StatusOr<LogFormat> log_format = ParseLogFormat(options.log_format);
  if (!log_format.ok()) return Fail(AttributeToConfigFile(log_format.status(), *config));
  LogOptions log_options;
  log_options.name = "handoff-coordinator";
  log_options.format = *log_format;
  log_options.journal_stream = std::getenv("JOURNAL_STREAM");
  // Not registered by name: RunCoordinator may run more than once in a process (tests).
  spdlog::set_default_logger(MakeLogger(log_options));
  return Run(options, *config);
}

}  // namespace handoff::server
