// handoffctl lease get|watch: who holds a lease, and who holds the migration lease over time
// (coordinator/kube/lease.h).
#include <memory>

#include "common/base/strings.h"
#include "coordinator/kube/lease.h"
#include "ctl/command_context.h"
#include "nlohmann/json.hpp"

namespace handoff::ctl {
namespace {

using nlohmann::ordered_json;

struct LeaseGetFlags {
  ConnectionOptions connection;
  std::string format = "text";
  std::string name;
  std::string ns = "kube-system";
  std::string migration_lease = std::string(kube::kMigrationLeaseName);
};

struct LeaseWatchFlags {
  ConnectionOptions connection;
  std::string format = "text";
  std::string ns = "kube-system";
  std::string migration_lease = std::string(kube::kMigrationLeaseName);
  std::string duration = "0s";
  std::string interval = "1s";
};

ordered_json TimeJson(const std::optional<absl::Time>& time) {
  return time ? ordered_json(kube::FormatTimestamp(*time)) : ordered_json(nullptr);
}

ordered_json OwnershipJson(const kube::Ownership& ownership) {
  ordered_json json;
  json["holder"] = std::string(kube::HolderName(ownership.holder));
  json["node"] = ownership.node;
  json["identity"] = ownership.identity;
  json["acquired"] = TimeJson(ownership.acquired);
  json["expiry"] = TimeJson(ownership.expiry);
  json["reason"] = ownership.reason;
  return json;
}

std::string LeaseState(const kube::LeaseInfo& lease, absl::Time now) {
  if (lease.holder_identity.empty()) return "released (no holder)";
  const std::optional<absl::Time> expiry = lease.Expiry();
  if (!expiry) return "no renewTime or leaseDurationSeconds";
  if (lease.HeldAt(now)) {
    return StrCat("held until ", kube::FormatTimestamp(*expiry), " (",
                  kube::FormatElapsed(*expiry - now), " from now)");
  }
  return StrCat("expired at ", kube::FormatTimestamp(*expiry), " (",
                kube::FormatElapsed(now - *expiry), " ago)");
}

int Get(CommandContext& context, const LeaseGetFlags& flags) {
  absl::StatusOr<std::unique_ptr<kube::KubeClient>> client = context.Connect(flags.connection);
  if (!client.ok()) return context.Fail(client.status());
  absl::StatusOr<kube::LeaseInfo> lease = kube::GetLease(**client, flags.ns, flags.name);
  if (!lease.ok()) return context.Fail(lease.status());
  const absl::Time now = context.clock().Now();
  // For the migration lease, also who that holder is.
  std::optional<kube::Ownership> ownership;
  if (flags.name == flags.migration_lease) {
    kube::LeaseNames names;
    names.ns = flags.ns;
    names.migration = flags.migration_lease;
    absl::StatusOr<kube::LeaseSet> leases = kube::ReadLeases(**client, names);
    if (!leases.ok()) return context.Fail(leases.status());
    ownership = kube::ClassifyMigrationLease(*leases, now);
  }
  if (flags.format == "json") {
    ordered_json json;
    json["namespace"] = lease->ns;
    json["name"] = lease->name;
    json["holderIdentity"] = lease->holder_identity;
    json["node"] = kube::HostnameOfIdentity(lease->holder_identity);
    json["acquireTime"] = TimeJson(lease->acquire_time);
    json["renewTime"] = TimeJson(lease->renew_time);
    json["leaseDurationSeconds"] = lease->lease_duration_seconds
                                       ? ordered_json(*lease->lease_duration_seconds)
                                       : ordered_json(nullptr);
    json["leaseTransitions"] = lease->lease_transitions;
    json["held"] = lease->HeldAt(now);
    json["expiry"] = TimeJson(lease->Expiry());
    if (ownership) json["migrationOwner"] = OwnershipJson(*ownership);
    context.out() << json.dump(2) << "\n";
    return kExitOk;
  }
  std::ostream& out = context.out();
  out << "lease " << lease->ns << "/" << lease->name << "\n";
  out << "  holder:       "
      << (lease->holder_identity.empty()
              ? std::string("(none)")
              : StrCat(lease->holder_identity, " (node ",
                       kube::HostnameOfIdentity(lease->holder_identity), ")"))
      << "\n";
  out << "  acquired:     "
      << (lease->acquire_time ? kube::FormatTimestamp(*lease->acquire_time) : "(unset)") << "\n";
  out << "  renewed:      "
      << (lease->renew_time ? kube::FormatTimestamp(*lease->renew_time) : "(unset)") << "\n";
  out << "  duration:     "
      << (lease->lease_duration_seconds ? StrCat(*lease->lease_duration_seconds, "s")
                                        : std::string("(unset)"))
      << "\n";
  out << "  transitions:  " << lease->lease_transitions << "\n";
  out << "  state:        " << LeaseState(*lease, now) << "\n";
  if (ownership) out << "  run by:       " << ownership->Describe() << "\n";
  return kExitOk;
}

std::string EventText(const kube::LeaseEvent& event, const std::string& lease) {
  const std::string when = kube::FormatTimestamp(event.observed);
  if (event.kind == kube::LeaseEvent::Kind::kGapStarted) {
    return StrCat(when, "  gap: nobody holds ", lease, " since ", kube::FormatTimestamp(event.at),
                  " (", event.ownership.reason, ")");
  }
  std::string text = StrCat(when, "  ", lease, " held by ", event.ownership.Describe(), " since ",
                            kube::FormatTimestamp(event.at));
  if (event.gap) {
    StrAppend(&text, ", after a gap of ", kube::FormatElapsed(*event.gap), " from ",
              kube::FormatTimestamp(*event.gap_start));
  }
  if (!event.ownership.identity.empty()) StrAppend(&text, " [", event.ownership.identity, "]");
  return text;
}

int Watch(CommandContext& context, const LeaseWatchFlags& flags) {
  kube::WatchOptions options;
  if (!absl::ParseDuration(flags.duration, &options.duration) ||
      options.duration < absl::ZeroDuration()) {
    return context.Fail(absl::InvalidArgumentError(
        StrCat("--duration \"", flags.duration, "\" is not a duration such as 10m or 0s")));
  }
  if (!absl::ParseDuration(flags.interval, &options.interval) ||
      options.interval <= absl::ZeroDuration()) {
    return context.Fail(absl::InvalidArgumentError(
        StrCat("--interval \"", flags.interval, "\" is not a positive duration such as 1s")));
  }
  absl::StatusOr<std::unique_ptr<kube::KubeClient>> client = context.Connect(flags.connection);
  if (!client.ok()) return context.Fail(client.status());
  kube::LeaseNames names;
  names.ns = flags.ns;
  names.migration = flags.migration_lease;
  kube::LeaseWatcher watcher(**client, context.clock(), names);
  const std::string lease = StrCat(names.ns, "/", names.migration);
  const bool json = flags.format == "json";
  std::ostream& out = context.out();
  auto on_event = [&](const kube::LeaseEvent& event) {
    if (json) {
      ordered_json line;
      line["observed"] = kube::FormatTimestamp(event.observed);
      line["event"] = event.kind == kube::LeaseEvent::Kind::kGapStarted ? "gap" : "held";
      line["at"] = kube::FormatTimestamp(event.at);
      line["owner"] = OwnershipJson(event.ownership);
      if (event.gap) {
        line["gapStart"] = kube::FormatTimestamp(*event.gap_start);
        line["gapSeconds"] = absl::ToDoubleSeconds(*event.gap);
      }
      out << line.dump() << std::endl;
    } else {
      out << EventText(event, lease) << std::endl;  // flushed: someone is watching
    }
  };
  auto on_error = [&](const absl::Status& status) {
    context.err() << kube::FormatTimestamp(context.clock().Now())
                  << "  cannot read the leases (will retry): " << status.message() << std::endl;
  };
  const CtlEnvironment& environment = context.environment();
  std::function<bool()> stop = [&environment] {
    return environment.interrupted && environment.interrupted();
  };
  absl::Status watched =
      kube::RunLeaseWatch(watcher, context.clock(), options, on_event, on_error, stop);
  const kube::WatchSummary summary = watcher.summary();
  if (json) {
    ordered_json line;
    line["summary"] = {{"start", kube::FormatTimestamp(summary.start)},
                       {"end", kube::FormatTimestamp(summary.end)},
                       {"polls", summary.polls},
                       {"readErrors", summary.errors},
                       {"holderChanges", summary.holder_changes},
                       {"gaps", summary.gaps},
                       {"gapSeconds", absl::ToDoubleSeconds(summary.gap_total)},
                       {"longestGapSeconds", absl::ToDoubleSeconds(summary.longest_gap)},
                       {"inGapAtEnd", summary.in_gap_at_end}};
    ordered_json held = ordered_json::object();
    for (const auto& [holder, duration] : summary.held_for) {
      held[holder] = absl::ToDoubleSeconds(duration);
    }
    line["summary"]["heldForSeconds"] = held;
    out << line.dump() << std::endl;
  } else if (summary.polls > 0) {
    out << "summary: " << kube::FormatTimestamp(summary.start) << " to "
        << kube::FormatTimestamp(summary.end) << ", " << summary.polls << " poll(s), "
        << summary.holder_changes << " holder change(s), " << summary.gaps << " gap(s)";
    if (summary.gaps > 0) {
      out << " (" << kube::FormatElapsed(summary.gap_total) << " in all, longest "
          << kube::FormatElapsed(summary.longest_gap) << ")";
    }
    if (summary.in_gap_at_end) out << ", nobody holds it now";
    if (summary.errors > 0) out << ", " << summary.errors << " failed read(s)";
    out << "\n";
    for (const auto& [holder, duration] : summary.held_for) {
      out << "  " << holder << ": " << kube::FormatElapsed(duration) << "\n";
    }
  }
  if (!watched.ok()) return context.Fail(watched);
  if (summary.polls == 0) {
    return context.Fail(
        absl::UnavailableError("could not read the leases even once; see the errors above"));
  }
  return summary.gaps > 0 ? kExitProblems : kExitOk;
}

}  // namespace

void AddLeaseCommands(CLI::App& app, CommandContext& context) {
  CLI::App* lease = app.add_subcommand(
      "lease",
      "Leases: the holder of the migration lease is the one manager running the cloud "
      "controllers");
  lease->require_subcommand(1);

  auto get_flags = std::make_shared<LeaseGetFlags>();
  CLI::App* get = lease->add_subcommand(
      "get",
      "Show a lease's holder, acquire and renew times, duration, transitions and whether it is "
      "held now; for the migration lease also which manager on which node holds it");
  get->add_option("NAME", get_flags->name,
                  "The lease, e.g. cloud-provider-extraction-migration, kube-controller-manager")
      ->required();
  get->add_option("-n,--namespace", get_flags->ns, "Its namespace (default kube-system)");
  get->add_option("--migration-lease", get_flags->migration_lease,
                  "Name of the migration lease (default cloud-provider-extraction-migration)");
  AddConnectionOptions(*get, get_flags->connection);
  AddOutputOption(*get, get_flags->format);
  get->callback([&context, get_flags] { context.exit_code = Get(context, *get_flags); });

  auto watch_flags = std::make_shared<LeaseWatchFlags>();
  CLI::App* watch = lease->add_subcommand(
      "watch",
      "Poll the migration lease and the managers' main leases, and print each change of holder "
      "(kube-controller-manager or cloud-controller-manager, and on which node) and each gap in "
      "which nobody held a valid lease, with times; then a summary. Exit code 1 when there was "
      "a gap");
  watch->add_option("--duration", watch_flags->duration,
                    "How long to watch, e.g. 10m; 0s (default) until interrupted (Ctrl-C)");
  watch->add_option("--interval", watch_flags->interval, "Time between polls (default 1s)");
  watch->add_option("-n,--namespace", watch_flags->ns,
                    "Namespace of the leases (default kube-system)");
  watch->add_option("--migration-lease", watch_flags->migration_lease,
                    "Name of the migration lease (default cloud-provider-extraction-migration)");
  AddConnectionOptions(*watch, watch_flags->connection);
  watch
      ->add_option("-o,--output", watch_flags->format,
                   "Output format: text (default) or json (one object per line)")
      ->check(CLI::IsMember({"text", "json"}));
  watch->callback([&context, watch_flags] { context.exit_code = Watch(context, *watch_flags); });
}

}  // namespace handoff::ctl
