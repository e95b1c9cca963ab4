#include "rehearsal/standin/run_recorder.h"

namespace handoff::standin {
namespace {

class FileRecordSink : public RecordSink {
 public:
  FileRecordSink(std::string path, std::shared_ptr<spdlog::logger> logger)
      : path_(std::move(path)), logger_(std::move(logger)) {}

  void Append(const sandbox::RunRecord& record) override {
    // AppendRunRecord is one write(2) per line, so no lock is needed for whole lines; the lock
    // keeps this process's lines in the order it decided them.
    std::lock_guard<std::mutex> lock(mutex_);
    if (absl::Status written = sandbox::AppendRunRecord(path_, record); !written.ok()) {
      logger_->error("cannot append a run record to {}: {}", path_, std::string(written.message()));
    }
  }

 private:
  std::mutex mutex_;
  std::string path_;
  std::shared_ptr<spdlog::logger> logger_;
};

class NullRecordSink : public RecordSink {
 public:
  void Append(const sandbox::RunRecord&) override {}
};

}  // namespace

std::unique_ptr<RecordSink> NewFileRecordSink(std::string path,
                                              std::shared_ptr<spdlog::logger> logger) {
  return std::make_unique<FileRecordSink>(std::move(path), std::move(logger));
}

std::unique_ptr<RecordSink> NewNullRecordSink() { return std::make_unique<NullRecordSink>(); }

void MemoryRecordSink::Append(const sandbox::RunRecord& record) {
  std::lock_guard<std::mutex> lock(mutex_);
  records_.push_back(record);
}

std::vector<sandbox::RunRecord> MemoryRecordSink::records() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return records_;
}

sandbox::RunRecord RunRecorder::Base(const char* event) {
  sandbox::RunRecord record;
  record.t_ns = absl::ToUnixNanos(clock_.Now());
  record.node = process_.node;
  record.component = process_.component;
  record.pid = process_.pid;
  record.event = event;
  return record;
}

void RunRecorder::ProcessStart() { sink_.Append(Base(sandbox::kProcessStart)); }

void RunRecorder::LeaseAcquired(std::string_view lease) {
  sandbox::RunRecord record = Base(sandbox::kLeaseAcquired);
  record.lease = std::string(lease);
  sink_.Append(record);
}

void RunRecorder::LeaseLost(std::string_view lease) {
  sandbox::RunRecord record = Base(sandbox::kLeaseLost);
  record.lease = std::string(lease);
  sink_.Append(record);
}

void RunRecorder::ControllerStart(CloudController controller, Lock lock) {
  sandbox::RunRecord record = Base(sandbox::kControllerStart);
  record.controller = std::string(CanonicalControllerName(controller));
  record.lock = std::string(LockName(lock));
  sink_.Append(record);
}

void RunRecorder::ControllerStop(CloudController controller, std::string_view reason) {
  sandbox::RunRecord record = Base(sandbox::kControllerStop);
  record.controller = std::string(CanonicalControllerName(controller));
  record.reason = std::string(reason);
  sink_.Append(record);
}

}  // namespace handoff::standin
