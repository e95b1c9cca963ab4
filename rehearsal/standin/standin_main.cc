#include "rehearsal/standin/standin_main.h"

#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <random>

#include "common/base/strings.h"
#include "common/fs/host_path.h"
#include "common/fs/file_system.h"
#include "common/system/clock.h"
#include "common/system/service_lifecycle.h"
#include "common/kube/client.h"
#include "common/kube/http_transport.h"
#include "common/kube/kubeconfig.h"
#include "rehearsal/standin/controller_manager.h"
#include "rehearsal/standin/credential_provider.h"
#include "rehearsal/standin/controller_plan.h"
#include "rehearsal/standin/health_server.h"
#include "rehearsal/standin/run_recorder.h"
#include "rehearsal/standin/sandbox_environment.h"
#include "rehearsal/standin/standin_flags.h"
#include "spdlog/sinks/stdout_sinks.h"

namespace handoff::standin {
namespace {

std::shared_ptr<spdlog::logger> NewLogger(std::string_view name) {
  auto logger = std::make_shared<spdlog::logger>(std::string(name),
                                                 std::make_shared<spdlog::sinks::stderr_sink_mt>());
  logger->set_pattern("%Y-%m-%dT%H:%M:%S.%e %L %n[%P] %v");
  logger->flush_on(spdlog::level::info);
  return logger;
}

// A random (version 4) UUID, as k8s.io/apimachinery's uuid.NewUUID gives the identity suffix.
std::string NewUuid() {
  std::random_device device;
  unsigned char bytes[16];
  for (unsigned char& byte : bytes) byte = static_cast<unsigned char>(device() & 0xff);
  bytes[6] = static_cast<unsigned char>((bytes[6] & 0x0f) | 0x40);
  bytes[8] = static_cast<unsigned char>((bytes[8] & 0x3f) | 0x80);
  std::string text;
  for (int i = 0; i < 16; ++i) {
    if (i == 4 || i == 6 || i == 8 || i == 10) text.push_back('-');
    char hex[3];
    std::snprintf(hex, sizeof(hex), "%02x", bytes[i]);
    text.append(hex, 2);
  }
  return text;
}

std::string Hostname() {
  char name[256] = {};
  if (gethostname(name, sizeof(name) - 1) != 0) return "";
  return name;
}

// A file named by a flag, read as the container would see it.
absl::StatusOr<std::string> ReadContainerFile(const FileSystem& fs, const MountTable& mounts,
                                              const std::string& path) {
  absl::StatusOr<std::string> host_path = mounts.Resolve(path);
  if (!host_path.ok()) return host_path.status();
  absl::StatusOr<std::string> text = fs.ReadFile(*host_path);
  if (!text.ok()) {
    return absl::Status(text.status().code(),
                        *host_path == path
                            ? std::string(text.status().message())
                            : StrCat(text.status().message(), " (", path, " in the container)"));
  }
  return text;
}

int BadConfiguration(spdlog::logger& logger, const std::string& message) {
  logger.error("{}", message);
  return kExitBadConfiguration;
}

std::vector<std::string> HealthPaths(Role role) {
  switch (role) {
    case Role::kKubeApiserver:
      return {"/livez", "/readyz", "/healthz"};
    case Role::kKubeScheduler:
      return {"/healthz", "/livez", "/readyz"};
    default:
      return {"/healthz"};
  }
}

struct Serving {
  std::unique_ptr<HealthServer> server;
  int exit_code = 0;  // non-zero: could not start
};

Serving StartHealth(Role role, const StandinOptions& options, absl::Time now,
                    spdlog::logger& logger,
                    std::shared_ptr<const NamedChecks> checks = nullptr) {
  Serving serving;
  if (options.secure_port == 0) {
    logger.info("--secure-port=0: not serving health");
    return serving;
  }
  HealthServerOptions health;
  health.bind_address = options.bind_address;
  health.port = options.secure_port;
  health.paths = HealthPaths(role);
  health.component = std::string(RoleName(role));
  health.checks = std::move(checks);
  if (const char* root = std::getenv("HANDOFF_SANDBOX_ROOT"); root != nullptr && *root != '\0') {
    health.unhealthy_marker =
        std::string(root) + "/etc/handoff-sandbox/unhealthy/" + health.component;
  }
  absl::StatusOr<std::unique_ptr<HealthServer>> server = HealthServer::Start(health, now);
  if (!server.ok()) {
    logger.error("{}", std::string(server.status().message()));
    serving.exit_code = kExitLeaseLost;
    return serving;
  }
  serving.server = *std::move(server);
  logger.info("serving securely on {}:{} ({})", options.bind_address, options.secure_port,
              StrJoin(health.paths, ", "));
  return serving;
}

absl::StatusOr<std::optional<leadermigration::Config>> LoadMigrationConfig(
    const StandinOptions& options, const KubeVersion& version, const FileSystem& fs,
    const MountTable& mounts) {
  if (!options.enable_leader_migration || !options.leader_elect ||
      options.leader_migration_config.empty()) {
    return std::optional<leadermigration::Config>();
  }
  const std::string& path = options.leader_migration_config;
  absl::StatusOr<std::string> text = ReadContainerFile(fs, mounts, path);
  if (!text.ok()) {
    return absl::InvalidArgumentError(
        StrCat("--leader-migration-config=", path, ": cannot read it: ", text.status().message()));
  }
  leadermigration::LintOptions lint;
  lint.version = version;
  absl::StatusOr<leadermigration::Config> config = leadermigration::ParseAndValidate(*text, lint);
  if (!config.ok()) {
    return absl::InvalidArgumentError(
        StrCat("--leader-migration-config=", path,
               " is not a valid LeaderMigrationConfiguration: ", config.status().message()));
  }
  return std::optional<leadermigration::Config>(*std::move(config));
}

absl::StatusOr<kube::ClusterCredentials> LoadCredentials(const StandinOptions& options,
                                                         const FileSystem& fs,
                                                         const MountTable& mounts) {
  if (options.kubeconfig.empty()) {
    return absl::InvalidArgumentError(
        "--kubeconfig is required with leader election (the stand-in has no in-cluster "
        "configuration)");
  }
  absl::StatusOr<std::string> text = ReadContainerFile(fs, mounts, options.kubeconfig);
  if (!text.ok()) {
    return absl::InvalidArgumentError(
        StrCat("--kubeconfig=", options.kubeconfig, ": cannot read it: ", text.status().message()));
  }
  absl::StatusOr<kube::ClusterCredentials> credentials = kube::ParseKubeconfig(
      *text, options.kubeconfig, "",
      [&fs, &mounts](const std::string& path) { return ReadContainerFile(fs, mounts, path); });
  if (!credentials.ok()) {
    return absl::InvalidArgumentError(
        StrCat("--kubeconfig=", options.kubeconfig, ": ", credentials.status().message()));
  }
  return credentials;
}

}  // namespace

int RunStandin(int argc, const char* const* argv) {
  const std::string argv0 = argc > 0 ? argv[0] : "";
  if (BaseName(argv0) == kEcrCredentialProviderName) return RunCredentialProvider();
  absl::StatusOr<Role> role = RoleFromArgv0(argv0);
  if (!role.ok()) {
    return BadConfiguration(*NewLogger("handoff-standin"), std::string(role.status().message()));
  }
  std::shared_ptr<spdlog::logger> logger = NewLogger(RoleName(*role));
  // Before any thread starts (service_lifecycle.h). The sandbox's kubelet, not systemd, runs the
  // stand-in: nothing to notify.
  std::unique_ptr<ServiceNotifier> notifier = NewNullNotifier();
  ServiceLifecycleOptions lifecycle_options;
  lifecycle_options.logger = logger;
  lifecycle_options.stop_means =
      ManagerOf(*role) ? "running controllers are recorded as stopped; no lease is released"
                       : "health stops being served";
  absl::StatusOr<std::unique_ptr<ServiceLifecycle>> lifecycle =
      ServiceLifecycle::Start(std::move(lifecycle_options), *notifier);
  if (!lifecycle.ok()) {
    logger->error("{}", std::string(lifecycle.status().message()));
    return kExitLeaseLost;
  }

  absl::StatusOr<SandboxEnvironment> env = ReadSandboxEnvironment(
      [](const char* name) -> std::optional<std::string> {
        const char* value = std::getenv(name);
        if (value == nullptr) return std::nullopt;
        return std::string(value);
      },
      Hostname());
  if (!env.ok()) return BadConfiguration(*logger, std::string(env.status().message()));

  // Recorded before the flags are checked, so that the records show a process that started and
  // refused its configuration (the kubelet records its exit).
  std::unique_ptr<Clock> clock = NewRealClock();
  std::unique_ptr<RecordSink> sink = env->records_path.empty()
                                         ? NewNullRecordSink()
                                         : NewFileRecordSink(env->records_path, logger);
  RunRecorder recorder(*sink, *clock,
                       ProcessIdentity{env->node, std::string(RoleName(*role)), getpid()});
  recorder.ProcessStart();

  absl::StatusOr<StandinOptions> options =
      ParseStandinFlags(*role, std::vector<std::string>(argv + std::min(argc, 1), argv + argc));
  if (!options.ok()) return BadConfiguration(*logger, std::string(options.status().message()));
  const KubeVersion version = env->version.value_or(DefaultVersion(*role));
  logger->info("{} {} stand-in on node {}", RoleName(*role), version.ToString(), env->node);
  if (!options->ignored_flags.empty()) {
    logger->info("flags accepted without effect: {}", StrJoin(options->ignored_flags, " "));
  }

  const std::optional<leadermigration::Component> manager = ManagerOf(*role);
  if (!manager) {
    Serving serving = StartHealth(*role, *options, clock->Now(), *logger);
    if (serving.exit_code != 0) return serving.exit_code;
    while (!(*lifecycle)->WaitTimeoutOrShutdown(absl::InfiniteDuration())) {
    }
    return kExitStopped;
  }

  std::unique_ptr<FileSystem> fs = NewPosixFileSystem("");
  absl::StatusOr<std::optional<leadermigration::Config>> migration_config =
      LoadMigrationConfig(*options, version, *fs, env->mounts);
  if (!migration_config.ok()) {
    return BadConfiguration(*logger, std::string(migration_config.status().message()));
  }
  if (options->enable_leader_migration && !options->leader_elect) {
    logger->warn("--enable-leader-migration has no effect with --leader-elect=false");
  } else if (!options->enable_leader_migration && !options->leader_migration_config.empty()) {
    logger->warn("--leader-migration-config is ignored without --enable-leader-migration");
  }

  ControllerSettings settings;
  settings.component = *manager;
  settings.version = version;
  settings.cloud_provider = options->cloud_provider;
  settings.controllers = options->controllers;
  settings.allocate_node_cidrs = options->allocate_node_cidrs;
  settings.configure_cloud_routes = options->configure_cloud_routes;
  settings.cluster_cidr = options->cluster_cidr;
  settings.leader_elect = options->leader_elect;
  settings.enable_leader_migration = options->enable_leader_migration;
  settings.migration_config = *migration_config;
  absl::StatusOr<ControllerPlan> plan = PlanControllers(settings);
  if (!plan.ok()) return BadConfiguration(*logger, std::string(plan.status().message()));
  for (const ControllerDecision& decision : plan->decisions) {
    logger->info(
        "controller {} ({}): {}", CanonicalControllerName(decision.controller), decision.name,
        decision.runs
            ? StrCat("runs under the ", LockName(decision.lock), " lease (", decision.reason, ")")
            : StrCat("does not run: ", decision.reason));
  }

  // The API client: only leader election talks to the API server.
  std::unique_ptr<kube::KubeClient> client;
  RequestDeadlineTransport* deadline = nullptr;
  if (options->leader_elect) {
    absl::StatusOr<kube::ClusterCredentials> credentials =
        LoadCredentials(*options, *fs, env->mounts);
    if (!credentials.ok()) {
      return BadConfiguration(*logger, std::string(credentials.status().message()));
    }
    for (const std::string& warning : credentials->warnings) logger->warn("{}", warning);
    absl::StatusOr<std::unique_ptr<kube::HttpTransport>> curl =
        kube::NewCurlTransport(*credentials);
    if (!curl.ok()) {
      return BadConfiguration(
          *logger, StrCat("--kubeconfig=", options->kubeconfig, ": ", curl.status().message()));
    }
    auto capped = std::make_unique<RequestDeadlineTransport>(*std::move(curl), *clock);
    deadline = capped.get();
    kube::ClientOptions client_options = kube::ClientOptionsFor(*credentials);
    // resourcelock.NewFromKubeconfig: the lock's client times out after half the renew deadline,
    // at least a second. Retries are the election loop's: one request per attempt.
    client_options.request_timeout = std::max(options->renew_deadline / 2, absl::Seconds(1));
    client_options.max_retries = 0;
    client = std::make_unique<kube::KubeClient>(std::move(capped), *clock, client_options);
  }

  ElectionConfig main_election;
  main_election.ns = options->resource_namespace;
  main_election.name = options->resource_name;
  main_election.identity = StrCat(env->node, "_", NewUuid());
  main_election.lease_duration = options->lease_duration;
  main_election.renew_deadline = options->renew_deadline;
  main_election.retry_period = options->retry_period;
  const ManagerConfig manager_config =
      ManagerConfigFor(*plan, options->leader_elect, main_election);
  if (options->leader_elect) logger->info("leader-election identity {}", main_election.identity);

  auto started = std::make_shared<NamedChecks>();
  Serving serving = StartHealth(*role, *options, clock->Now(), *logger, started);
  if (serving.exit_code != 0) return serving.exit_code;

  std::mt19937_64 generator{std::random_device{}()};
  std::uniform_real_distribution<double> unit(0.0, 1.0);
  ControllerManager controller_manager(manager_config, client.get(), deadline, *clock, recorder,
                                       logger, [&generator, &unit] { return unit(generator); });
  controller_manager.ListStartedIn(started.get());
  (*lifecycle)->SetOnStop([&controller_manager] { controller_manager.Stop(); });
  const ManagerOutcome outcome = controller_manager.Run();
  (*lifecycle)->SetOnStop(nullptr);
  if (serving.server) serving.server->Stop();
  return outcome == ManagerOutcome::kStopped ? kExitStopped : kExitLeaseLost;
}

}  // namespace handoff::standin
