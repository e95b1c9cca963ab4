// Test helper: a model of the managers on the control-plane nodes and the three leases they
// compete for, to count how often a rollout hands the cloud controllers from one process to
// another and to check that no two processes ever run them at once.
//
// What it models (domain brief §2, §4; kubernetes cmd/kube-controller-manager/app/
// controllermanager.go, k8s.io/cloud-provider app/controllermanager.go):
//  - each node runs a kube-controller-manager, and a cloud-controller-manager once migrated;
//    what each does follows the node's state:
//      in-tree:   KCM runs the cloud controllers while it holds its main lease;
//      prepared:  KCM with Leader Migration: runs them while it holds its main lease and the
//                 migration lease;
//      migrated:  KCM external (never runs them); CCM with Leader Migration (main + migration);
//      finalized: KCM external; CCM without Leader Migration: runs them with its main lease;
//  - a move restarts the managers whose flags change (a new process, which holds nothing):
//    in-tree ⇄ prepared and prepared ⇄ migrated restart the KCM; prepared ⇄ migrated starts or
//    stops the CCM; migrated ⇄ finalized restarts the CCM;
//  - a lease whose holder is gone is free (after its duration; the model does not keep time);
//    a free main lease goes to any running manager of that kind, the migration lease to any
//    running manager with Leader Migration that holds its own main lease. Which one, and in
//    which order, is up to the caller's random source: every interleaving is possible.
// Not modelled: time, lease renewal failures, a process losing a lease it holds.
#ifndef HANDOFF_TESTS_COORDINATOR_ROLLOUT_LEASE_MODEL_H_
#define HANDOFF_TESTS_COORDINATOR_ROLLOUT_LEASE_MODEL_H_

#include <cstddef>
#include <cstdint>
#include <optional>
#include <random>
#include <string>
#include <vector>

#include "common/base/strings.h"
#include "coordinator/rollout/rollout_engine.h"
#include "proto/vocabulary/node_state.h"

namespace handoff::rollout::lease_model {

enum class Component { kKcm, kCcm };

// How a manager takes part in running the cloud controllers.
enum class Mode {
  kAbsent,     // not running
  kExternal,   // runs none of them (KCM with --cloud-provider=external)
  kAlone,      // runs them while it holds its main lease (no Leader Migration)
  kMigration,  // runs them while it holds its main lease and the migration lease
};

inline Mode KcmMode(NodeState state) {
  switch (state) {
    case NodeState::kInTree:
      return Mode::kAlone;
    case NodeState::kPrepared:
      return Mode::kMigration;
    case NodeState::kStopped:
      return Mode::kAbsent;  // its manifest parked: the kubelet stopped it
    default:
      return Mode::kExternal;
  }
}

inline Mode CcmMode(NodeState state) {
  switch (state) {
    case NodeState::kMigrated:
      return Mode::kMigration;
    case NodeState::kFinalized:
      return Mode::kAlone;
    default:
      return Mode::kAbsent;
  }
}

// One process: a manager on a node, in one incarnation (a restart makes a new one).
struct Process {
  std::size_t node = 0;
  Component component = Component::kKcm;
  int incarnation = 0;
  bool operator==(const Process& other) const {
    return node == other.node && component == other.component &&
           incarnation == other.incarnation;
  }
  bool operator!=(const Process& other) const { return !(*this == other); }
};

class Cluster {
 public:
  enum Lease { kKcmMain = 0, kCcmMain = 1, kMigrationLease = 2 };

  Cluster(std::vector<std::string> names, std::vector<NodeState> states)
      : names_(std::move(names)), states_(std::move(states)) {
    kcm_.assign(states_.size(), 0);
    ccm_.assign(states_.size(), 0);
  }

  const std::vector<NodeState>& states() const { return states_; }

  // Moves a node: the managers whose flags change restart (CCM started or stopped included).
  void Move(std::size_t node, NodeState to) {
    const NodeState from = states_[node];
    // (The KCM's flags are the same in migrated and finalized.)
    if (KcmMode(from) != KcmMode(to)) ++kcm_[node];
    if (CcmMode(from) != CcmMode(to)) ++ccm_[node];
    states_[node] = to;
  }

