// The live double-run detector's logic, pure (no clock, no threads): from the agents' samples of
// who runs which cloud controller on their nodes (handoff.proto ControllerSample), whether two
// managers ran one controller at once, and how long none ran.
//
// What makes a sample proof: a manager starts a cloud controller only as a leader and never stops
// it without exiting (kube-controller-manager and k8s.io/cloud-provider exit on a lost lease). So
// one process (node, manager, pid) seen running a controller at t1 and again at t2 ran it over
// all of [t1, t2]: its *proven run*. Two proven runs of one controller that overlap by at least
// `confirm` are a double run, whatever happened between the samples. Times are the nodes' own
// (observed_unix_ms), anchored to the coordinator's clock: each node's clock is shifted by the
// offset found at its stream's first sample (receive time − observed time), and found again
// whenever a sample strays from its receive time by more than `clock_step_ms` (the node's clock
// was stepped, back or forward). So on one node spacing is exact, a stepped clock blinds nothing
// (its samples were once dropped as old for as long as it had been set back), and across nodes
// times are as good as the anchoring, which `confirm` covers.
//
// Cost: a sample is compared only with the runs it sighted, against at most
// `max_finished_runs` ended runs per controller (the oldest ended runs are forgotten) and the
// current ones, which at most `max_managers_per_sample` managers per node can make; so neither
// memory nor a sample's cost grows with the history (3,000 samples of new pids once cost the
// coordinator 30–40 s of CPU).
//
// A gap is a time no manager is known to run the controller: from the last sighting of the runs
// that ended to the first sighting of the next. It is only measured while every node is known:
// a node whose agent is away, whose look failed, or one of whose managers did not answer (it may
// be the one running it) makes the controller's runner unknown, never "none".
#ifndef HANDOFF_COORDINATOR_SERVER_DOUBLE_RUN_DETECTOR_H_
#define HANDOFF_COORDINATOR_SERVER_DOUBLE_RUN_DETECTOR_H_

#include <cstdint>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <tuple>
#include <vector>

#include "handoff/v1/handoff.pb.h"

namespace handoff::server {

struct DetectorOptions {
  // The control-plane nodes (the rollout's members); each must be known for a gap to be
  // measured. Samples of other nodes (candidates) prove runs too, but never hold a gap back.
  std::vector<std::string> nodes;
  // The controllers watched, in the order shown.
  std::vector<std::string> controllers = {"route", "service", "cloud-node-lifecycle"};
  // Two proven runs must overlap this long to be a double run (covers clock skew between nodes).
  int64_t confirm_ms = 2000;
  // A gap longer than this is a finding. A successor takes a lease one lease duration after it
  // last saw it renewed, and a kube-controller-manager successor waits out two leases (main, then
  // migration): twice the lease duration (15s by default) plus its start.
  int64_t gap_limit_ms = 60000;
  // A node's sample time that differs from the coordinator's receive time by more than this,
  // after the node's offset, means its clock was stepped: the offset is found again. Far above a
  // look's duration (the managers' /healthz, 5 s timeouts) and the network's delay.
  int64_t clock_step_ms = 15000;
  // Ended runs kept per controller (the newest): enough to prove a double run with a node away
  // for a while; a run older than all of them can no longer be part of one that is news.
  size_t max_finished_runs = 64;
  // A node runs one kube-controller-manager and one cloud-controller-manager (two while one is
  // replaced); a sample listing more managers than this makes the node unknown.
  int max_managers_per_sample = 16;
};

// One process running one controller, as proven by its node's samples.
struct ProvenRun {
  std::string controller;
  std::string node;
  std::string manager;
  int64_t pid = 0;
  int64_t first_ms = 0;  // first sample that listed it (node's clock)
  int64_t last_ms = 0;   // latest sample that listed it
  bool current = false;  // listed by its node's latest sample
};

struct Finding {
  enum class Kind { kDoubleRun, kLongGap };
  Kind kind = Kind::kDoubleRun;
  std::string controller;
  // kDoubleRun: the two runs; kLongGap: the last runs before the gap (may be empty).
  std::vector<ProvenRun> runs;
  int64_t from_ms = 0;  // the overlap, or the gap so far
  int64_t to_ms = 0;
  std::string Summary() const;  // one line for the halt reason
  std::string EvidenceJson() const;
};

class DoubleRunDetector {
 public:
  explicit DoubleRunDetector(DetectorOptions options);

  // A sample from `node`'s agent, received at `received_unix_ms` on the coordinator's clock
  // (nullopt: take the node's clock as it is). Returns the findings it brings, each reported once
  // (a double run per pair of processes, a long gap once per gap).
  std::vector<Finding> Observe(const std::string& node, const v1::ControllerSample& sample,
                               std::optional<int64_t> received_unix_ms = std::nullopt);
  // `node`'s agent disconnected: what runs there is unknown until its next sample. A node that is
  // not a member is forgotten (what it ran stays proven up to its last sighting).
  void Away(const std::string& node);
  // The members changed (a node joined or left the rollout): a node that left no longer holds a
  // gap back (its machine is gone); one that joined does, until its first sample.
  void SetNodes(const std::vector<std::string>& nodes);

  // Who runs each watched controller now, the current and last gap; empty before any sample.
  std::vector<v1::CloudControllerView> View() const;
  // The long gaps reported and not yet over (no run of the controller seen since): each
  // controller's name and since when it has run nowhere (coordinator clock, unix ms).
  std::map<std::string, int64_t> OngoingLongGaps() const;

  // For the cost's tests: runs kept (all controllers), and pairs of runs compared so far.
  size_t RunsKept() const;
  int64_t comparisons() const { return comparisons_; }

 private:
  using ProcessKey = std::tuple<std::string, std::string, int64_t>;  // node, manager, pid
  struct NodeView {
    bool known = false;  // a sample since the last Away, with no error and every manager answered
    std::string unknown_reason;
    int64_t observed_ms = 0;           // the latest sample's time, anchored
    std::optional<int64_t> offset_ms;  // coordinator − node clock, from this stream's samples
  };
  struct Gap {
    std::optional<int64_t> none_since_ms;  // set while no run is current and all is known
    bool reported = false;                 // the long gap was reported
    int64_t last_start_ms = 0;
    int64_t last_end_ms = 0;
  };

  std::string UnknownReason() const;
  // The pairs of `controller`'s runs with at least one in `sighted` (runs this sample listed).
  std::vector<Finding> CheckDoubleRuns(const std::string& controller,
                                       const std::set<ProcessKey>& sighted);
  // Forgets `controller`'s oldest ended runs beyond max_finished_runs.
  void Forget(const std::string& controller);
  std::optional<Finding> CheckGap(const std::string& controller, int64_t now_ms);

  bool IsMember(const std::string& node) const;

  DetectorOptions options_;
  bool sampled_ = false;
  std::map<std::string, NodeView> nodes_;
  // Per controller, every proven run by process (the finished ones too: a double run may be
  // proven only once both ended).
  std::map<std::string, std::map<ProcessKey, ProvenRun>> runs_;
  std::map<std::string, Gap> gaps_;
  std::set<std::tuple<std::string, ProcessKey, ProcessKey>> reported_pairs_;
  int64_t comparisons_ = 0;
};

}  // namespace handoff::server

#endif  // HANDOFF_COORDINATOR_SERVER_DOUBLE_RUN_DETECTOR_H_
