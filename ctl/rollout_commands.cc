// handoffctl plan|start|status|pause|resume|abort|rollback|finalize|history|nodes: the operator's
// side of the coordinator's OperatorService (proto/handoff/v1/handoff.proto).
#include <algorithm>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/time/time.h"
#include "common/base/strings.h"
#include "coordinator/kube/lease.h"
#include "ctl/command_context.h"
#include "google/protobuf/util/json_util.h"
#include "proto/vocabulary/node_state.h"
#include "proto/vocabulary/phase.h"
#include "proto/vocabulary/strategy.h"

namespace handoff::ctl {
namespace {

constexpr int kProgressBarWidth = 8;
// Cursor to the top left, then clear the screen: each status of a watch replaces the last one.
constexpr char kClearScreen[] = "\x1b[H\x1b[2J";
// status --watch, reconnecting: the first wait, the longest, and how often Ctrl-C is looked at.
constexpr absl::Duration kReconnectFirstBackoff = absl::Milliseconds(250);
constexpr absl::Duration kReconnectMaxBackoff = absl::Seconds(5);
constexpr absl::Duration kReconnectPollInterval = absl::Milliseconds(100);
// What the coordinator sends at most when HistoryRequest.limit is 0.
constexpr int kDefaultHistoryLimit = 1000;

constexpr char kJsonShape[] =
    "-o json prints the proto3 JSON mapping of the response, on one line, with the field names "
    "of proto/handoff/v1/handoff.proto (rollout_id, steps_done, ...): enums as their names "
    "(NODE_STATE_MIGRATED, HALTED), 64-bit integers as strings, every scalar field present even "
    "when zero or empty, and a message field left out when unset (in_flight when no move is in "
    "flight).";

constexpr char kExitCodes[] =
    "2 refused: bad usage, an unreadable certificate or key, or the coordinator refused the call "
    "(its message is shown); 3 the coordinator could not be reached or did not answer within "
    "--timeout.";

// The help's footer: the JSON shape, then the exit codes, `problems` being what exit code 1 means
// for this command ("" when it has none).
std::string Footer(std::string_view problems, std::string_view json_extra = "") {
  std::string footer = StrCat(kJsonShape, json_extra, "\n\nExit codes: 0 success; ");
  if (!problems.empty()) StrAppend(&footer, "1 ", problems, "; ");
  return StrCat(footer, kExitCodes);
}

struct Flags {
  CoordinatorOptions coordinator;
  std::string format = "text";
};

struct PlanFlags : Flags {
  std::string goal;
  std::string strategy;  // "" = the rollout's own
};

struct StartFlags : Flags {
  bool finalize = false;
  bool prepare_only = false;
  std::string strategy = "leader-migration";
  std::vector<std::string> ignore_preflight;
  std::string ignore_reason;
  std::string max_unavailable;  // "" keeps the rollout's
  int failure_budget = 0;       // 0 keeps the rollout's
};

struct NodesFlags : Flags {
  int limit = 0;
  std::string after;
};

struct ReasonFlags : Flags {
  std::string reason;
};

struct MembershipFlags : ReasonFlags {
  std::string node;
};

struct RollbackFlags : Flags {
  std::string to;
  std::string strategy = "in-place";
};

struct StatusFlags : Flags {
  bool watch = false;
};

struct HistoryFlags : Flags {
  int64_t after = 0;
  int32_t limit = 0;
};

// A state's name; "-" for one the wire leaves unspecified.
std::string StateText(v1::NodeState state) { return std::string(WireStateName(state, "-")); }

// A node's state for the STATE column: "unknown (agent away)" when the coordinator does not know
// it (never "inconsistent": that is for a node its connected agent reports needs repair).
std::string NodeStateCell(v1::NodeState state, bool connected) {
  if (state != v1::NODE_STATE_UNSPECIFIED) return StateText(state);
  return connected ? "unknown" : "unknown (agent away)";
}

// The wire's value of a target state's name; UNSPECIFIED for any other text.
v1::NodeState StateNamed(const std::string& name) {
  absl::StatusOr<NodeState> state = ParseTargetState(name);
  return state.ok() ? ToProto(*state) : v1::NODE_STATE_UNSPECIFIED;
}

std::string Move(v1::NodeState from, v1::NodeState to) {
  return StrCat(StateText(from), " -> ", StateText(to));
}

std::string TimeText(int64_t unix_ms) {
  if (unix_ms == 0) return "-";
  return kube::FormatTimestamp(absl::FromUnixMillis(unix_ms));
}

std::string YesNo(bool value) { return value ? "yes" : "no"; }

std::string OrDash(const std::string& text) { return text.empty() ? "-" : text; }

std::string ProgressBar(int32_t done, int32_t total) {
  const int32_t shown = std::clamp(done, 0, std::max(total, 0));
  const int filled = total > 0 ? static_cast<int>(int64_t{shown} * kProgressBarWidth / total) : 0;
  return StrCat("[", std::string(filled, '#'), std::string(kProgressBarWidth - filled, '-'), "] ",
                done, "/", total);
}

// Columns padded to their widest cell and separated by two spaces; the last column is not padded.
std::string Table(const std::vector<std::vector<std::string>>& rows, std::string_view indent = "") {
  std::vector<size_t> widths;
  for (const std::vector<std::string>& row : rows) {
    if (widths.size() < row.size()) widths.resize(row.size(), 0);
    for (size_t i = 0; i < row.size(); ++i) widths[i] = std::max(widths[i], row[i].size());
  }
  std::string text;
  for (const std::vector<std::string>& row : rows) {
    std::string line(indent);
    for (size_t i = 0; i < row.size(); ++i) {
      line += row[i];
      if (i + 1 < row.size()) line += std::string(widths[i] - row[i].size() + 2, ' ');
    }
    while (!line.empty() && line.back() == ' ') line.pop_back();
    StrAppend(&text, line, "\n");
  }
  return text;
}

std::string FactsText(const v1::RolloutStatus& status) {
  if (!status.has_facts()) return "not checked yet";
  const v1::ClusterFacts& facts = status.facts();
  std::string text =
      StrCat("rbac ", facts.rbac_ready() ? "ready" : "NOT ready", ", migration lease ",
             facts.lease_held_by_healthy_manager() ? "held by a healthy manager"
                                                   : "NOT held by a healthy manager",
             " (", facts.source().empty() ? "unknown source" : facts.source());
  if (facts.checked_unix_ms() != 0)
    StrAppend(&text, ", checked ", TimeText(facts.checked_unix_ms()));
  text += ")";
  if (!facts.detail().empty()) StrAppend(&text, ": ", facts.detail());
  return text;
}

std::string Runner(const v1::ControllerRunner& runner) {
  return StrCat(runner.manager(), " on ", runner.node(), " (pid ", runner.pid(), ", since ",
                TimeText(runner.since_unix_ms()), ")");
}

std::string GapText(int64_t start_ms, int64_t end_ms) {
  return StrCat(absl::FormatDuration(absl::Milliseconds(end_ms - start_ms)), " (", TimeText(start_ms),
                " to ", TimeText(end_ms), ")");
}

// Who runs each cloud controller now, as the managers themselves say (the coordinator's live
// double-run detector); nothing when no agent samples its managers.
std::string CloudControllersText(const v1::RolloutStatus& status) {
  if (status.cloud_controllers().empty()) return "";
  std::vector<std::vector<std::string>> rows = {{"CONTROLLER", "RUNS IN", "LAST GAP"}};
  for (const v1::CloudControllerView& view : status.cloud_controllers()) {
    std::string runs;
    if (view.runners_size() > 1) runs = "TWICE: ";
    for (int i = 0; i < view.runners_size(); ++i) {
      StrAppend(&runs, i > 0 ? " and " : "", Runner(view.runners(i)));
    }
    if (view.runners().empty()) {
      runs = view.none_since_unix_ms() != 0
                 ? StrCat("nothing since ", TimeText(view.none_since_unix_ms()))
                 : "nothing seen";
    }
    if (!view.unknown_reason().empty()) StrAppend(&runs, " [unknown: ", view.unknown_reason(), "]");
    rows.push_back({view.name(), runs,
                    view.last_gap_end_unix_ms() == 0
                        ? "-"
                        : GapText(view.last_gap_start_unix_ms(), view.last_gap_end_unix_ms())});
  }
  return StrCat("\ncloud controllers (from the managers' /healthz, sampled by the agents):\n",
                Table(rows));
}

std::string Seconds(int64_t ms) { return StrCat(ms / 1000, ".", (ms % 1000) / 100, " s"); }

// The workers' counts, the batch in flight, the failures and the Nodes without an agent, the
// replace strategy's workers leaving and joining with the commands; then whether the cluster may
// be upgraded to 1.27 (W3).
std::string WorkersText(const v1::RolloutStatus& status) {
  const v1::WorkerSummary& workers = status.workers();
  std::string text;
  if (workers.known() > 0 || workers.without_agent() > 0) {
    StrAppend(&text, "\nworkers:    ", workers.known() + workers.without_agent(), " (",
              workers.known(), " with an agent, ", workers.connected(), " connected): ",
              workers.in_tree(), " in-tree, ", workers.external(), " external, ",
              workers.inconsistent(), " inconsistent or away");
    if (workers.without_agent() > 0) {
      StrAppend(&text, ", ", workers.without_agent(), " without an agent");
    }
    text += "\n";
    if (workers.target() != v1::NODE_STATE_UNSPECIFIED) {
      StrAppend(&text, "            towards ", NodeStateName(FromProto(workers.target()).value_or(NodeState::kInconsistent)),
                ", ", workers.max_unavailable(), " at a time, pausing after ",
                workers.failure_budget(), " failed\n");
    }
    auto names = [](const google::protobuf::RepeatedPtrField<std::string>& list, int count) {
      std::string joined = StrJoin(list, ", ");
      if (count > list.size()) StrAppend(&joined, " and ", count - list.size(), " more");
      return joined;
    };
    if (workers.in_flight() > 0) {
      StrAppend(&text, "            moving: ", names(workers.batch(), workers.in_flight()), "\n");
    }
    for (const std::string& failure : workers.failures()) {
      StrAppend(&text, "            failed: ", failure, "\n");
    }
    if (workers.failed() > workers.failures_size()) {
      StrAppend(&text, "            failed: ", workers.failed() - workers.failures_size(),
                " more (handoffctl nodes)\n");
    }
    if (workers.without_agent() > 0) {
      StrAppend(&text, "            ", workers.without_agent(),
                workers.without_agent() == 1 ? " worker has" : " workers have",
                " no agent: their kubelets cannot be moved (",
                names(workers.without_agent_names(), workers.without_agent()), ")\n");
    }
    if (workers.has_replacement()) {
      const v1::WorkerReplacement& replacement = workers.replacement();
      StrAppend(&text, "            replacing: ", replacement.old_left(),
                " of the old version left, ", replacement.size(), " kept, ",
                replacement.joins_wanted(), " new wanted now\n");
      if (replacement.leaving() > 0) {
        StrAppend(&text, "            leaving: ",
                  names(replacement.leaving_names(), replacement.leaving()), "\n");
      }
      for (const std::string& unverified : replacement.unverified()) {
        StrAppend(&text, "            not serving yet: ", unverified, "\n");
      }
      if (replacement.leaving() > 0 || replacement.joins_wanted() > 0) {
        for (int i = 0; i < replacement.commands_size(); ++i) {
          StrAppend(&text, "              ", i + 1, ". ", replacement.commands(i), "\n");
        }
      }
    }
  }
  if (status.goal() != v1::NODE_STATE_UNSPECIFIED && status.has_upgrade_gate()) {
    const v1::UpgradeGate& gate = status.upgrade_gate();
    if (gate.open()) {
      text += "\nupgrade:    the cluster may now be upgraded to 1.27 (every kubelet and manager "
              "is external, every Node initialized)\n";
    } else {
      text += "\nupgrade:    not yet to 1.27:\n";
      for (const std::string& reason : gate.reasons()) StrAppend(&text, "  - ", reason, "\n");
    }
  }
  return text;
}

// The replace strategy's step while it waits for a join or a removal: what, and the commands.
std::string ReplacementText(const v1::RolloutStatus& status) {
  if (!status.has_replacement()) return "";
  const v1::Replacement& replacement = status.replacement();
  std::string text =
      StrCat("\nreplacement: ", replacement.old_nodes_left(), " node(s) of the old version left, ",
             replacement.size(), " members kept\n");
  if (replacement.waiting() == v1::Replacement::JOIN) {
    StrAppend(&text, "  waiting for a new node to join as ", StateText(replacement.join_state()),
              "\n");
  } else {
    StrAppend(&text, "  waiting for ", replacement.node(), " to leave\n");
  }
  for (const std::string& pending : replacement.pending()) {
    StrAppend(&text, "  still: ", pending, "\n");
  }
  for (const std::string& refused : replacement.refused_candidates()) {
    StrAppend(&text, "  not taken: ", refused, "\n");
  }
  for (int i = 0; i < replacement.commands_size(); ++i) {
    StrAppend(&text, "  ", i + 1, ". ", replacement.commands(i), "\n");
  }
  return text;
}

// The downtime strategy's outage: "no kube-controller-manager for 41.2 s, no cloud controllers
// for 63.0 s" (or "... since <time>" while it lasts).
std::string DowntimeText(const v1::Downtime& downtime) {
  std::string text = "no kube-controller-manager ";
  if (downtime.controller_manager_back_unix_ms() != 0) {
    StrAppend(&text, "for ", Seconds(downtime.controller_manager_ms()));
  } else {
    StrAppend(&text, "since ", TimeText(downtime.all_stopped_unix_ms()));
  }
  text += ", no cloud controllers ";
  if (downtime.cloud_controllers_back_unix_ms() != 0) {
    StrAppend(&text, "for ", Seconds(downtime.cloud_controllers_ms()));
  } else {
    StrAppend(&text, "since ", TimeText(downtime.all_stopped_unix_ms()));
  }
  text += " (from the moves' verified results)";
  if (downtime.observed_cloud_controllers_ms() != 0) {
    StrAppend(&text, "; the managers' /healthz showed no runner of ",
              downtime.observed_controller(), " for ",
              Seconds(downtime.observed_cloud_controllers_ms()));
  }
  return text;
}

std::string StatusText(const v1::RolloutStatus& status) {
  std::string text;
  std::string rollout = status.rollout_id().empty() ? "none started yet" : status.rollout_id();
  StrAppend(&rollout, " (revision ", status.revision());
  if (status.updated_unix_ms() != 0)
    StrAppend(&rollout, ", updated ", TimeText(status.updated_unix_ms()));
  rollout += ")";
  StrAppend(&text, "rollout:    ", rollout, "\n");
  StrAppend(&text, "goal:       ",
            status.goal() == v1::NODE_STATE_UNSPECIFIED ? "none" : StateText(status.goal()), "\n");
  if (status.strategy() == v1::STRATEGY_DOWNTIME) StrAppend(&text, "strategy:   downtime\n");
  if (status.strategy() == v1::STRATEGY_REPLACE) {
    StrAppend(&text, "strategy:   replace (Leader Migration, node by node)\n");
  }
  StrAppend(&text, "phase:      ", PhaseName(status.phase()), "\n");
  if (status.has_downtime()) StrAppend(&text, "downtime:   ", DowntimeText(status.downtime()), "\n");
  if (status.paused()) StrAppend(&text, "paused:     yes\n");
  if (status.halted()) {
    StrAppend(&text, "halted:     ",
              status.halt_reason().empty() ? "(no reason given)" : status.halt_reason(), "\n");
  }
  StrAppend(&text, "next:       ", OrDash(status.next()), "\n");
  if (status.next_since_unix_ms() != 0) {
    // How long it has said so: each change of it is a "waiting" or "stuck" history entry.
    StrAppend(&text, "            (so since ", TimeText(status.next_since_unix_ms()), ", ",
              Seconds(std::max<int64_t>(0, status.updated_unix_ms() - status.next_since_unix_ms())),
              "; handoffctl history shows each earlier reason)\n");
  }
  StrAppend(&text, "cluster:    ", FactsText(status), "\n");
  if (status.has_in_flight()) {
    const v1::InFlightMove& move = status.in_flight();
    StrAppend(&text, "in flight:  ", move.node(), " ", Move(move.from(), move.to()), " (command ",
              move.command_id(), ", sent ", TimeText(move.sent_unix_ms()), ")\n");
  } else {
    StrAppend(&text, "in flight:  none\n");
  }
  text += "\n";
  if (status.nodes().empty()) {
    text += "no nodes yet: no agent has connected\n";
    return text;
  }
  std::vector<std::vector<std::string>> rows = {
      {"NODE", "STATE", "CONNECTED", "HEALTHY", "PROGRESS", "MOVING TO", "LAST RESULT"}};
  for (const v1::NodeProgress& node : status.nodes()) {
    rows.push_back({node.name(), NodeStateCell(node.state(), node.connected()),
                    YesNo(node.connected()), YesNo(node.healthy()),
                    ProgressBar(node.steps_done(), node.steps_total()),
                    StateText(node.moving_to()), OrDash(node.last_result())});
  }
  text += Table(rows);
  for (const v1::NodeProgress& node : status.nodes()) {
    if (!node.second_agent().empty())
      StrAppend(&text, "\nWARNING ", node.name(), ": ", node.second_agent(), "\n");
  }
  for (const v1::NodeProgress& node : status.candidates()) {
    StrAppend(&text, "\ncandidate ", node.name(), " (",
              NodeStateCell(node.state(), node.connected()),
              node.healthy() ? ", healthy" : ", not healthy",
              "): its agent is connected, but it is not a member of the rollout; "
              "`handoffctl nodes add ",
              node.name(), "` makes it one\n");
  }
  text += WorkersText(status);
  text += ReplacementText(status);
  text += CloudControllersText(status);
  return text;
}

absl::StatusOr<std::string> JsonLine(const google::protobuf::Message& message) {
  google::protobuf::util::JsonPrintOptions options;
  options.preserve_proto_field_names = true;
  options.always_print_primitive_fields = true;
  std::string json;
  const auto converted = google::protobuf::util::MessageToJsonString(message, &json, options);
  if (!converted.ok()) {
    return absl::InternalError(
        StrCat("cannot print the coordinator's answer as JSON: ", converted.ToString()));
  }
  return json;
}

// The rollout needs the operator: exit code 1 for `status`.
bool NeedsOperator(const v1::RolloutStatus& status) {
  return status.halted() || status.phase() == v1::RolloutStatus::HALTED ||
         status.phase() == v1::RolloutStatus::STUCK;
}

// Reports a failed call with the exit code its gRPC code means. `changes`: the call asks the
// coordinator to change the rollout, so an unanswered one may still have taken effect.
int FailCall(CommandContext& context, const CoordinatorEndpoint& endpoint, std::string_view call,
             const absl::Status& status, bool changes) {
  std::ostream& err = context.err();
  const std::string code = absl::StatusCodeToString(status.code());
  switch (status.code()) {
    case absl::StatusCode::kUnavailable:
      err << "handoffctl: cannot reach the coordinator at " << endpoint.address << " (" << call
          << ": " << status.message() << "); check --coordinator (or $HANDOFF_COORDINATOR) and "
          << "the certificates (--ca " << endpoint.ca_path << ", --cert " << endpoint.cert_path
          << ", --key " << endpoint.key_path << ")\n";
      return kExitUnavailable;
    case absl::StatusCode::kDeadlineExceeded:
      err << "handoffctl: the coordinator at " << endpoint.address << " did not answer " << call
          << " within " << absl::FormatDuration(endpoint.timeout) << " (" << status.message()
          << "); check --coordinator (or $HANDOFF_COORDINATOR) and the certificates";
      if (changes) err << "; the change may still be made: see `handoffctl status`";
      err << "\n";
      return kExitUnavailable;
    case absl::StatusCode::kPermissionDenied:
    case absl::StatusCode::kUnauthenticated:
      err << "handoffctl: the coordinator refused " << call << " (" << code
          << "): " << status.message()
          << " (it accepts operator certificates, O=handoff:operators, "
          << "signed by the handoff CA; this one is " << endpoint.cert_path << ")\n";
      return kExitRefused;
    case absl::StatusCode::kInvalidArgument:
    case absl::StatusCode::kFailedPrecondition:
    case absl::StatusCode::kNotFound:
      err << "handoffctl: the coordinator refused " << call << " (" << code
          << "): " << status.message() << "\n";
      return kExitRefused;
    default:
      err << "handoffctl: " << call << " failed at the coordinator " << endpoint.address << " ("
          << code << "): " << status.message() << "\n";
      return kExitRefused;
  }
}

int PrintStatus(CommandContext& context, const v1::RolloutStatus& status,
                const std::string& format) {
  if (format == "json") {
    absl::StatusOr<std::string> json = JsonLine(status);
    if (!json.ok()) return context.Fail(json.status());
    context.out() << *json << "\n";
  } else {
    context.out() << StatusText(status);
  }
  return kExitOk;
}

// One call that changes the rollout, then the status it leaves.
int Change(CommandContext& context, const Flags& flags, std::string_view call,
           const std::function<absl::StatusOr<v1::RolloutStatus>(OperatorClient&)>& send) {
  CoordinatorEndpoint endpoint;
  absl::StatusOr<std::unique_ptr<OperatorClient>> client =
      context.ConnectCoordinator(flags.coordinator, endpoint);
  if (!client.ok()) return context.Fail(client.status());
  absl::StatusOr<v1::RolloutStatus> status = send(**client);
  if (!status.ok()) return FailCall(context, endpoint, call, status.status(), /*changes=*/true);
  return PrintStatus(context, *status, flags.format);
}

std::string PlanText(const v1::PlanRolloutResponse& plan) {
  std::string text;
  const std::string goal = StateText(plan.goal());
  if (plan.steps().empty()) {
    text = plan.blocked_reason().empty()
               ? StrCat("plan to ", goal, ": nothing to do, every node is ", goal, "\n")
               : StrCat("plan to ", goal, ": no steps\n");
  } else {
    StrAppend(&text, "plan to ", goal, ": ", plan.steps_size(),
              " step(s), in this order, each after the previous one succeeded\n");
    std::vector<std::vector<std::string>> rows;
    for (const v1::PlannedStep& step : plan.steps()) {
      rows.push_back({StrCat(step.index(), "."), step.node(), Move(step.from(), step.to())});
    }
    text += Table(rows, "  ");
  }
  if (!plan.blocked_reason().empty()) StrAppend(&text, "blocked: ", plan.blocked_reason(), "\n");
  if (!plan.note().empty()) StrAppend(&text, "note: ", plan.note(), "\n");
  if (!plan.nodes().empty()) text += "\n";
  for (const v1::NodePlan& node : plan.nodes()) {
    const std::string heading = StrCat("# ", node.node(), " (", StateText(node.state()), ")");
    if (!node.error().empty()) StrAppend(&text, heading, ": no diffs: ", node.error(), "\n");
    if (node.transitions().empty() && node.error().empty()) {
      StrAppend(&text, heading, ": no changes\n");
    }
    for (const v1::PlannedTransition& transition : node.transitions()) {
      StrAppend(&text, heading, ": ", Move(transition.from(), transition.to()));
      if (transition.diff().empty()) {
        text += ": no file changes\n";
        continue;
      }
      StrAppend(&text, "\n", transition.diff());
      if (transition.diff().back() != '\n') text += "\n";
    }
  }
  return text;
}

int Plan(CommandContext& context, const PlanFlags& flags) {
  CoordinatorEndpoint endpoint;
  absl::StatusOr<std::unique_ptr<OperatorClient>> client =
      context.ConnectCoordinator(flags.coordinator, endpoint);
  if (!client.ok()) return context.Fail(client.status());
  v1::PlanRolloutRequest request;
  request.set_goal(StateNamed(flags.goal));
  if (std::optional<Strategy> strategy = StrategyNamed(flags.strategy)) {
    request.set_strategy(ToProto(*strategy));
  }
  absl::StatusOr<v1::PlanRolloutResponse> plan = (*client)->Plan(request);
  if (!plan.ok()) return FailCall(context, endpoint, "plan", plan.status(), /*changes=*/false);
  if (flags.format == "json") {
    absl::StatusOr<std::string> json = JsonLine(*plan);
    if (!json.ok()) return context.Fail(json.status());
    context.out() << *json << "\n";
  } else {
    context.out() << PlanText(*plan);
  }
  return plan->blocked_reason().empty() ? kExitOk : kExitProblems;
}

int Status(CommandContext& context, const StatusFlags& flags) {
  CoordinatorEndpoint endpoint;
  absl::StatusOr<std::unique_ptr<OperatorClient>> client =
      context.ConnectCoordinator(flags.coordinator, endpoint);
  if (!client.ok()) return context.Fail(client.status());
  const CtlEnvironment& environment = context.environment();
  v1::StatusRequest request;
  request.set_watch(flags.watch);

  if (!flags.watch) {
    std::vector<v1::RolloutStatus> received;
    absl::Status streamed = (*client)->Status(
        request, [&received](const v1::RolloutStatus& status) { received.push_back(status); },
        [] { return false; });
    if (streamed.ok() && received.empty()) {
      streamed = absl::InternalError("the coordinator ended the stream without a status");
    }
    if (!streamed.ok()) return FailCall(context, endpoint, "status", streamed, /*changes=*/false);
    // Unwatched, the coordinator sends one status; should it send more, the last one is now.
    const int printed = PrintStatus(context, received.back(), flags.format);
    if (printed != kExitOk) return printed;
    return NeedsOperator(received.back()) ? kExitProblems : kExitOk;
  }

  const bool json = flags.format == "json";
  const bool terminal = environment.output_is_terminal && environment.output_is_terminal();
  std::ostream& out = context.out();
  int64_t shown = 0;
  auto on_status = [&](const v1::RolloutStatus& status) -> absl::Status {
    if (json) {
      absl::StatusOr<std::string> line = JsonLine(status);
      if (!line.ok()) return line.status();
      out << *line << "\n";
    } else if (terminal) {
      out << kClearScreen << StatusText(status);
    } else {
      // A log or a pipe: every status stays, one block after another.
      if (shown > 0) out << "\n";
      out << StatusText(status);
    }
    out.flush();  // someone is watching
    ++shown;
    return absl::OkStatus();
  };
  auto stop = [&environment] { return environment.interrupted && environment.interrupted(); };

  // A watch outlives the coordinator it began with: when the stream breaks after statuses came
  // (a restart, a crash, a graceful shutdown), it dials again with backoff, on a new connection,
  // for up to --reconnect-timeout, and goes on with the statuses of whichever coordinator answers.
  ReconnectPolicy policy;
  policy.first_backoff = kReconnectFirstBackoff;
  policy.max_backoff = kReconnectMaxBackoff;
  policy.stop_poll_interval = kReconnectPollInterval;
  policy.give_up_after = endpoint.reconnect_timeout;
  policy.watch_timeout = endpoint.watch_timeout;
  policy.retry_before_first_status = false;
  std::unique_ptr<OperatorClient> first = *std::move(client);
  auto connect = [&](absl::Duration watch_left) {
    if (first) return std::move(first);
    CoordinatorEndpoint again = endpoint;
    again.watch_timeout = watch_left;
    return environment.open_coordinator(again);
  };
  WatchEvents events;
  events.lost = [&](const absl::Status& ended) {
    context.err() << "handoffctl: lost the coordinator at " << endpoint.address
                  << " (status --watch: " << ended.message() << "); reconnecting for up to "
                  << absl::FormatDuration(endpoint.reconnect_timeout) << "\n";
  };
  events.reconnected = [&](absl::Duration outage) {
    context.err() << "handoffctl: reconnected to the coordinator at " << endpoint.address
                  << " after " << absl::FormatDuration(absl::Trunc(outage, absl::Milliseconds(1)))
                  << "\n";
  };
  const WatchOutcome watched =
      WatchStatus(connect, on_status, policy, stop, context.clock(), events);
  switch (watched.end) {
    case WatchOutcome::End::kStopped:
      return kExitOk;
    case WatchOutcome::End::kEnded:
      context.err() << "handoffctl: the coordinator ended the watch after " << watched.statuses
                    << " status(es)\n";
      return kExitOk;
    case WatchOutcome::End::kWatchTimeout:
      context.err() << "handoffctl: stopped watching: --watch-timeout "
                    << absl::FormatDuration(endpoint.watch_timeout) << " reached\n";
      return kExitOk;
    case WatchOutcome::End::kRejected:
      return context.Fail(watched.error);
    case WatchOutcome::End::kGaveUp:
      context.err() << "handoffctl: the coordinator at " << endpoint.address
                    << " did not come back within "
                    << absl::FormatDuration(absl::Trunc(watched.outage, absl::Milliseconds(1)))
                    << "\n";
      break;
    case WatchOutcome::End::kFailed:
      break;
  }
  return FailCall(context, endpoint, "status --watch", watched.error, /*changes=*/false);
}

int History(CommandContext& context, const HistoryFlags& flags) {
  CoordinatorEndpoint endpoint;
  absl::StatusOr<std::unique_ptr<OperatorClient>> client =
      context.ConnectCoordinator(flags.coordinator, endpoint);
  if (!client.ok()) return context.Fail(client.status());
  const int limit = flags.limit > 0 ? flags.limit : kDefaultHistoryLimit;
  // Page by page: the coordinator stops a page at a size (HistoryResponse.more).
  absl::StatusOr<v1::HistoryResponse> history = v1::HistoryResponse();
  int64_t after = flags.after;
  while (history->entries_size() < limit) {
    v1::HistoryRequest request;
    request.set_after_sequence(after);
    // 0 (the coordinator's limit, which is handoffctl's too) unless asked or paging on.
    if (flags.limit > 0 || history->entries_size() > 0) {
      request.set_limit(limit - history->entries_size());
    }
    absl::StatusOr<v1::HistoryResponse> page = (*client)->History(request);
    if (!page.ok()) return FailCall(context, endpoint, "history", page.status(), false);
    for (v1::HistoryEntry& entry : *page->mutable_entries()) {
      *history->add_entries() = std::move(entry);
    }
    if (!page->more() || page->entries().empty()) break;
    after = history->entries(history->entries_size() - 1).sequence();
  }
  if (flags.format == "json") {
    absl::StatusOr<std::string> json = JsonLine(*history);
    if (!json.ok()) return context.Fail(json.status());
    context.out() << *json << "\n";
  } else if (history->entries().empty()) {
    context.out() << (flags.after > 0 ? StrCat("no history entries after ", flags.after)
                                      : std::string("no history entries"))
                  << "\n";
  } else {
    std::vector<std::vector<std::string>> rows = {
        {"SEQ", "TIME", "ACTOR", "KIND", "NODE", "COMMAND", "MESSAGE"}};
    for (const v1::HistoryEntry& entry : history->entries()) {
      rows.push_back({std::to_string(entry.sequence()), TimeText(entry.unix_ms()),
                      OrDash(entry.actor()), OrDash(entry.kind()), OrDash(entry.node()),
                      OrDash(entry.command_id()), OrDash(entry.message())});
    }
    context.out() << Table(rows);
  }
  if (history->entries_size() >= limit) {
    context.err() << "handoffctl: showing " << history->entries_size()
                  << " entries; more may follow: --after "
                  << history->entries(history->entries_size() - 1).sequence() << "\n";
  }
  return kExitOk;
}

int Nodes(CommandContext& context, const NodesFlags& flags) {
  CoordinatorEndpoint endpoint;
  absl::StatusOr<std::unique_ptr<OperatorClient>> client =
      context.ConnectCoordinator(flags.coordinator, endpoint);
  if (!client.ok()) return context.Fail(client.status());
  v1::NodesRequest request;
  request.set_limit(flags.limit);
  request.set_after(flags.after);
  absl::StatusOr<v1::NodesResponse> nodes = (*client)->Nodes(request);
  if (!nodes.ok()) return FailCall(context, endpoint, "nodes", nodes.status(), false);
  if (flags.format == "json") {
    absl::StatusOr<std::string> json = JsonLine(*nodes);
    if (!json.ok()) return context.Fail(json.status());
    context.out() << *json << "\n";
    return kExitOk;
  }
  if (nodes->nodes().empty()) {
    context.out() << "no nodes yet: no agent has connected\n";
    return kExitOk;
  }
  std::vector<std::vector<std::string>> rows = {{"NODE", "STATE", "CONNECTED", "HEALTHY",
                                                 "VERIFIES", "AGENT", "PEER", "LAST SEEN",
                                                 "LAST RESULT"}};
  std::string details;
  for (const v1::NodeInfo& node : nodes->nodes()) {
    rows.push_back({node.candidate()                         ? StrCat(node.name(), " (candidate)")
                    : node.role() == v1::NODE_ROLE_WORKER
                        ? StrCat(node.name(), node.leaving() ? " (worker, leaving)" : " (worker)")
                                                          : node.name(),
                    NodeStateCell(node.state(), node.connected()), YesNo(node.connected()),
                    YesNo(node.healthy()), YesNo(node.verifies()), OrDash(node.agent_version()),
                    OrDash(node.peer()), TimeText(node.last_seen_unix_ms()),
                    !node.in_flight_command_id().empty()
                        ? StrCat("moving (", node.in_flight_command_id(), ")")
                        : OrDash(node.last_result())});
    if (!node.failure().empty()) StrAppend(&details, node.name(), " failed: ", node.failure(), "\n");
    if (!node.reasons().empty()) {
      StrAppend(&details, node.name(), " is ", NodeStateCell(node.state(), node.connected()),
                ":\n");
      for (const std::string& reason : node.reasons()) StrAppend(&details, "  - ", reason, "\n");
    }
    if (!node.healthy() && !node.health_detail().empty()) {
      StrAppend(&details, node.name(), " is not healthy: ", node.health_detail(), "\n");
    }
    if (!node.second_agent().empty()) {
      StrAppend(&details, "WARNING ", node.name(), ": ", node.second_agent(), "\n");
    }
  }
  context.out() << Table(rows);
  if (!details.empty()) context.out() << "\n" << details;
  if (!nodes->next_after().empty()) {
    context.out() << "\n" << nodes->nodes_size() << " of " << nodes->total()
                  << " nodes; the next page: --after " << nodes->next_after() << "\n";
  }
  return kExitOk;
}

void AddFormat(CLI::App& command, Flags& flags, bool watch = false) {
  AddCoordinatorOptions(command, flags.coordinator, watch);
  command
      .add_option("-o,--output", flags.format,
                  watch ? "Output format: text (default) or json (one object per line)"
                        : "Output format: text (default) or json")
      ->check(CLI::IsMember({"text", "json"}));
}

// The caller adds the command's own options, then AddFormat.
CLI::App* AddChangeCommand(CLI::App& app, const std::string& name, const std::string& what) {
  CLI::App* command = app.add_subcommand(
      name, StrCat(what, " Prints the rollout's status afterwards, as `handoffctl status` does."));
  command->footer(Footer(""));
  return command;
}

}  // namespace

void AddRolloutCommands(CLI::App& app, CommandContext& context) {
  auto plan_flags = std::make_shared<PlanFlags>();
  CLI::App* plan = app.add_subcommand(
      "plan",
      "Ask the coordinator which moves a goal takes from where the nodes are now: every step in "
      "the order it would be sent (index, node, from -> to), then each node's file diffs as its "
      "agent computes them (a node whose agent is away says why its diffs are missing). Changes "
      "nothing. Exit code 1 when the goal cannot be reached from here (the reason is shown as "
      "`blocked:`)");
  plan->add_option("--goal", plan_flags->goal,
                   "migrated, finalized, prepared or in-tree (default: the rollout's current "
                   "goal, or migrated before any)")
      ->check(CLI::IsMember({"migrated", "finalized", "prepared", "in-tree"}));
  plan->add_option("--strategy", plan_flags->strategy,
                   "leader-migration or downtime: the path to plan along (default: the "
                   "rollout's own, Leader Migration before any start)")
      ->check(CLI::IsMember({"leader-migration", "downtime"}));
  AddFormat(*plan, *plan_flags);
  plan->footer(Footer("the goal cannot be reached from here (blocked)"));
  plan->callback([&context, plan_flags] { context.exit_code = Plan(context, *plan_flags); });

  auto start_flags = std::make_shared<StartFlags>();
  CLI::App* start = AddChangeCommand(
      app, "start",
      "Set the goal to migrated (or prepared with --prepare-only, finalized with --finalize, or "
      "finalized along AWS's downtime path with --strategy downtime) and begin moving the nodes "
      "one at a time. Also clears a halt: starting is the operator's decision.");
  start->add_flag("--finalize", start_flags->finalize,
                  "Go on to finalized: Leader Migration off once every node is migrated");
  start
      ->add_flag("--prepare-only", start_flags->prepare_only,
                 "Stop once every node is prepared: every kube-controller-manager runs with "
                 "Leader Migration and no cloud-controller-manager has started (the first step "
                 "of the upstream procedure, to check before `handoffctl start` goes on)")
      ->excludes("--finalize");
  start
      ->add_option("--strategy", start_flags->strategy,
                   "leader-migration (default: no controller stops for longer than a lease "
                   "handover), replace (Leader Migration by replacing nodes: once every node is "
                   "prepared, the coordinator asks for one new node of version N+1 at a time, "
                   "takes it in when its agent connects, brings it to migrated, then asks for "
                   "one node of version N to be removed; `status` shows what it waits for and "
                   "the commands; handoff creates no machines) or downtime (AWS's path for "
                   "clusters that accept a control-plane outage: every kube-controller-manager "
                   "stopped, every node switched to --cloud-provider=external, then the "
                   "cloud-controller-manager started on every node; the goal is finalized, and "
                   "`status` reports the outage measured)")
      ->check(CLI::IsMember({"leader-migration", "replace", "downtime"}));
  start
      ->add_option("--ignore-preflight", start_flags->ignore_preflight,
                   "Start although these preflight checks fail (comma-separated: agents, "
                   "transactions, leases, rbac, image, leader-migration, settings, node-names, "
                   "stray-files, cluster-tag, ebs-csi, ecr-credentials, cloud-routes, "
                   "leader-elect, control-plane, or all); each is written to the history. Without "
                   "it a failing "
                   "check refuses the start with "
                   "what to fix, and nothing moves. The rollout rules still gate every move")
      ->delimiter(',');
  start->add_option("--ignore-reason", start_flags->ignore_reason,
                    "Why the checks of --ignore-preflight are skipped (a change ticket, who "
                    "decided): written to the history with each one skipped");
  start->add_option("--max-unavailable", start_flags->max_unavailable,
                    "How many workers move at once: a number (3) or a percentage of the workers "
                    "(10%), spread over their zones; the rollout keeps it (1 for a new one)");
  start->add_option("--failure-budget", start_flags->failure_budget,
                    "Failed workers (each rolled back by its agent) after which the rollout "
                    "pauses, each listed with why; the rollout keeps it (1 for a new one)")
      ->check(CLI::PositiveNumber);
  AddFormat(*start, *start_flags);
  start->callback([&context, start_flags] {
    context.exit_code = Change(context, *start_flags, "start", [&](OperatorClient& client) {
      v1::StartRequest request;
      const bool downtime = start_flags->strategy == "downtime";
      // --prepare-only with the downtime strategy is sent as asked: the coordinator refuses it
      // (that path has no stop at prepared) and says so.
      request.set_goal(start_flags->prepare_only           ? v1::NODE_STATE_PREPARED
                       : start_flags->finalize || downtime ? v1::NODE_STATE_FINALIZED
                                                           : v1::NODE_STATE_MIGRATED);
      // Leader Migration, the default, goes unsaid (STRATEGY_UNSPECIFIED).
      std::optional<Strategy> strategy = StrategyNamed(start_flags->strategy);
      if (strategy && *strategy != Strategy::kLeaderMigration) {
        request.set_strategy(ToProto(*strategy));
      }
      for (const std::string& check : start_flags->ignore_preflight) {
        request.add_ignore_preflight(check);
      }
      request.set_ignore_reason(start_flags->ignore_reason);
      request.set_max_unavailable(start_flags->max_unavailable);
      request.set_failure_budget(start_flags->failure_budget);
      return client.Start(request);
    });
  });

  auto pause_flags = std::make_shared<ReasonFlags>();
  CLI::App* pause = AddChangeCommand(
      app, "pause",
      "Send no further moves; a move already sent finishes. `handoffctl resume` goes on.");
  pause->add_option("--reason", pause_flags->reason, "Why, for the history");
  AddFormat(*pause, *pause_flags);
  pause->callback([&context, pause_flags] {
    context.exit_code = Change(context, *pause_flags, "pause", [&](OperatorClient& client) {
      v1::PauseRequest request;
      request.set_reason(pause_flags->reason);
      return client.Pause(request);
    });
  });

  auto resume_flags = std::make_shared<Flags>();
  CLI::App* resume = AddChangeCommand(
      app, "resume",
      "Clear a pause or a halt and go on towards the goal; a node whose move failed is tried "
      "again.");
  AddFormat(*resume, *resume_flags);
  resume->callback([&context, resume_flags] {
    context.exit_code = Change(context, *resume_flags, "resume", [](OperatorClient& client) {
      return client.Resume(v1::ResumeRequest());
    });
  });

  auto abort_flags = std::make_shared<ReasonFlags>();
  CLI::App* abort = AddChangeCommand(
      app, "abort",
      "Halt the rollout: no further moves until the operator starts, resumes or rolls back. A "
      "move already sent finishes.");
  abort->add_option("--reason", abort_flags->reason, "Why, for the history and the status");
  AddFormat(*abort, *abort_flags);
  abort->callback([&context, abort_flags] {
    context.exit_code = Change(context, *abort_flags, "abort", [&](OperatorClient& client) {
      v1::AbortRequest request;
      request.set_reason(abort_flags->reason);
      return client.Abort(request);
    });
  });

  auto rollback_flags = std::make_shared<RollbackFlags>();
  CLI::App* rollback = AddChangeCommand(
      app, "rollback",
      "Set the goal to prepared or in-tree and walk the nodes back one at a time (finalized "
      "nodes get Leader Migration back first). Clears a halt.");
  rollback->add_option("--to", rollback_flags->to, "prepared or in-tree")
      ->required()
      ->check(CLI::IsMember({"prepared", "in-tree"}));
  rollback
      ->add_option("--strategy", rollback_flags->strategy,
                   "in-place (default: each node walks back where it is) or replace (nodes of "
                   "version N join with Leader Migration, one at a time, and each replaces a "
                   "node of version N+1, which the operator then removes; `status` shows the "
                   "commands)")
      ->check(CLI::IsMember({"in-place", "replace"}));
  AddFormat(*rollback, *rollback_flags);
  rollback->callback([&context, rollback_flags] {
    context.exit_code = Change(context, *rollback_flags, "rollback", [&](OperatorClient& client) {
      v1::RollbackRequest request;
      request.set_to(StateNamed(rollback_flags->to));
      // "in-place" is no strategy of its own: the rollout's nodes walk back where they are.
      if (rollback_flags->strategy == "replace") request.set_strategy(ToProto(Strategy::kReplace));
      return client.Rollback(request);
    });
  });

  auto finalize_flags = std::make_shared<Flags>();
  CLI::App* finalize = AddChangeCommand(
      app, "finalize",
      "Set the goal to finalized: once every node is migrated, turn Leader Migration off node by "
      "node and remove its configuration.");
  AddFormat(*finalize, *finalize_flags);
  finalize->callback([&context, finalize_flags] {
    context.exit_code = Change(context, *finalize_flags, "finalize", [](OperatorClient& client) {
      return client.Finalize(v1::FinalizeRequest());
    });
  });

  auto status_flags = std::make_shared<StatusFlags>();
  CLI::App* status = app.add_subcommand(
      "status",
      "The rollout: its id, goal, phase, whether it is paused or halted (and why), what it does "
      "next, the cluster facts (migration-lease RBAC, lease holder) and the move in flight; then "
      "one row per node: state, connected, healthy, progress towards the goal, the move under "
      "way, the last result. Exit code 1 when the rollout is halted or stuck (not with --watch)");
  status->add_flag("-w,--watch", status_flags->watch,
                   "Show every change until the coordinator ends the stream, --watch-timeout "
                   "passes, or Ctrl-C. On a terminal the screen is redrawn; otherwise each status "
                   "is printed as a block, blocks separated by a blank line. A coordinator that "
                   "goes away mid-watch (a restart) is dialled again for up to "
                   "--reconnect-timeout, saying so on stderr");
  AddFormat(*status, *status_flags, /*watch=*/true);
  status->footer(Footer("the rollout is halted or stuck (without --watch)",
                        " With --watch, one object per line (NDJSON)."));
  status->callback(
      [&context, status_flags] { context.exit_code = Status(context, *status_flags); });

  auto history_flags = std::make_shared<HistoryFlags>();
  CLI::App* history = app.add_subcommand(
      "history",
      "The coordinator's audit history, oldest first: every operator call (with the operator's "
      "certificate CN), every command sent to an agent and its result, agents connecting and "
      "disconnecting, halts. -o json adds each entry's full record (detail_json)");
  history
      ->add_option("--after", history_flags->after,
                   "Only entries with a sequence number greater than this (default 0: from "
                   "the start)")
      ->check(CLI::NonNegativeNumber);
  history
      ->add_option("--limit", history_flags->limit,
                   "At most this many entries (default 0: the coordinator's limit, 1000)")
      ->check(CLI::NonNegativeNumber);
  AddFormat(*history, *history_flags);
  history->footer(Footer(""));
  history->callback(
      [&context, history_flags] { context.exit_code = History(context, *history_flags); });

  auto nodes_flags = std::make_shared<NodesFlags>();
  CLI::App* nodes = app.add_subcommand(
      "nodes",
      "The control-plane nodes as the coordinator knows them: state, connected, healthy, whether "
      "the agent verifies its moves, agent version, peer address, last seen, last result; then "
      "why a node is inconsistent or not healthy. A node whose agent is connected but which is "
      "not a member of the rollout (a machine that joined the control plane) is listed as a "
      "candidate: `nodes add` makes it a member, `nodes remove` takes a member whose machine is "
      "gone out of the rollout. The workers follow (each Node without the control-plane role, "
      "with its agent or without one), by name, a page at a time with --limit and --after");
  nodes->add_option("--limit", nodes_flags->limit, "At most this many nodes (0: every one)")
      ->check(CLI::NonNegativeNumber);
  nodes->add_option("--after", nodes_flags->after,
                    "Begin after this node name (the last one of the previous page)");
  AddFormat(*nodes, *nodes_flags);
  nodes->footer(Footer(""));

  auto add_flags = std::make_shared<MembershipFlags>();
  CLI::App* add = AddChangeCommand(
      *nodes, "add",
      "Make the candidate NODE (its agent connected, not a member) a member of the rollout, last "
      "in its order; the rollout's moves then bring it to the goal. Refused (nothing changed) "
      "unless its agent has reported it consistent and verified healthy, no move is under way, "
      "and its state fits beside the members' (no in-tree node beside a migrated or finalized "
      "one, no prepared beside finalized, no stopped beside migrated or finalized). Recorded in "
      "the history and kept across coordinator restarts.");
  add->add_option("node", add_flags->node, "The node's name (its agent's certificate's)")
      ->required();
  add->add_option("--reason", add_flags->reason, "Why, for the history");
  AddFormat(*add, *add_flags);
  add->callback([&context, add_flags] {
    context.exit_code = Change(context, *add_flags, "nodes add", [&](OperatorClient& client) {
      v1::AddNodeRequest request;
      request.set_node(add_flags->node);
      request.set_reason(add_flags->reason);
      return client.AddNode(request);
    });
  });

  auto remove_flags = std::make_shared<MembershipFlags>();
  CLI::App* remove = AddChangeCommand(
      *nodes, "remove",
      "Take the member NODE out of the rollout once its machine is gone: refused while its agent "
      "is connected (its managers may still run: `kubeadm reset` on it stops its static pods "
      "and the agent), while a move to it is under way, or when it is the last node. Recorded in "
      "the history and kept across coordinator restarts.");
  remove->add_option("node", remove_flags->node, "The node's name")->required();
  remove->add_option("--reason", remove_flags->reason, "Why, for the history");
  AddFormat(*remove, *remove_flags);
  remove->callback([&context, remove_flags] {
    context.exit_code = Change(context, *remove_flags, "nodes remove", [&](OperatorClient& client) {
      v1::RemoveNodeRequest request;
      request.set_node(remove_flags->node);
      request.set_reason(remove_flags->reason);
      return client.RemoveNode(request);
    });
  });

  nodes->callback([&context, nodes, nodes_flags] {
    if (!nodes->get_subcommands().empty()) return;  // nodes add / nodes remove
    context.exit_code = Nodes(context, *nodes_flags);
  });
}

}  // namespace handoff::ctl
