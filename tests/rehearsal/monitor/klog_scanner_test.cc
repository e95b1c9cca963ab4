// The real managers' logs as run records: the klog line parser (every header field, lines that
// are not klog, the year at New Year), the pod-log scanner (the lines kube-controller-manager
// 1.26 and the cloud-controller-manager 1.27 really write, incremental reads, partial lines, two
// processes in one file, a replaced file), the pump (missing logs, failed appends), and the whole
// path through LiveMonitor: handovers measured and an overlap caught, as with the stand-ins.
//
// The log lines are written as the upstream code writes them: klog/v2 headers
// ("Lmmdd hh:mm:ss.uuuuuu PID file:line] ", pid right-aligned in 7 columns), with the messages and
// source lines of k8s.io/kubernetes v1.26.13 cmd/kube-controller-manager/app/controllermanager.go
// (Started: 622, migration: 289 and 313, lost: 294 and 318), k8s.io/cloud-provider v0.27.0
// app/controllermanager.go (Started: 336, migration: 265 and 288, lost: 272 and 292) and
// client-go tools/leaderelection/leaderelection.go (v0.26.13: 248 and 258; v0.27.0: 245 and 255).
#include "rehearsal/monitor/klog_scanner.h"

#include <set>
#include <string>
#include <vector>

#include "absl/time/civil_time.h"
#include "common/base/strings.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "rehearsal/monitor/monitor.h"
#include "tests/rehearsal/monitor/run_record_builders.h"
#include "tests/support/memory_file_system.h"