  // Gives free leases to candidates, one at a time in a random order to random candidates, until
  // none is free or no candidate is left. After every acquisition `on_step` sees the cluster;
  // returns the first thing it reports ("" for fine).
  template <typename Callback>
  std::string Settle(std::mt19937_64& rng, Callback on_step) {
    for (;;) {
      std::vector<std::pair<Lease, Process>> choices;
      for (Lease lease : {kKcmMain, kCcmMain, kMigrationLease}) {
        if (Live(holders_[lease])) continue;
        for (const Process& candidate : Candidates(lease)) choices.emplace_back(lease, candidate);
      }
      if (choices.empty()) return "";
      const auto& [lease, process] = choices[rng() % choices.size()];
      holders_[lease] = process;
      if (std::string error = on_step(*this); !error.empty()) return error;
    }
  }

  // The processes that run the cloud controllers now. More than one is a double run.
  std::vector<Process> Runners() const {
    std::vector<Process> runners;
    for (std::size_t node = 0; node < states_.size(); ++node) {
      for (Component component : {Component::kKcm, Component::kCcm}) {
        const Process process = Current(node, component);
        const Mode mode = ModeOf(process);
        const bool main = holders_[MainLease(component)] == process;
        const bool migration = holders_[kMigrationLease] == process;
        if ((mode == Mode::kAlone && main) || (mode == Mode::kMigration && main && migration)) {
          runners.push_back(process);
        }
      }
    }
    return runners;
  }

  // The nodes of the leases' live holders, as the coordinator would read them.
  LeaseHolders Holders() const {
    LeaseHolders holders;
    holders.kube_controller_manager = NodeOf(holders_[kKcmMain]);
    holders.cloud_controller_manager = NodeOf(holders_[kCcmMain]);
    holders.migration = NodeOf(holders_[kMigrationLease]);
    return holders;
  }

  std::string Describe() const {
    std::string out = "nodes:";
    for (std::size_t i = 0; i < states_.size(); ++i) {
      StrAppend(&out, " ", names_[i], "=", NodeStateName(states_[i]));
    }
    const LeaseHolders holders = Holders();
    StrAppend(&out, "; kcm lease: '", holders.kube_controller_manager, "' ccm lease: '",
              holders.cloud_controller_manager, "' migration lease: '", holders.migration, "'");
    return out;
  }

  std::string Name(const Process& process) const {
    return StrCat(process.component == Component::kKcm ? "kcm" : "ccm", "@",
                  names_[process.node], "#", process.incarnation);
  }

 private:
  static Lease MainLease(Component component) {
    return component == Component::kKcm ? kKcmMain : kCcmMain;
  }

  Process Current(std::size_t node, Component component) const {
    return Process{node, component, component == Component::kKcm ? kcm_[node] : ccm_[node]};
  }
  Mode ModeOf(const Process& process) const {
    const NodeState state = states_[process.node];
    return process.component == Component::kKcm ? KcmMode(state) : CcmMode(state);
  }
  // Still running: the node's current incarnation of that manager, which the node runs.
  bool Live(const std::optional<Process>& process) const {
    return process && Current(process->node, process->component) == *process &&
           ModeOf(*process) != Mode::kAbsent;
  }
  std::string NodeOf(const std::optional<Process>& process) const {
    return Live(process) ? names_[process->node] : "";
  }

  std::vector<Process> Candidates(Lease lease) const {
    std::vector<Process> candidates;
    for (std::size_t node = 0; node < states_.size(); ++node) {
      for (Component component : {Component::kKcm, Component::kCcm}) {
        const Process process = Current(node, component);
        const Mode mode = ModeOf(process);
        if (mode == Mode::kAbsent) continue;
        if (lease == kMigrationLease) {
          // Leader Migration on, and its main lease first.
          if (mode == Mode::kMigration && holders_[MainLease(component)] == process) {
            candidates.push_back(process);
          }
        } else if (MainLease(component) == lease) {
          candidates.push_back(process);
        }
      }
    }
    return candidates;
  }

  std::vector<std::string> names_;
  std::vector<NodeState> states_;
  std::vector<int> kcm_;  // current incarnation per node
  std::vector<int> ccm_;
  std::optional<Process> holders_[3];
};

}  // namespace handoff::rollout::lease_model

#endif  // HANDOFF_TESTS_COORDINATOR_ROLLOUT_LEASE_MODEL_H_
