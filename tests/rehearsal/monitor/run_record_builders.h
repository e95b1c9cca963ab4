// Test helper: run records for the monitor's tests, built per process, and gtest printing of
// records as their JSON line.
#ifndef HANDOFF_TESTS_REHEARSAL_MONITOR_RUN_RECORD_BUILDERS_H_
#define HANDOFF_TESTS_REHEARSAL_MONITOR_RUN_RECORD_BUILDERS_H_

#include <cstdint>
#include <ostream>
#include <string>
#include <utility>

#include "rehearsal/monitor/monitor.h"
#include "rehearsal/monitor/run_record.h"

namespace handoff::sandbox {

inline void PrintTo(const RunRecord& record, std::ostream* os) { *os << FormatRunRecord(record); }

inline void PrintTo(const ProcessId& process, std::ostream* os) {
  *os << process.node << " " << process.component << " pid " << process.pid;
}

namespace test_records {

inline constexpr int64_t kMillisecond = 1'000'000;
inline constexpr int64_t kSecond = 1'000'000'000;
inline constexpr int64_t kT0 = 1'700'000'000 * kSecond;

inline constexpr char kKcm[] = "kube-controller-manager";
inline constexpr char kCcm[] = "cloud-controller-manager";

inline RunRecord Event(int64_t t_ns, const ProcessId& process, const char* event) {
  RunRecord record;
  record.t_ns = t_ns;
  record.node = process.node;
  record.component = process.component;
  record.pid = process.pid;
  record.event = event;
  return record;
}

inline RunRecord ControllerStart(int64_t t_ns, const ProcessId& process, std::string controller,
                                 std::string lock) {
  RunRecord record = Event(t_ns, process, kControllerStart);
  record.controller = std::move(controller);
  record.lock = std::move(lock);
  return record;
}

inline RunRecord ControllerStop(int64_t t_ns, const ProcessId& process, std::string controller,
                                std::string reason = "shutdown") {
  RunRecord record = Event(t_ns, process, kControllerStop);
  record.controller = std::move(controller);
  record.reason = std::move(reason);
  return record;
}

inline RunRecord ProcessStart(int64_t t_ns, const ProcessId& process) {
  return Event(t_ns, process, kProcessStart);
}

inline RunRecord ProcessExit(int64_t t_ns, const ProcessId& process, std::string status) {
  RunRecord record = Event(t_ns, process, kProcessExit);
  record.status = std::move(status);
  return record;
}

inline RunRecord MonitorNote(int64_t t_ns, std::string node, std::string message) {
  RunRecord record;
  record.t_ns = t_ns;
  record.node = std::move(node);
  record.event = kMonitorNote;
  record.message = std::move(message);
  return record;
}

}  // namespace test_records
}  // namespace handoff::sandbox

#endif  // HANDOFF_TESTS_REHEARSAL_MONITOR_RUN_RECORD_BUILDERS_H_