namespace handoff::sandbox {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;
using ::testing::IsEmpty;
using leadermigration::Component;

absl::Time Utc(int64_t year, int month, int day, int hour, int minute, int second,
               int micros = 0) {
  return absl::FromCivil(absl::CivilSecond(year, month, day, hour, minute, second),
                         absl::UTCTimeZone()) +
         absl::Microseconds(micros);
}
int64_t UtcNs(int64_t year, int month, int day, int hour, int minute, int second,
              int micros = 0) {
  return absl::ToUnixNanos(Utc(year, month, day, hour, minute, second, micros));
}

const KubeVersion kKcmVersion{1, 26, 13};
const KubeVersion kCcmVersion{1, 27, 2};

ManagerLogSource Source(std::string node, Component component, KubeVersion version,
                        std::string path) {
  ManagerLogSource source;
  source.node = std::move(node);
  source.component = component;
  source.version = version;
  source.path = std::move(path);
  return source;
}
ManagerLogSource Kcm(std::string node, std::string path = "") {
  return Source(std::move(node), Component::kKubeControllerManager, kKcmVersion, std::move(path));
}
ManagerLogSource Ccm(std::string node, std::string path = "") {
  return Source(std::move(node), Component::kCloudControllerManager, kCcmVersion, std::move(path));
}

std::string Lines(const std::vector<std::string>& lines) {
  std::string out;
  for (const std::string& line : lines) out += line + "\n";
  return out;
}

// A compact view of a record for the expectations: "event controller lock lease pid".
std::string Brief(const RunRecord& record) {
  std::string out = StrCat(record.event, " pid ", record.pid);
  if (!record.controller.empty()) StrAppend(&out, " ", record.controller, "/", record.lock);
  if (!record.lease.empty()) StrAppend(&out, " ", record.lease);
  return out;
}
std::vector<std::string> Briefs(const std::vector<RunRecord>& records) {
  std::vector<std::string> out;
  for (const RunRecord& record : records) out.push_back(Brief(record));
  return out;
}

const absl::Time kNow = Utc(2024, 3, 10, 13, 0, 0);

// ---- ParseKlogLine.

TEST(ParseKlogLineTest, ReadsEveryHeaderFieldAndTheMessage) {
  const std::optional<KlogLine> line = ParseKlogLine(
      R"(I0310 12:00:01.123456   19986 controllermanager.go:622] Started "route")", kNow);
  ASSERT_TRUE(line.has_value());
  EXPECT_EQ(line->severity, 'I');
  EXPECT_EQ(line->t_ns, UtcNs(2024, 3, 10, 12, 0, 1, 123456));
  EXPECT_EQ(line->pid, 19986);
  EXPECT_EQ(line->file, "controllermanager.go");
  EXPECT_EQ(line->source_line, 622);
  EXPECT_EQ(line->message, R"(Started "route")");
}

TEST(ParseKlogLineTest, KeepsStructuredMessagesAsWrittenAndReadsEverySeverity) {
  // A real line, from kube-controller-manager v1.26.13 run without a kubeconfig.
  const std::optional<KlogLine> error = ParseKlogLine(
      R"(E1123 21:19:55.326094   19986 run.go:74] "command failed" err="stat /nonexistent: no such file or directory")",
      Utc(2024, 11, 23, 21, 20, 0));
  ASSERT_TRUE(error.has_value());
  EXPECT_EQ(error->severity, 'E');
  EXPECT_EQ(error->t_ns, UtcNs(2024, 11, 23, 21, 19, 55, 326094));
  EXPECT_EQ(error->file, "run.go");
  EXPECT_EQ(error->source_line, 74);
  EXPECT_EQ(error->message,
            R"("command failed" err="stat /nonexistent: no such file or directory")");

  const std::optional<KlogLine> warning =
      ParseKlogLine(R"(W0310 12:00:02.000001       7 controllermanager.go:610] Skipping "route")",
                    kNow);
  ASSERT_TRUE(warning.has_value());
  EXPECT_EQ(warning->severity, 'W');
  EXPECT_EQ(warning->pid, 7);
  const std::optional<KlogLine> fatal = ParseKlogLine(
      "F0310 12:00:03.000000 4194304 controllermanager.go:733] error creating lock: x", kNow);
  ASSERT_TRUE(fatal.has_value());
  EXPECT_EQ(fatal->severity, 'F');
  EXPECT_EQ(fatal->pid, 4194304);
  // An empty message still has its "] ".
  const std::optional<KlogLine> empty =
      ParseKlogLine("I0310 12:00:03.000000       1 main.go:1] ", kNow);
  ASSERT_TRUE(empty.has_value());
  EXPECT_EQ(empty->message, "");
}

TEST(ParseKlogLineTest, AnythingElseIsNotAKlogLine) {
  for (const char* text : {
           "",
           "panic: runtime error: invalid memory address or nil pointer dereference",
           "goroutine 1 [running]:",
           "\tk8s.io/kubernetes/cmd/kube-controller-manager/app.Run(0xc000)",
           "Flag --cloud-provider has been deprecated, will be removed in 1.25 or later",
           "X0310 12:00:01.123456   19986 controllermanager.go:622] Started \"route\"",
           "i0310 12:00:01.123456   19986 controllermanager.go:622] Started \"route\"",
           "I1310 12:00:01.123456   19986 controllermanager.go:622] month 13",
           "I0300 12:00:01.123456   19986 controllermanager.go:622] day 0",
           "I0332 12:00:01.123456   19986 controllermanager.go:622] day 32",
           "I0230 12:00:01.123456   19986 controllermanager.go:622] 30 February",
           "I0310 24:00:01.123456   19986 controllermanager.go:622] hour 24",
           "I0310 12:60:01.123456   19986 controllermanager.go:622] minute 60",
           "I0310 12:00:60.123456   19986 controllermanager.go:622] second 60",
           "I0310 12:00:01.12345    19986 controllermanager.go:622] five digits of micros",
           "I0310 12:00:01,123456   19986 controllermanager.go:622] comma",
           "I0310 12:00:01.123456 controllermanager.go:622] no pid",
           "I0310 12:00:01.123456   19986 controllermanager.go:622 no bracket",
           "I0310 12:00:01.123456   19986 controllermanager.go:622]no space",
           "I0310 12:00:01.123456   19986 controllermanager.go] no line number",
           "I0310 12:00:01.123456   19986 controllermanager.go:6x2] bad line number",
           "I0310 12:00:01.123456   19a86 controllermanager.go:622] bad pid",
           "I0310 12:00",
       }) {
    EXPECT_FALSE(ParseKlogLine(text, kNow).has_value()) << text;
  }
}

TEST(ParseKlogLineTest, TheYearIsTheLatestThatIsNoMoreThanADayAfterNow) {
  auto year_of = [](const char* mmdd_time, absl::Time now) -> int64_t {
    const std::optional<KlogLine> line =
        ParseKlogLine(StrCat("I", mmdd_time, "       1 x.go:1] m"), now);
    if (!line) return -1;
    return absl::ToCivilYear(absl::FromUnixNanos(line->t_ns), absl::UTCTimeZone()).year();
  };
  // Read ten seconds into the new year: last night's lines are last year's.
  const absl::Time new_year = Utc(2025, 1, 1, 0, 0, 10);
  EXPECT_EQ(year_of("1231 23:59:59.999999", new_year), 2024);
  EXPECT_EQ(year_of("0101 00:00:05.000000", new_year), 2025);
  // A line a little ahead of the reader's clock, across New Year: next year's.
  const absl::Time new_years_eve = Utc(2024, 12, 31, 23, 59, 59);
  EXPECT_EQ(year_of("0101 00:00:01.000000", new_years_eve), 2025);
  EXPECT_EQ(year_of("1231 23:59:58.000000", new_years_eve), 2024);
  // The bound is exactly one day after now.
  EXPECT_EQ(year_of("0311 13:00:00.000000", kNow), 2024);
  EXPECT_EQ(year_of("0311 13:00:00.000001", kNow), 2023);
  // 29 February exists in leap years only: read on 1 March 2025, it is 2024's.
  EXPECT_EQ(year_of("0229 23:59:59.000000", Utc(2025, 3, 1, 0, 0, 30)), 2024);
  // ... and, more than a year later, in none of the candidate years.
  EXPECT_EQ(year_of("0229 23:59:59.000000", Utc(2026, 3, 1, 0, 0, 30)), -1);
  const std::optional<KlogLine> exact =
      ParseKlogLine("I1231 23:59:59.999999       1 x.go:1] m", new_year);
  ASSERT_TRUE(exact.has_value());
  EXPECT_EQ(exact->t_ns, UtcNs(2024, 12, 31, 23, 59, 59, 999999));
}

// ---- PodLogScanner on what the managers really log.

// kube-controller-manager 1.26 with --cloud-provider=aws and no Leader Migration: every cloud
// controller under the main lock, under their 1.26 names.
const std::vector<std::string> kKcmWithoutMigration = {
    R"(I0310 12:00:00.100000     101 controllermanager.go:182] Version: v1.26.13)",
    R"(I0310 12:00:00.200000     101 leaderelection.go:248] attempting to acquire leader lease kube-system/kube-controller-manager...)",
    R"(I0310 12:00:00.300000     101 leaderelection.go:258] successfully acquired lease kube-system/kube-controller-manager)",
    R"(I0310 12:00:00.400000     101 controllermanager.go:622] Started "serviceaccount-token")",
    R"(I0310 12:00:00.500000     101 controllermanager.go:622] Started "nodeipam")",
    R"(W0310 12:00:00.550000     101 controllermanager.go:600] Skipping "route")",
    R"(I0310 12:00:00.600000     101 controllermanager.go:622] Started "service")",
    R"(I0310 12:00:00.700000     101 controllermanager.go:622] Started "cloud-node-lifecycle")",
    R"(I0310 12:00:00.800000     101 controllermanager.go:622] Started "garbagecollector")",
};

TEST(PodLogScannerTest, KubeControllerManagerWithoutMigrationRunsEverythingUnderMain) {
  PodLogScanner scanner(Kcm("cp-1"));
  const std::string content = Lines(kKcmWithoutMigration);
  const std::vector<RunRecord> records = scanner.Scan(content, kNow);
  EXPECT_THAT(Briefs(records),
              ElementsAre("lease-acquired pid 101 kube-system/kube-controller-manager",
                          "controller-start pid 101 node-ipam/main",
                          "controller-start pid 101 service/main",
                          "controller-start pid 101 cloud-node-lifecycle/main"));
  ASSERT_EQ(records.size(), 4u);
  EXPECT_EQ(records[1].t_ns, UtcNs(2024, 3, 10, 12, 0, 0, 500000));
  EXPECT_EQ(records[1].node, "cp-1");
  EXPECT_EQ(records[1].component, "kube-controller-manager");
  for (const RunRecord& record : records) {
    EXPECT_TRUE(ParseRunRecord(FormatRunRecord(record)).ok()) << FormatRunRecord(record);
  }
  EXPECT_EQ(scanner.offset(), static_cast<int64_t>(content.size()));
}

// kube-controller-manager 1.26 prepared for the migration, then its migration lease lost.
const std::vector<std::string> kKcmWithMigration = {
    R"(I0310 12:00:00.100000     102 controllermanager.go:182] Version: v1.26.13)",
    R"(I0310 12:00:00.150000     102 controllermanager.go:265] starting leader migration)",
    R"(I0310 12:00:00.200000     102 leaderelection.go:248] attempting to acquire leader lease kube-system/kube-controller-manager...)",
    R"(I0310 12:00:00.300000     102 leaderelection.go:258] successfully acquired lease kube-system/kube-controller-manager)",
    R"(I0310 12:00:00.310000     102 controllermanager.go:289] leader migration: starting main controllers.)",
    R"(I0310 12:00:00.400000     102 controllermanager.go:622] Started "serviceaccount-token")",
    R"(I0310 12:00:00.410000     102 leaderelection.go:248] attempting to acquire leader lease kube-system/cloud-provider-extraction-migration...)",
    R"(I0310 12:00:00.500000     102 leaderelection.go:258] successfully acquired lease kube-system/cloud-provider-extraction-migration)",
    R"(I0310 12:00:00.510000     102 controllermanager.go:313] leader migration: starting migrated controllers.)",
    R"(I0310 12:00:00.600000     102 controllermanager.go:622] Started "route")",
    R"(I0310 12:00:00.700000     102 controllermanager.go:622] Started "service")",
    R"(I0310 12:00:00.800000     102 controllermanager.go:622] Started "cloud-node-lifecycle")",
    R"(I0310 12:00:30.000000     102 leaderelection.go:283] failed to renew lease kube-system/cloud-provider-extraction-migration: timed out waiting for the condition)",
    R"(E0310 12:00:30.000100     102 controllermanager.go:318] "migration leaderelection lost")",
};

TEST(PodLogScannerTest, KubeControllerManagerWithMigrationRunsTheCloudControllersUnderMigration) {
  PodLogScanner scanner(Kcm("cp-2"));
  const std::vector<RunRecord> records = scanner.Scan(Lines(kKcmWithMigration), kNow);
  EXPECT_THAT(
      Briefs(records),
      ElementsAre("lease-acquired pid 102 kube-system/kube-controller-manager",
                  "lease-acquired pid 102 kube-system/cloud-provider-extraction-migration",
                  "controller-start pid 102 route/migration",
                  "controller-start pid 102 service/migration",
                  "controller-start pid 102 cloud-node-lifecycle/migration",
                  "lease-lost pid 102 kube-system/cloud-provider-extraction-migration"));
  EXPECT_EQ(records.back().t_ns, UtcNs(2024, 3, 10, 12, 0, 30, 100));
  EXPECT_EQ(records.back().node, "cp-2");
}

// aws-cloud-controller-manager 1.27 (k8s.io/cloud-provider v0.27.0) with Leader Migration; its
// "cloud-node" is not a migrated controller.
const std::vector<std::string> kCcmWithMigration = {
    R"(I0310 12:01:00.100000     301 controllermanager.go:167] Version: v1.27.2)",
    R"(I0310 12:01:00.150000     301 controllermanager.go:248] starting leader migration)",
    R"(I0310 12:01:00.200000     301 leaderelection.go:245] attempting to acquire leader lease kube-system/cloud-controller-manager...)",
    R"(I0310 12:01:00.300000     301 leaderelection.go:255] successfully acquired lease kube-system/cloud-controller-manager)",
    R"(I0310 12:01:00.310000     301 controllermanager.go:265] leader migration: starting main controllers.)",
    R"(I0310 12:01:00.320000     301 controllermanager.go:336] Started "cloud-node")",
    R"(I0310 12:01:00.330000     301 leaderelection.go:245] attempting to acquire leader lease kube-system/cloud-provider-extraction-migration...)",
    R"(I0310 12:01:20.000000     301 leaderelection.go:255] successfully acquired lease kube-system/cloud-provider-extraction-migration)",
    R"(I0310 12:01:20.010000     301 controllermanager.go:288] leader migration: starting migrated controllers.)",
    R"(I0310 12:01:20.100000     301 controllermanager.go:336] Started "service")",
    R"(I0310 12:01:20.200000     301 controllermanager.go:336] Started "route")",
    R"(I0310 12:01:20.300000     301 controllermanager.go:336] Started "cloud-node-lifecycle")",
    R"(E0310 12:02:00.000000     301 controllermanager.go:272] "leaderelection lost")",
};

TEST(PodLogScannerTest, CloudControllerManagerIgnoresCloudNodeAndLosesItsMainLease) {
  PodLogScanner scanner(Ccm("cp-1"));
  const std::vector<RunRecord> records = scanner.Scan(Lines(kCcmWithMigration), kNow);
  EXPECT_THAT(
      Briefs(records),
      ElementsAre("lease-acquired pid 301 kube-system/cloud-controller-manager",
                  "lease-acquired pid 301 kube-system/cloud-provider-extraction-migration",
                  "controller-start pid 301 service/migration",
                  "controller-start pid 301 route/migration",
                  "controller-start pid 301 cloud-node-lifecycle/migration",
                  "lease-lost pid 301 kube-system/cloud-controller-manager"));
  ASSERT_FALSE(records.empty());
  EXPECT_EQ(records[0].component, "cloud-controller-manager");
}

// A real log: kube-controller-manager v1.26.13 (built from source, hence its version string)
// with --enable-leader-migration --allocate-node-cidrs, against a real kube-apiserver v1.26.13;
// its migration lease was then given to another holder. Excerpt (other controllers left out).
// "nodeipam" is not in the default configuration: it runs under the main lock, although it is
// logged after "starting migrated controllers.".
const std::vector<std::string> kRealKcm126Log = {
    R"(I1123 21:26:51.453839    2585 controllermanager.go:182] Version: v0.0.0-master+$Format:%H$)",
    R"(I1123 21:26:51.454176    2585 controllermanager.go:265] starting leader migration)",
    R"(I1123 21:26:51.454353    2585 leaderelection.go:248] attempting to acquire leader lease kube-system/kube-controller-manager...)",
    R"(I1123 21:26:51.463824    2585 event.go:294] "Event occurred" object="kube-system/kube-controller-manager" fieldPath="" kind="Lease" apiVersion="coordination.k8s.io/v1" type="Normal" reason="LeaderElection" message="vm_235d59ff-a4f1-4cfa-80e7-6298cd89a173 became leader")",
    R"(I1123 21:26:51.464112    2585 leaderelection.go:258] successfully acquired lease kube-system/kube-controller-manager)",
    R"(I1123 21:26:51.464257    2585 controllermanager.go:289] leader migration: starting main controllers.)",
    R"(I1123 21:26:51.477061    2585 controllermanager.go:622] Started "pvc-protection")",
    R"(I1123 21:26:51.477986    2585 leaderelection.go:248] attempting to acquire leader lease kube-system/cloud-provider-extraction-migration...)",
    R"(I1123 21:26:51.498995    2585 leaderelection.go:258] successfully acquired lease kube-system/cloud-provider-extraction-migration)",
    R"(I1123 21:26:51.499210    2585 controllermanager.go:313] leader migration: starting migrated controllers.)",
    R"(I1123 21:26:51.519971    2585 controllermanager.go:622] Started "namespace")",
    R"(I1123 21:27:01.524008    2585 controllermanager.go:622] Started "nodeipam")",
    R"(I1123 21:27:01.524553    2585 controllermanager.go:622] Started "nodelifecycle")",
    R"(I1123 21:27:25.596908    2585 leaderelection.go:283] failed to renew lease kube-system/cloud-provider-extraction-migration: timed out waiting for the condition)",
    R"(E1123 21:27:25.596963    2585 controllermanager.go:318] "migration leaderelection lost")",
};

TEST(PodLogScannerTest, ARealKubeControllerManagerLog) {
  PodLogScanner scanner(Kcm("cp-1"));
  const std::vector<RunRecord> records =
      scanner.Scan(Lines(kRealKcm126Log), Utc(2026, 11, 23, 21, 30, 0));
  EXPECT_THAT(
      Briefs(records),
      ElementsAre("lease-acquired pid 2585 kube-system/kube-controller-manager",
                  "lease-acquired pid 2585 kube-system/cloud-provider-extraction-migration",
                  "controller-start pid 2585 node-ipam/main",
                  "lease-lost pid 2585 kube-system/cloud-provider-extraction-migration"));
  ASSERT_EQ(records.size(), 4u);
  EXPECT_EQ(records[2].t_ns, UtcNs(2026, 11, 23, 21, 27, 1, 524008));
  EXPECT_EQ(records[3].t_ns, UtcNs(2026, 11, 23, 21, 27, 25, 596963));
}

TEST(PodLogScannerTest, TheLockFollowsTheMigrationConfigurationTheManagerWasGiven) {
  // route for kube-controller-manager, service for either, cloud-node-lifecycle for the CCM
  // (kube-controller-manager never starts it: "unowned"), nodeipam unlisted.
  leadermigration::Config config;
  config.controller_leaders = {{"route", "kube-controller-manager"},
                               {"service", "*"},
                               {"cloud-node-lifecycle", "cloud-controller-manager"}};
  ManagerLogSource source = Kcm("cp-1");
  source.migration_config = config;
  const std::vector<std::string> lines = {
      R"(I0310 12:00:00.150000     102 controllermanager.go:265] starting leader migration)",
      R"(I0310 12:00:00.600000     102 controllermanager.go:622] Started "route")",
      R"(I0310 12:00:00.700000     102 controllermanager.go:622] Started "service")",
      R"(I0310 12:00:00.800000     102 controllermanager.go:622] Started "nodeipam")",
  };
  PodLogScanner configured(source);
  EXPECT_THAT(Briefs(configured.Scan(Lines(lines), kNow)),
              ElementsAre("controller-start pid 102 route/migration",
                          "controller-start pid 102 service/migration",
                          "controller-start pid 102 node-ipam/main"));
  // Without Leader Migration the configuration does not matter: everything is main.
  PodLogScanner disabled(source);
  EXPECT_THAT(Briefs(disabled.Scan(Lines({lines.begin() + 1, lines.end()}), kNow)),
              ElementsAre("controller-start pid 102 route/main",
                          "controller-start pid 102 service/main",
                          "controller-start pid 102 node-ipam/main"));
}

TEST(PodLogScannerTest, ReadsIncrementallyAndLeavesAPartialLastLineForTheNextScan) {
  PodLogScanner scanner(Kcm("cp-1"));
  const std::string all = Lines(kKcmWithoutMigration);
  // Cut in the middle of the "nodeipam" line.
  const size_t cut = all.find("Started \"nodeipam\"") + 10;
  const std::string first = all.substr(0, cut);
  EXPECT_THAT(Briefs(scanner.Scan(first, kNow)),
              ElementsAre("lease-acquired pid 101 kube-system/kube-controller-manager"));
  const int64_t after_first = scanner.offset();
  EXPECT_EQ(after_first, static_cast<int64_t>(first.rfind('\n') + 1));
  // The same text again: nothing new, and the partial line is not taken as a line.
  EXPECT_THAT(scanner.Scan(first, kNow), IsEmpty());
  EXPECT_EQ(scanner.offset(), after_first);
  // The rest of the file: the cut line and those after it, once.
  EXPECT_THAT(Briefs(scanner.Scan(all, kNow)),
              ElementsAre("controller-start pid 101 node-ipam/main",
                          "controller-start pid 101 service/main",
                          "controller-start pid 101 cloud-node-lifecycle/main"));
  EXPECT_THAT(scanner.Scan(all, kNow), IsEmpty());
  EXPECT_EQ(scanner.offset(), static_cast<int64_t>(all.size()));
}

TEST(PodLogScannerTest, TwoProcessesInOneFileKeepTheirOwnLocks) {
  // The kubelet appends the restarted process after the one that exited: the first (pid 102)
  // had started its migrated controllers; the second reuses no state of it, not even with the
  // same pid.
  std::vector<std::string> lines = kKcmWithMigration;
  for (std::string line : kKcmWithoutMigration) {
    // Same pid as the first process, a minute later.
    line.replace(line.find("     101 "), 9, "     102 ");
    line.replace(line.find("12:00:"), 6, "12:01:");
    lines.push_back(line);
  }
  PodLogScanner scanner(Kcm("cp-2"));
  const std::vector<RunRecord> records = scanner.Scan(Lines(lines), kNow);
  ASSERT_EQ(records.size(), 10u);
  EXPECT_THAT(Briefs({records.begin() + 6, records.end()}),
              ElementsAre("lease-acquired pid 102 kube-system/kube-controller-manager",
                          "controller-start pid 102 node-ipam/main",
                          "controller-start pid 102 service/main",
                          "controller-start pid 102 cloud-node-lifecycle/main"));

  // Without the "Version:" line, the re-attempt of the main lease marks the new process.
  std::vector<std::string> without_version;
  for (const std::string& line : lines) {
    if (line.find("Version: ") == std::string::npos) without_version.push_back(line);
  }
  PodLogScanner again(Kcm("cp-2"));
  const std::vector<RunRecord> second = again.Scan(Lines(without_version), kNow);
  ASSERT_EQ(second.size(), 10u);
  EXPECT_EQ(Brief(second[7]), "controller-start pid 102 node-ipam/main");

  // Without lease lines (--leader-elect=false), the "Version:" line marks the new process.
  PodLogScanner unelected(Kcm("cp-2"));
  const std::vector<RunRecord> third = unelected.Scan(
      Lines({kKcmWithMigration[1], kKcmWithMigration[9],
             R"(I0310 12:05:00.000000     102 controllermanager.go:182] Version: v1.26.13)",
             R"(I0310 12:05:01.000000     102 controllermanager.go:622] Started "route")"}),
      kNow);
  EXPECT_THAT(Briefs(third), ElementsAre("controller-start pid 102 route/migration",
                                         "controller-start pid 102 route/main"));

  // Two processes with different pids, the second migrating, the first not.
  PodLogScanner interleaved(Kcm("cp-1"));
  const std::vector<RunRecord> both =
      interleaved.Scan(Lines({kKcmWithoutMigration[0], kKcmWithMigration[1],
                              kKcmWithMigration[9], kKcmWithoutMigration[6]}),
                       kNow);
  EXPECT_THAT(Briefs(both), ElementsAre("controller-start pid 102 route/migration",
                                        "controller-start pid 101 service/main"));
}

TEST(PodLogScannerTest, AReplacedFileIsReadAgainFromItsStart) {
  PodLogScanner scanner(Kcm("cp-1"));
  const std::string old_file = Lines(kKcmWithMigration);
  EXPECT_EQ(scanner.Scan(old_file, kNow).size(), 6u);

  // Shorter than what was read: another file.
  const std::string shorter = Lines({kKcmWithoutMigration[0], kKcmWithoutMigration[5 + 1]});
  EXPECT_THAT(Briefs(scanner.Scan(shorter, kNow)),
              ElementsAre("controller-start pid 101 service/main"))
      << "fresh state: the old file's migration line does not carry over";
  EXPECT_EQ(scanner.offset(), static_cast<int64_t>(shorter.size()));

  // Longer, but with another start: another file too, read from its first line.
  const std::string longer = Lines({kKcmWithoutMigration[2], kKcmWithoutMigration[4],
                                    kKcmWithoutMigration[6], kKcmWithoutMigration[7]});
  ASSERT_GT(longer.size(), shorter.size());
  EXPECT_THAT(Briefs(scanner.Scan(longer, kNow)),
              ElementsAre("lease-acquired pid 101 kube-system/kube-controller-manager",
                          "controller-start pid 101 node-ipam/main",
                          "controller-start pid 101 service/main",
                          "controller-start pid 101 cloud-node-lifecycle/main"));
  EXPECT_THAT(scanner.Scan(longer, kNow), IsEmpty());
}

// ---- LogRecordsPump.

// Appends to a MemoryFileSystem file, as AppendRunRecord does to a real one.
struct MemoryAppender {
  MemoryFileSystem* fs;
  absl::Status operator()(const std::string& path, const RunRecord& record) {
    absl::StatusOr<std::string> old = fs->ReadFile(path);
    fs->SetFile(path, (old.ok() ? *old : "") + FormatRunRecord(record) + "\n");
    return absl::OkStatus();
  }
};

TEST(LogRecordsPumpTest, AppendsEachNewRecordOnceAndWaitsForLogsThatDoNotExistYet) {
  MemoryFileSystem fs;
  fs.CreateDirectory("/records", 0755).IgnoreError();
  MemoryAppender appender{&fs};
  LogRecordsPump pump(fs, "/records", [&](const std::string& path, const RunRecord& record) {
    return appender(path, record);
  });
  const std::string kcm_log = "/nodes/cp-1/var/log/pods/kube-controller-manager.log";
  const std::string ccm_log = "/nodes/cp-1/var/log/pods/cloud-controller-manager.log";
  pump.AddSource(Kcm("cp-1", kcm_log));
  pump.AddSource(Ccm("cp-1", ccm_log));
  EXPECT_EQ(pump.RecordsPath("cp-1"), "/records/cp-1.manager-logs.jsonl");

  ASSERT_TRUE(pump.Poll(kNow).ok()) << "no logs yet is not an error";
  EXPECT_FALSE(fs.Exists("/records/cp-1.manager-logs.jsonl"));

  fs.SetFile(kcm_log, Lines({kKcmWithoutMigration.begin(), kKcmWithoutMigration.begin() + 5}));
  ASSERT_TRUE(pump.Poll(kNow).ok());
  fs.SetFile(kcm_log, Lines(kKcmWithoutMigration));
  fs.SetFile(ccm_log, Lines(kCcmWithMigration));
  ASSERT_TRUE(pump.Poll(kNow).ok());
  ASSERT_TRUE(pump.Poll(kNow).ok());
  EXPECT_EQ(pump.appended(), 4 + 6);

  absl::StatusOr<std::vector<RunRecord>> written = ReadRunRecords(fs, "/records");
  ASSERT_TRUE(written.ok()) << written.status();
  EXPECT_THAT(Briefs(*written),
              ElementsAre("lease-acquired pid 101 kube-system/kube-controller-manager",
                          "controller-start pid 101 node-ipam/main",
                          "controller-start pid 101 service/main",
                          "controller-start pid 101 cloud-node-lifecycle/main",
                          "lease-acquired pid 301 kube-system/cloud-controller-manager",
                          "lease-acquired pid 301 kube-system/cloud-provider-extraction-migration",
                          "controller-start pid 301 service/migration",
                          "controller-start pid 301 route/migration",
                          "controller-start pid 301 cloud-node-lifecycle/migration",
                          "lease-lost pid 301 kube-system/cloud-controller-manager"));
}

TEST(LogRecordsPumpTest, AFailedAppendIsRetriedWithoutLosingOrRepeatingRecords) {
  MemoryFileSystem fs;
  MemoryAppender appender{&fs};
  int calls = 0;
  // The third append fails (disk full): two records are written, four wait.
  LogRecordsPump pump(fs, "/records/", [&](const std::string& path, const RunRecord& record) {
    if (++calls == 3) return absl::InternalError(StrCat("write ", path, ": disk full"));
    return appender(path, record);
  });
  const std::string log = "/nodes/cp-2/var/log/pods/kube-controller-manager.log";
  pump.AddSource(Kcm("cp-2", log));
  fs.SetFile(log, Lines(kKcmWithMigration));

  const absl::Status first = pump.Poll(kNow);
  EXPECT_EQ(first.code(), absl::StatusCode::kInternal);
  EXPECT_THAT(std::string(first.message()), HasSubstr("/records/cp-2.manager-logs.jsonl"));
  EXPECT_EQ(pump.appended(), 2);
  ASSERT_TRUE(pump.Poll(kNow).ok());
  EXPECT_EQ(pump.appended(), 6);
  ASSERT_TRUE(pump.Poll(kNow).ok());
  EXPECT_EQ(pump.appended(), 6);
  absl::StatusOr<std::vector<RunRecord>> written = ReadRunRecords(fs, "/records");
  ASSERT_TRUE(written.ok()) << written.status();
  EXPECT_THAT(
      Briefs(*written),
      ElementsAre("lease-acquired pid 102 kube-system/kube-controller-manager",
                  "lease-acquired pid 102 kube-system/cloud-provider-extraction-migration",
                  "controller-start pid 102 route/migration",
                  "controller-start pid 102 service/migration",
                  "controller-start pid 102 cloud-node-lifecycle/migration",
                  "lease-lost pid 102 kube-system/cloud-provider-extraction-migration"));

  // A log that cannot be read (a directory where the file should be) is an error naming it;
  // the other sources are still pumped.
  ASSERT_TRUE(fs.CreateDirectory("/nodes/cp-3", 0755).ok());
  ASSERT_TRUE(fs.CreateDirectory("/nodes/cp-3/pod.log", 0755).ok());
  pump.AddSource(Kcm("cp-3", "/nodes/cp-3/pod.log"));
  fs.SetFile(log, *fs.ReadFile(log) +
                      "I0310 12:00:50.000000     103 leaderelection.go:258] successfully acquired "
                      "lease kube-system/kube-controller-manager\n");
  const absl::Status unreadable = pump.Poll(kNow);
  EXPECT_EQ(unreadable.code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_THAT(std::string(unreadable.message()), HasSubstr("/nodes/cp-3/pod.log"));
  EXPECT_EQ(pump.appended(), 7) << "the cp-2 log was still pumped";
}

// ---- End to end: pod logs and kubelet records → LiveMonitor.

TEST(RealManagerMonitorTest, TheMonitorSeesHandoversAndOverlapsFromTheManagersOwnLogs) {
  MemoryFileSystem fs;
  fs.CreateDirectory("/records", 0755).IgnoreError();
  MemoryAppender appender{&fs};
  LogRecordsPump pump(fs, "/records", [&](const std::string& path, const RunRecord& record) {
    return appender(path, record);
  });
  const std::string kcm1_log = "/nodes/cp-1/var/log/pods/kube-controller-manager.log";
  const std::string ccm1_log = "/nodes/cp-1/var/log/pods/cloud-controller-manager.log";
  const std::string kcm2_log = "/nodes/cp-2/var/log/pods/kube-controller-manager.log";
  pump.AddSource(Kcm("cp-1", kcm1_log));
  pump.AddSource(Ccm("cp-1", ccm1_log));
  pump.AddSource(Kcm("cp-2", kcm2_log));

  // What the simulated kubelets record: cp-1's kube-controller-manager (pid 102, prepared for
  // the migration) is SIGKILLed at 12:00:40 when its manifest loses the cloud controllers; the
  // cloud-controller-manager (pid 301) starts on cp-1 at 12:01:00. cp-2's kube-controller-manager
  // (pid 101) has been running since 12:00:00.
  const ProcessId kcm1{"cp-1", test_records::kKcm, 102};
  const ProcessId ccm1{"cp-1", test_records::kCcm, 301};
  const ProcessId kcm2{"cp-2", test_records::kKcm, 101};
  fs.SetFile("/records/cp-1.jsonl",
             Lines({FormatRunRecord(test_records::ProcessStart(UtcNs(2024, 3, 10, 12, 0, 0), kcm1)),
                    FormatRunRecord(test_records::ProcessExit(UtcNs(2024, 3, 10, 12, 0, 40), kcm1,
                                                              "signal 9")),
                    FormatRunRecord(test_records::ProcessStart(UtcNs(2024, 3, 10, 12, 1, 0),
                                                               ccm1))}));
  fs.SetFile("/records/cp-2.jsonl", Lines({FormatRunRecord(test_records::ProcessStart(
                                        UtcNs(2024, 3, 10, 12, 0, 0), kcm2))}));

  // cp-1's KCM: migrated controllers from 12:00:00.6 until it is killed (its log just stops).
  fs.SetFile(kcm1_log, Lines({kKcmWithMigration.begin(), kKcmWithMigration.begin() + 12}));
  // cp-2's KCM is prepared too, but never gets the migration lease.
  std::vector<std::string> kcm2_lines;
  for (std::string line :
       std::vector<std::string>(kKcmWithMigration.begin(), kKcmWithMigration.begin() + 7)) {
    line.replace(line.find("     102 "), 9, "     101 ");
    if (line.find("successfully acquired lease kube-system/kube-controller-manager") !=
        std::string::npos) {
      continue;  // cp-1 holds the main lease
    }
    kcm2_lines.push_back(line);
  }
  fs.SetFile(kcm2_log, Lines(kcm2_lines));
  // The CCM, up to its migrated controllers (its lease is not lost in this run).
  fs.SetFile(ccm1_log, Lines({kCcmWithMigration.begin(), kCcmWithMigration.end() - 1}));

  MonitorOptions options;  // the leader-election defaults: a gap over 15s + 2s + 1s is long
  LiveMonitor monitor(fs, "/records", options);
  const int64_t now_ns = UtcNs(2024, 3, 10, 12, 2, 0);
  ASSERT_TRUE(pump.Poll(kNow).ok());
  ASSERT_TRUE(monitor.Poll(now_ns).ok());
  {
    const MonitorReport& report = monitor.report();
    EXPECT_TRUE(report.invariant_held) << report.Summary();
    for (const char* controller : {"route", "service", "cloud-node-lifecycle"}) {
      const ControllerStats* stats = nullptr;
      for (const ControllerStats& candidate : report.controllers) {
        if (candidate.controller == controller) stats = &candidate;
      }
      ASSERT_NE(stats, nullptr) << controller;
      ASSERT_EQ(stats->runs.size(), 2u) << controller << "\n" << report.Summary();
      EXPECT_EQ(stats->runs[0].process, kcm1);
      EXPECT_EQ(stats->runs[0].lock, kMigrationLock);
      EXPECT_EQ(stats->runs[0].to_ns, UtcNs(2024, 3, 10, 12, 0, 40));
      EXPECT_EQ(stats->runs[0].end, RunEnd::kExited);
      EXPECT_EQ(stats->runs[0].end_detail, "signal 9");
      EXPECT_EQ(stats->runs[1].process, ccm1);
      EXPECT_EQ(stats->runs[1].lock, kMigrationLock);
      EXPECT_EQ(stats->runs[1].end, RunEnd::kStillRunning);
      EXPECT_EQ(stats->runs[1].to_ns, now_ns);
    }
    // service: cp-1's KCM killed at 12:00:40, the CCM started it at 12:01:20.1: 40.1s without
    // a runner, longer than a lease expiry allows.
    std::vector<Handover> service;
    for (const Handover& handover : report.handovers) {
      if (handover.controller == "service") service.push_back(handover);
    }
    ASSERT_EQ(service.size(), 2u);
    EXPECT_EQ(service[1].from->process, kcm1);
    EXPECT_EQ(service[1].to->process, ccm1);
    EXPECT_EQ(service[1].at_ns, UtcNs(2024, 3, 10, 12, 1, 20, 100000));
    EXPECT_EQ(service[1].gap_ns, UtcNs(2024, 3, 10, 12, 1, 20, 100000) -
                                     UtcNs(2024, 3, 10, 12, 0, 40));
    EXPECT_TRUE(service[1].long_gap);
    EXPECT_EQ(report.locks.at("kube-controller-manager").at(kMigrationLock),
              (std::set<std::string>{"cloud-node-lifecycle", "route", "service"}));
    EXPECT_EQ(report.locks.at("kube-controller-manager").count(kMainLock), 0u);
    const std::string summary = report.Summary();
    EXPECT_THAT(summary, HasSubstr("cp-1 cloud-controller-manager pid 301 (migration lock)"));
    EXPECT_THAT(summary, HasSubstr("invariant held"));
  }

  // The unsafe order: cp-2's KCM restarted as a plain in-tree manager (no Leader Migration),
  // which takes the main lease and starts "service" beside the CCM.
  const ProcessId kcm2b{"cp-2", test_records::kKcm, 111};
  fs.SetFile("/records/cp-2.jsonl",
             *fs.ReadFile("/records/cp-2.jsonl") +
                 Lines({FormatRunRecord(test_records::ProcessExit(UtcNs(2024, 3, 10, 12, 1, 30),
                                                                  kcm2, "exit 0")),
                        FormatRunRecord(test_records::ProcessStart(UtcNs(2024, 3, 10, 12, 1, 31),
                                                                   kcm2b))}));
  std::vector<std::string> restarted;
  for (std::string line : kKcmWithoutMigration) {
    line.replace(line.find("     101 "), 9, "     111 ");
    line.replace(line.find("12:00:00."), 9, "12:01:40.");
    restarted.push_back(line);
  }
  fs.SetFile(kcm2_log, *fs.ReadFile(kcm2_log) + Lines(restarted));
  ASSERT_TRUE(pump.Poll(kNow).ok());
  ASSERT_TRUE(monitor.Poll(now_ns).ok());
  const MonitorReport& report = monitor.report();
  EXPECT_FALSE(report.invariant_held);
  ASSERT_GE(report.overlaps.size(), 1u) << report.Summary();
  std::vector<std::string> overlapping;
  for (const Overlap& overlap : report.overlaps) {
    overlapping.push_back(overlap.controller);
    EXPECT_EQ(overlap.first.process, ccm1);
    EXPECT_EQ(overlap.second.process, kcm2b);
    EXPECT_EQ(overlap.second.lock, kMainLock);
    EXPECT_EQ(overlap.to_ns, now_ns);
  }
  EXPECT_THAT(overlapping, ElementsAre("service", "cloud-node-lifecycle"));
  EXPECT_EQ(report.overlaps[0].from_ns, UtcNs(2024, 3, 10, 12, 1, 40, 600000));
  EXPECT_THAT(report.Summary(), HasSubstr("INVARIANT BROKEN"));
}

TEST(CanonicalControllerNameTest, NamesEveryCloudControllerAsRunRecordsDo) {
  std::vector<std::string> names;
  for (leadermigration::CloudController controller : leadermigration::kCloudControllers) {
    names.emplace_back(CanonicalControllerName(controller));
  }
  EXPECT_THAT(names, ElementsAre("route", "service", "cloud-node-lifecycle", "node-ipam"));
}

}  // namespace
}  // namespace handoff::sandbox

