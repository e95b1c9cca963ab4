// What a stand-in writes about itself for the sandbox's invariant monitor
// (rehearsal/monitor/run_record.h): process start, leases acquired and lost, and each
// cloud controller's start (with its lock) and stop (with the reason).
#ifndef HANDOFF_REHEARSAL_STANDIN_RUN_RECORDER_H_
#define HANDOFF_REHEARSAL_STANDIN_RUN_RECORDER_H_

#include <cstdint>
#include <memory>
#include <mutex>
#include <string>
#include <string_view>
#include <vector>

#include "common/system/clock.h"
#include "rehearsal/monitor/run_record.h"
#include "rehearsal/standin/controller_plan.h"
#include "spdlog/spdlog.h"

namespace handoff::standin {

inline constexpr char kReasonLeaseLost[] = "lease lost";
inline constexpr char kReasonShutdown[] = "shutdown";

// Where records go. Implementations are thread-safe.
class RecordSink {
 public:
  virtual ~RecordSink() = default;
  // Best effort: a record that cannot be written is logged, and the stand-in carries on (as a
  // controller manager would not stop for its own bookkeeping).
  virtual void Append(const sandbox::RunRecord& record) = 0;
};

// AppendRunRecord to `path` (one write(2) per line on an O_APPEND descriptor). Borrows nothing.
std::unique_ptr<RecordSink> NewFileRecordSink(std::string path,
                                              std::shared_ptr<spdlog::logger> logger);
// Drops every record (no HANDOFF_SANDBOX_RECORDS).
std::unique_ptr<RecordSink> NewNullRecordSink();

// For tests: keeps the records in memory.
class MemoryRecordSink : public RecordSink {
 public:
  void Append(const sandbox::RunRecord& record) override;
  std::vector<sandbox::RunRecord> records() const;

 private:
  mutable std::mutex mutex_;
  std::vector<sandbox::RunRecord> records_;
};

// The process a recorder speaks for.
struct ProcessIdentity {
  std::string node;
  std::string component;  // RoleName: "kube-controller-manager", "cloud-controller-manager", ...
  int64_t pid = 0;
};

// Fills in time (from `clock`, CLOCK_REALTIME in the binary), node, component and pid. Borrows
// `sink` and `clock`. Thread-compatible.
class RunRecorder {
 public:
  RunRecorder(RecordSink& sink, Clock& clock, ProcessIdentity process)
      : sink_(sink), clock_(clock), process_(std::move(process)) {}

  void ProcessStart();
  void LeaseAcquired(std::string_view lease);  // "kube-system/kube-controller-manager"
  void LeaseLost(std::string_view lease);
  void ControllerStart(CloudController controller, Lock lock);
  void ControllerStop(CloudController controller, std::string_view reason);

 private:
  sandbox::RunRecord Base(const char* event);

  RecordSink& sink_;
  Clock& clock_;
  ProcessIdentity process_;
};

}  // namespace handoff::standin

#endif  // HANDOFF_REHEARSAL_STANDIN_RUN_RECORDER_H_
