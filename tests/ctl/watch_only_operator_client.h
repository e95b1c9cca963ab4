// Test double: an OperatorClient whose every call but Status answers Unimplemented, for tests of
// the status watch (they script Status and nothing else).
#ifndef HANDOFF_TESTS_CTL_WATCH_ONLY_OPERATOR_CLIENT_H_
#define HANDOFF_TESTS_CTL_WATCH_ONLY_OPERATOR_CLIENT_H_

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "coordinator/client/coordinator_client.h"

namespace handoff::ctl::testing {

class WatchOnlyOperatorClient : public OperatorClient {
 public:
  absl::StatusOr<v1::PlanRolloutResponse> Plan(const v1::PlanRolloutRequest&) override {
    return Unused();
  }
  absl::StatusOr<v1::RolloutStatus> Start(const v1::StartRequest&) override { return Unused(); }
  absl::StatusOr<v1::RolloutStatus> Pause(const v1::PauseRequest&) override { return Unused(); }
  absl::StatusOr<v1::RolloutStatus> Resume(const v1::ResumeRequest&) override { return Unused(); }
  absl::StatusOr<v1::RolloutStatus> Abort(const v1::AbortRequest&) override { return Unused(); }
  absl::StatusOr<v1::RolloutStatus> Rollback(const v1::RollbackRequest&) override {
    return Unused();
  }
  absl::StatusOr<v1::RolloutStatus> Finalize(const v1::FinalizeRequest&) override {
    return Unused();
  }
  absl::StatusOr<v1::RolloutStatus> AddNode(const v1::AddNodeRequest&) override { return Unused(); }
  absl::StatusOr<v1::RolloutStatus> RemoveNode(const v1::RemoveNodeRequest&) override {
    return Unused();
  }
  absl::StatusOr<v1::HistoryResponse> History(const v1::HistoryRequest&) override {
    return Unused();
  }
  absl::StatusOr<v1::NodesResponse> Nodes(const v1::NodesRequest&) override { return Unused(); }

 private:
  static absl::Status Unused() {
    return absl::UnimplementedError("a watch-only test client was asked for another call");
  }
};

}  // namespace handoff::ctl::testing

#endif  // HANDOFF_TESTS_CTL_WATCH_ONLY_OPERATOR_CLIENT_H_