// ---- The CRI log format of a real kubelet's pods (containerd's /var/log/pods/.../N.log).

namespace handoff::sandbox {
namespace {

// A CRI line as containerd writes it: "<RFC 3339 time> <stream> <tag> <text>".
std::string Cri(const std::string& time, const std::string& text, const char* tag = "F") {
  return StrCat(time, " stderr ", tag, " ", text);
}

TEST(ParseCriLogLineTest, ReadsTheRuntimesTimeTagAndText) {
  const std::optional<CriLogLine> line = ParseCriLogLine(
      "2024-03-10T12:00:01.123456789Z stderr F I0310 12:00:01.123456       1 x.go:1] hi");
  ASSERT_TRUE(line.has_value());
  EXPECT_EQ(line->t_ns, UtcNs(2024, 3, 10, 12, 0, 1) + 123456789);
  EXPECT_FALSE(line->partial);
  EXPECT_EQ(line->text, "I0310 12:00:01.123456       1 x.go:1] hi");
  const std::optional<CriLogLine> partial =
      ParseCriLogLine("2024-03-10T12:00:01.1Z stdout P:x first half");
  ASSERT_TRUE(partial.has_value());
  EXPECT_TRUE(partial->partial);
  EXPECT_EQ(partial->text, "first half");
  for (const char* text :
       {"", "I0310 12:00:01.123456 1 x.go:1] a klog line", "2024-03-10T12:00:01Z stderr",
        "2024-03-10T12:00:01Z stdin F text", "2024-03-10T12:00:01Z stderr X text",
        "yesterday-at-noonZZZZZ stderr F text"}) {
    EXPECT_FALSE(ParseCriLogLine(text).has_value()) << text;
  }
}

TEST(PodLogScannerCriTest, JoinsPartialLinesAndNamesEachProcessByItsHostPid) {
  ManagerLogSource source = Kcm("cp-1");
  source.cri = true;
  // The runtime appends a second process of the same pod to the same file when the pod comes
  // back with the same UID: each "Version:" line starts a process, named by the time it logged.
  std::vector<int64_t> asked;
  source.pid_at = [&asked](int64_t t_ns) {
    asked.push_back(t_ns);
    return t_ns < UtcNs(2024, 3, 10, 12, 1, 0) ? 4100 : 5200;
  };
  PodLogScanner scanner(source);
  const std::string log =
      Lines({Cri("2024-03-10T12:00:01.000000000Z",
                 "I0310 12:00:01.000000       1 serving.go:348] Generated self-signed cert"),
             Cri("2024-03-10T12:00:01.100000000Z",
                 "I0310 12:00:01.100000       1 controllermanager.go:182] Version: v1.26.13"),
             Cri("2024-03-10T12:00:02.000000000Z",
                 "I0310 12:00:02.000000       1 leaderelection.go:258] successfully acquired lease "
                 "kube-sys",
                 "P"),
             Cri("2024-03-10T12:00:02.000000000Z", "tem/kube-controller-manager"),
             Cri("2024-03-10T12:00:02.500000000Z",
                 R"(I0310 12:00:02.500000       1 controllermanager.go:622] Started "service")"),
             Cri("2024-03-10T12:05:00.000000000Z",
                 "I0310 12:05:00.000000       1 controllermanager.go:182] Version: v1.26.13"),
             Cri("2024-03-10T12:05:03.000000000Z",
                 R"(I0310 12:05:03.000000       1 controllermanager.go:622] Started "service")")});
  EXPECT_THAT(Briefs(scanner.Scan(log, Utc(2024, 3, 10, 12, 10, 0))),
              ElementsAre("lease-acquired pid 4100 kube-system/kube-controller-manager",
                          "controller-start pid 4100 service/main",
                          "controller-start pid 5200 service/main"));
  // Asked at the first klog line, then at each process's Version line.
  EXPECT_THAT(asked, ElementsAre(UtcNs(2024, 3, 10, 12, 0, 1), UtcNs(2024, 3, 10, 12, 0, 1, 100000),
                                 UtcNs(2024, 3, 10, 12, 5, 0)));
}

TEST(PodLogScannerCriTest, HoldsBackLinesTooYoungForTheWriterToBeKnown) {
  ManagerLogSource source = Kcm("cp-1");
  source.cri = true;
  source.hold_back = absl::Seconds(1);
  PodLogScanner scanner(source);
  const std::string log =
      Lines({Cri("2024-03-10T12:00:00.000000000Z",
                 R"(I0310 12:00:00.000000       1 controllermanager.go:622] Started "service")"),
             Cri("2024-03-10T12:00:00.800000000Z",
                 R"(I0310 12:00:00.800000       1 controllermanager.go:622] Started "route")")});
  EXPECT_THAT(Briefs(scanner.Scan(log, Utc(2024, 3, 10, 12, 0, 1, 500000))),
              ElementsAre("controller-start pid 1 service/main"));
  // The younger line is read once it is old enough, and only once.
  EXPECT_THAT(Briefs(scanner.Scan(log, Utc(2024, 3, 10, 12, 0, 2))),
              ElementsAre("controller-start pid 1 route/main"));
  EXPECT_THAT(scanner.Scan(log, Utc(2024, 3, 10, 12, 0, 3)), IsEmpty());
}

}  // namespace
}  // namespace handoff::sandbox
