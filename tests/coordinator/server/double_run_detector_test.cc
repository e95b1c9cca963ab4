#include "coordinator/server/double_run_detector.h"

#include <algorithm>
#include <string>
#include <vector>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "nlohmann/json.hpp"

namespace handoff::server {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;
using ::testing::IsEmpty;
using ::testing::SizeIs;

constexpr char kKcm[] = "kube-controller-manager";
constexpr char kCcm[] = "cloud-controller-manager";

struct Manager {
  std::string component;
  int64_t pid = 0;
  std::vector<std::string> controllers;
  bool answered = true;
};

v1::ControllerSample Sample(int64_t at_ms, const std::vector<Manager>& managers) {
  v1::ControllerSample sample;
  sample.set_observed_unix_ms(at_ms);
  for (const Manager& manager : managers) {
    v1::ManagerControllers* out = sample.add_managers();
    out->set_component(manager.component);
    out->set_pid(manager.pid);
    out->set_answered(manager.answered);
    if (!manager.answered) out->set_error("connection refused");
    for (const std::string& controller : manager.controllers) out->add_controllers(controller);
  }
  return sample;
}

DetectorOptions Options() {
  DetectorOptions options;
  options.nodes = {"cp-1", "cp-2"};
  options.controllers = {"service", "route"};
  options.confirm_ms = 2000;
  options.gap_limit_ms = 10000;
  return options;
}

// By value: the views are a temporary.
v1::CloudControllerView ViewOf(const std::vector<v1::CloudControllerView>& views,
                               const std::string& name) {
  for (const v1::CloudControllerView& view : views) {
    if (view.name() == name) return view;
  }
  ADD_FAILURE() << "no view of " << name;
  return {};
}

TEST(DoubleRunDetectorTest, TwoManagersSeenRunningOneControllerOverTheConfirmTimeAreADoubleRun) {
  DoubleRunDetector detector(Options());
  std::vector<Finding> findings;
  for (int64_t t = 0; t <= 4000; t += 1000) {
    std::vector<Finding> a = detector.Observe("cp-1", Sample(t, {{kKcm, 11, {"service"}}}));
    std::vector<Finding> b = detector.Observe("cp-2", Sample(t + 500, {{kCcm, 22, {"service"}}}));
    findings.insert(findings.end(), a.begin(), a.end());
    findings.insert(findings.end(), b.begin(), b.end());
  }
  // Reported once, as soon as the proven runs overlap by 2s: when cp-1's sample at 3000 came,
  // cp-1's run was proven over [0, 3000] and cp-2's over [500, 2500].
  ASSERT_THAT(findings, SizeIs(1));
  const Finding& finding = findings[0];
  EXPECT_EQ(finding.kind, Finding::Kind::kDoubleRun);
  EXPECT_EQ(finding.controller, "service");
  EXPECT_EQ(finding.from_ms, 500);
  EXPECT_EQ(finding.to_ms, 2500);
  EXPECT_EQ(finding.runs[0].node, "cp-1");
  EXPECT_EQ(finding.runs[1].node, "cp-2");
  EXPECT_THAT(finding.Summary(), HasSubstr("kube-controller-manager on cp-1 (pid 11)"));
  EXPECT_THAT(finding.Summary(), HasSubstr("cloud-controller-manager on cp-2 (pid 22)"));
  nlohmann::json evidence = nlohmann::json::parse(finding.EvidenceJson());
  EXPECT_EQ(evidence["finding"], "double-run");
  EXPECT_EQ(evidence["runs"].size(), 2u);

  std::vector<v1::CloudControllerView> views = detector.View();
  EXPECT_THAT(ViewOf(views, "service").runners(), SizeIs(2));
  EXPECT_THAT(ViewOf(views, "route").runners(), IsEmpty());
}

TEST(DoubleRunDetectorTest, AHandoverWithoutOverlapIsNoDoubleRunAndItsGapIsMeasured) {
  DoubleRunDetector detector(Options());
  std::vector<Finding> findings;
  auto observe = [&](const std::string& node, const v1::ControllerSample& sample) {
    std::vector<Finding> found = detector.Observe(node, sample);
    findings.insert(findings.end(), found.begin(), found.end());
  };
  // cp-1's manager runs service until 3000, is gone at 4000; cp-2's starts it at 5500.
  for (int64_t t = 0; t <= 3000; t += 1000) {
    observe("cp-1", Sample(t, {{kKcm, 11, {"service"}}}));
    observe("cp-2", Sample(t + 500, {{kCcm, 22, {}}}));
  }
  observe("cp-1", Sample(4000, {}));
  observe("cp-2", Sample(4500, {{kCcm, 22, {}}}));
  EXPECT_EQ(ViewOf(detector.View(), "service").none_since_unix_ms(), 3000);
  observe("cp-1", Sample(5000, {}));
  observe("cp-2", Sample(5500, {{kCcm, 22, {"service"}}}));
  observe("cp-2", Sample(9500, {{kCcm, 22, {"service"}}}));
  EXPECT_THAT(findings, IsEmpty());
  const v1::CloudControllerView service = ViewOf(detector.View(), "service");
  ASSERT_THAT(service.runners(), SizeIs(1));
  EXPECT_EQ(service.runners(0).node(), "cp-2");
  EXPECT_EQ(service.runners(0).since_unix_ms(), 5500);
  EXPECT_EQ(service.none_since_unix_ms(), 0);
  EXPECT_EQ(service.last_gap_start_unix_ms(), 3000);
  EXPECT_EQ(service.last_gap_end_unix_ms(), 5500);
}

TEST(DoubleRunDetectorTest, AnOverlapShorterThanTheConfirmTimeIsNotAFinding) {
  DoubleRunDetector detector(Options());
  EXPECT_THAT(detector.Observe("cp-1", Sample(0, {{kKcm, 11, {"service"}}})), IsEmpty());
  EXPECT_THAT(detector.Observe("cp-2", Sample(100, {{kCcm, 22, {"service"}}})), IsEmpty());
  EXPECT_THAT(detector.Observe("cp-1", Sample(1000, {{kKcm, 11, {"service"}}})), IsEmpty());
  EXPECT_THAT(detector.Observe("cp-1", Sample(2000, {})), IsEmpty());
  EXPECT_THAT(detector.Observe("cp-2", Sample(2100, {{kCcm, 22, {"service"}}})), IsEmpty());
}

TEST(DoubleRunDetectorTest, BothManagersOfOneNodeCount) {
  DoubleRunDetector detector(Options());
  std::vector<Finding> findings;
  for (int64_t t = 0; t <= 2000; t += 1000) {
    findings =
        detector.Observe("cp-1", Sample(t, {{kKcm, 11, {"service"}}, {kCcm, 12, {"service"}}}));
  }
  ASSERT_THAT(findings, SizeIs(1));
  EXPECT_EQ(findings[0].runs[0].node, "cp-1");
  EXPECT_EQ(findings[0].runs[1].node, "cp-1");
}

TEST(DoubleRunDetectorTest, AFinishedDoubleRunIsStillProven) {
  // Each process seen at both ends of its run; the overlap is proven although neither runs now.
  DoubleRunDetector detector(Options());
  detector.Observe("cp-1", Sample(0, {{kKcm, 11, {"service"}}}));
  detector.Observe("cp-2", Sample(500, {{kCcm, 22, {"service"}}}));
  detector.Observe("cp-2", Sample(3500, {{kCcm, 22, {"service"}}}));
  std::vector<Finding> findings = detector.Observe("cp-1", Sample(3000, {{kKcm, 11, {"service"}}}));
  ASSERT_THAT(findings, SizeIs(1));
  EXPECT_EQ(findings[0].from_ms, 500);
  EXPECT_EQ(findings[0].to_ms, 3000);
}

TEST(DoubleRunDetectorTest, ALongGapIsAFindingOnlyWhileEveryNodeIsKnown) {
  DoubleRunDetector detector(Options());
  detector.Observe("cp-1", Sample(0, {{kKcm, 11, {"service"}}}));
  detector.Observe("cp-2", Sample(0, {{kCcm, 22, {}}}));
  detector.Observe("cp-1", Sample(1000, {}));
  // cp-2's agent goes away: what runs there is unknown, so no gap grows into a finding.
  detector.Away("cp-2");
  EXPECT_THAT(detector.Observe("cp-1", Sample(20000, {})), IsEmpty());
  EXPECT_THAT(ViewOf(detector.View(), "service").unknown_reason(), HasSubstr("cp-2: agent away"));
  // A manager that does not answer may be the one running it: unknown too.
  EXPECT_THAT(detector.Observe("cp-2", Sample(21000, {{kCcm, 22, {}, /*answered=*/false}})),
              IsEmpty());
  // Known again, and still nobody: the gap since 1000's last sighting (0) is past the limit.
  std::vector<Finding> findings = detector.Observe("cp-2", Sample(22000, {{kCcm, 22, {}}}));
  ASSERT_THAT(findings, SizeIs(1));
  EXPECT_EQ(findings[0].kind, Finding::Kind::kLongGap);
  EXPECT_EQ(findings[0].from_ms, 0);
  EXPECT_EQ(findings[0].to_ms, 22000);
  EXPECT_THAT(findings[0].Summary(), HasSubstr("service has run nowhere for 22s"));
  // Once per gap.
  EXPECT_THAT(detector.Observe("cp-2", Sample(23000, {{kCcm, 22, {}}})), IsEmpty());
}

// A member removed from the rollout (its machine gone) no longer keeps gaps from being measured;
// a new member does until its first sample.
TEST(DoubleRunDetectorTest, TheMembersDecideWhoseKnowledgeAGapNeeds) {
  DoubleRunDetector detector(Options());
  detector.Observe("cp-1", Sample(0, {{kKcm, 11, {"service"}}}));
  detector.Observe("cp-2", Sample(0, {{kCcm, 22, {}}}));
  detector.Away("cp-2");
  EXPECT_THAT(detector.Observe("cp-1", Sample(20000, {})), IsEmpty());
  detector.SetNodes({"cp-1", "cp-3"});
  // cp-3 has said nothing yet.
  EXPECT_THAT(detector.Observe("cp-1", Sample(21000, {})), IsEmpty());
  EXPECT_THAT(ViewOf(detector.View(), "service").unknown_reason(),
              HasSubstr("cp-3: no sample yet"));
  std::vector<Finding> findings = detector.Observe("cp-3", Sample(22000, {{kCcm, 33, {}}}));
  ASSERT_THAT(findings, SizeIs(1));
  EXPECT_EQ(findings[0].kind, Finding::Kind::kLongGap);
}

// A node that is not a member (a candidate) proves runs, a double run included, and its going away
// holds no gap back.
TEST(DoubleRunDetectorTest, ACandidatesRunsCountAndItsAbsenceHoldsNothingBack) {
  DoubleRunDetector detector(Options());
  detector.Observe("cp-1", Sample(0, {{kKcm, 11, {"service"}}}));
  detector.Observe("cp-2", Sample(0, {{kCcm, 22, {}}}));
  detector.Observe("cp-9", Sample(0, {{kKcm, 99, {"service"}}}));
  detector.Observe("cp-1", Sample(3000, {{kKcm, 11, {"service"}}}));
  std::vector<Finding> findings = detector.Observe("cp-9", Sample(3000, {{kKcm, 99, {"service"}}}));
  ASSERT_THAT(findings, SizeIs(1));
  EXPECT_EQ(findings[0].kind, Finding::Kind::kDoubleRun);
  detector.Away("cp-9");
  detector.Observe("cp-2", Sample(4000, {{kCcm, 22, {}}}));
  detector.Observe("cp-1", Sample(4000, {}));
  findings = detector.Observe("cp-1", Sample(20000, {}));
  ASSERT_THAT(findings, SizeIs(1));
  EXPECT_EQ(findings[0].kind, Finding::Kind::kLongGap);
}

TEST(DoubleRunDetectorTest, AControllerNoManagerRunsHasNoGap) {
  // route with --configure-cloud-routes=false: never started anywhere, never a finding.
  DoubleRunDetector detector(Options());
  EXPECT_THAT(detector.Observe("cp-1", Sample(0, {{kKcm, 11, {"service"}}})), IsEmpty());
  EXPECT_THAT(detector.Observe("cp-2", Sample(0, {{kCcm, 22, {}}})), IsEmpty());
  EXPECT_THAT(detector.Observe("cp-1", Sample(60000, {{kKcm, 11, {"service"}}})), IsEmpty());
  const v1::CloudControllerView route = ViewOf(detector.View(), "route");
  EXPECT_THAT(route.runners(), IsEmpty());
  EXPECT_EQ(route.none_since_unix_ms(), 0);
}

TEST(DoubleRunDetectorTest, NothingIsShownBeforeAnyAgentSampled) {
  DoubleRunDetector detector(Options());
  EXPECT_THAT(detector.View(), IsEmpty());
  detector.Observe("cp-1", Sample(0, {{kKcm, 11, {"service"}}}));
  std::vector<v1::CloudControllerView> views = detector.View();
  ASSERT_THAT(views, SizeIs(2));
  EXPECT_THAT(views[0].unknown_reason(), HasSubstr("cp-2: no sample yet"));
}

TEST(DoubleRunDetectorTest, AnOlderSampleThanOneSeenIsIgnored) {
  DoubleRunDetector detector(Options());
  detector.Observe("cp-1", Sample(5000, {{kKcm, 11, {"service"}}}));
  detector.Observe("cp-1", Sample(1000, {{kKcm, 11, {}}}));
  EXPECT_THAT(ViewOf(detector.View(), "service").runners(), SizeIs(1));
}

// The probe's case (a): cp-2's clock is stepped back an hour while it runs the controller. Its
// samples used to be dropped as older than the last one for that hour: the node counted as
// "agent away" while connected, and a gap went unmeasured. Anchored to the receive time, they
// keep counting, and a gap after it is measured.
TEST(DoubleRunDetectorTest, ANodeClockSteppedBackBlindsNothing) {
  constexpr int64_t kHour = 3600 * 1000;
  const int64_t base = 1'800'000'000'000;  // the coordinator's clock
  DoubleRunDetector detector(Options());
  for (int64_t t = 0; t <= 5000; t += 1000) {
    EXPECT_THAT(detector.Observe("cp-1", Sample(base + t, {{kKcm, 11, {}}}), base + t), IsEmpty());
    // cp-2's clock: right until 3000, then an hour behind.
    const int64_t node_clock = t < 3000 ? base + t : base + t - kHour;
    EXPECT_THAT(detector.Observe("cp-2", Sample(node_clock, {{kCcm, 22, {"service"}}}), base + t),
                IsEmpty());
  }
  v1::CloudControllerView view = ViewOf(detector.View(), "service");
  EXPECT_EQ(view.unknown_reason(), "");
  ASSERT_THAT(view.runners(), SizeIs(1));
  EXPECT_EQ(view.runners(0).node(), "cp-2");

  // The manager on cp-2 stops; no one runs the controller from then on. The gap is measured on
  // the anchored times and reported past the limit (10 s).
  std::vector<Finding> findings;
  for (int64_t t = 6000; t <= 20000; t += 1000) {
    std::vector<Finding> a = detector.Observe("cp-1", Sample(base + t, {{kKcm, 11, {}}}), base + t);
    std::vector<Finding> b =
        detector.Observe("cp-2", Sample(base + t - kHour, {{kCcm, 23, {}}}), base + t);
    findings.insert(findings.end(), a.begin(), a.end());
    findings.insert(findings.end(), b.begin(), b.end());
  }
  ASSERT_THAT(findings, SizeIs(1));
  EXPECT_EQ(findings[0].kind, Finding::Kind::kLongGap);
  EXPECT_EQ(findings[0].from_ms, base + 5000);  // the last sighting, on the coordinator's clock
}

// And forward: a node whose clock jumps ahead an hour and is then set right again is not dropped
// for the hour either.
TEST(DoubleRunDetectorTest, ANodeClockSteppedForwardAndBackBlindsNothing) {
  constexpr int64_t kHour = 3600 * 1000;
  const int64_t base = 1'800'000'000'000;
  DoubleRunDetector detector(Options());
  for (int64_t t = 0; t <= 6000; t += 1000) {
    const int64_t node_clock = t >= 2000 && t < 4000 ? base + t + kHour : base + t;
    detector.Observe("cp-1", Sample(node_clock, {{kKcm, 11, {"service"}}}), base + t);
    detector.Observe("cp-2", Sample(base + t, {{kCcm, 22, {}}}), base + t);
  }
  v1::CloudControllerView view = ViewOf(detector.View(), "service");
  ASSERT_THAT(view.runners(), SizeIs(1));
  EXPECT_EQ(view.runners(0).since_unix_ms(), base);
  EXPECT_EQ(view.unknown_reason(), "");
}

// Within one stream the node's own spacing is kept (its clock is exact on itself); the anchor is
// found again only when a sample strays past clock_step_ms.
TEST(DoubleRunDetectorTest, ReceiveDelaysDoNotMoveTheNodesTimes) {
  const int64_t base = 1'800'000'000'000;
  DoubleRunDetector detector(Options());
  // Received with delays of 40 ms to 3 s: the times stay the node's, shifted by the first offset.
  const int64_t delays[] = {40, 3000, 100, 2500, 40};
  for (int i = 0; i < 5; ++i) {
    const int64_t t = i * 1000;
    detector.Observe("cp-1", Sample(base - 7 + t, {{kKcm, 11, {"service"}}}), base + t + delays[i]);
  }
  v1::CloudControllerView view = ViewOf(detector.View(), "service");
  ASSERT_THAT(view.runners(), SizeIs(1));
  EXPECT_EQ(view.runners(0).since_unix_ms(), base + 40);  // offset 47, found at the first sample
}

// The probe's case (b): every detector sample brought a new pid, and every pair of every run
// ever seen was compared again: 3,000 samples cost 30-40 s of coordinator CPU. Over many
// histories the runs kept stay bounded, and so does each sample's work.
TEST(DoubleRunDetectorTest, ASamplesCostAndTheMemoryKeptAreBoundedWhateverTheHistory) {
  for (const int samples : {10, 300, 3000}) {
    for (const int pids_per_sample : {1, 2, 4}) {
      DetectorOptions options = Options();
      DoubleRunDetector detector(options);
      int64_t most_per_sample = 0;
      int64_t pid = 100;
      for (int i = 0; i < samples; ++i) {
        std::vector<Manager> managers;
        for (int p = 0; p < pids_per_sample; ++p) {
          managers.push_back({p % 2 == 0 ? kKcm : kCcm, pid++, {"service", "route"}});
        }
        const int64_t before = detector.comparisons();
        detector.Observe(i % 2 == 0 ? "cp-1" : "cp-2", Sample(i * 1000, managers), i * 1000);
        most_per_sample = std::max(most_per_sample, detector.comparisons() - before);
        ASSERT_LE(detector.RunsKept(),
                  options.controllers.size() * (options.max_finished_runs + 2 * pids_per_sample))
            << samples << " samples, " << pids_per_sample << " pids each";
      }
      // Each run sighted is compared with at most every run of its controller there is while
      // the sample is taken in: those kept, those it ended and those it starts.
      const int64_t bound = static_cast<int64_t>(options.controllers.size()) * pids_per_sample *
                            static_cast<int64_t>(options.max_finished_runs + 3 * pids_per_sample);
      EXPECT_LE(most_per_sample, bound) << samples << " samples, " << pids_per_sample << " pids";
    }
  }
}

// A double run is still proven when both runs ended before the proof came in, within what is kept.
TEST(DoubleRunDetectorTest, ForgettingOldRunsKeepsTheRecentProofs) {
  DetectorOptions options = Options();
  options.max_finished_runs = 4;
  DoubleRunDetector detector(options);
  // Churn on cp-1: many short runs, each ended.
  for (int64_t i = 0; i < 50; ++i) {
    detector.Observe("cp-1", Sample(i * 1000, {{kKcm, 1000 + i, {"route"}}}), i * 1000);
  }
  EXPECT_LE(detector.RunsKept(), 5u);
  // Then two managers overlap on "service" for 3 s.
  std::vector<Finding> findings;
  for (int64_t t = 60000; t <= 64000; t += 1000) {
    std::vector<Finding> a = detector.Observe("cp-1", Sample(t, {{kKcm, 11, {"service"}}}), t);
    std::vector<Finding> b = detector.Observe("cp-2", Sample(t, {{kCcm, 22, {"service"}}}), t);
    for (const std::vector<Finding>* some : {&a, &b}) {
      for (const Finding& finding : *some) {
        // (The churned "route" has run nowhere since: a long gap, not what this is about.)
        if (finding.kind == Finding::Kind::kDoubleRun) findings.push_back(finding);
      }
    }
  }
  ASSERT_THAT(findings, SizeIs(1));
  EXPECT_EQ(findings[0].controller, "service");
  EXPECT_EQ(findings[0].from_ms, 60000);
}

TEST(DoubleRunDetectorTest, ASampleListingMoreManagersThanANodeRunsIsTakenAsUnknown) {
  DoubleRunDetector detector(Options());
  std::vector<Manager> managers;
  for (int64_t pid = 1; pid <= 17; ++pid) managers.push_back({kKcm, pid, {"service"}});
  EXPECT_THAT(detector.Observe("cp-1", Sample(1000, managers), 1000), IsEmpty());
  EXPECT_EQ(detector.RunsKept(), 0u);
  EXPECT_THAT(ViewOf(detector.View(), "service").unknown_reason(),
              HasSubstr("cp-1: its sample lists 17 managers (at most 16 are taken)"));
}

}  // namespace
}  // namespace handoff::server
