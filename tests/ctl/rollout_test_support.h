// Test helpers for handoffctl's coordinator commands: scripted RolloutStatus values and the exact
// text `handoffctl status` prints for them, an output stream another thread may read while the
// command writes it, and a runner for RunCtl.
#ifndef HANDOFF_TESTS_CTL_ROLLOUT_TEST_SUPPORT_H_
#define HANDOFF_TESTS_CTL_ROLLOUT_TEST_SUPPORT_H_

#include <chrono>
#include <condition_variable>
#include <functional>
#include <mutex>
#include <ostream>
#include <sstream>
#include <streambuf>
#include <string>
#include <vector>

#include "ctl/ctl_cli.h"
#include "handoff/v1/handoff.pb.h"

namespace handoff::ctl::test_support {

struct Result {
  int code;
  std::string out;
  std::string err;
};

// Runs handoffctl with `args` (without the program name), writing its output to `out`.
inline int RunWith(std::vector<std::string> args, std::ostream& out, std::ostream& err,
                   const CtlEnvironment& environment) {
  args.insert(args.begin(), "handoffctl");
  std::vector<const char*> argv;
  for (const std::string& arg : args) argv.push_back(arg.c_str());
  return RunCtl(static_cast<int>(argv.size()), argv.data(), out, err, environment);
}

inline Result Run(std::vector<std::string> args, const CtlEnvironment& environment) {
  std::ostringstream out;
  std::ostringstream err;
  const int code = RunWith(std::move(args), out, err, environment);
  return Result{code, out.str(), err.str()};
}

// A string buffer that one thread writes while another reads it (Contents()) or waits for what
// it holds (WaitUntil).
class LockedStringBuf : public std::streambuf {
 public:
  std::string Contents() const {
    std::lock_guard<std::mutex> lock(mutex_);
    return text_;
  }

  // Waits, woken by each write, until `done` holds for the contents; false after `timeout`.
  bool WaitUntil(const std::function<bool(const std::string&)>& done,
                 std::chrono::milliseconds timeout) const {
    std::unique_lock<std::mutex> lock(mutex_);
    return written_.wait_for(lock, timeout, [&] { return done(text_); });
  }

 protected:
  int_type overflow(int_type character) override {
    if (traits_type::eq_int_type(character, traits_type::eof())) return traits_type::not_eof(0);
    {
      std::lock_guard<std::mutex> lock(mutex_);
      text_.push_back(traits_type::to_char_type(character));
    }
    written_.notify_all();
    return character;
  }
  std::streamsize xsputn(const char* data, std::streamsize size) override {
    {
      std::lock_guard<std::mutex> lock(mutex_);
      text_.append(data, static_cast<size_t>(size));
    }
    written_.notify_all();
    return size;
  }

 private:
  mutable std::mutex mutex_;
  mutable std::condition_variable written_;
  std::string text_;
};

inline size_t CountOf(const std::string& text, const std::string& needle) {
  size_t count = 0;
  for (size_t at = text.find(needle); at != std::string::npos; at = text.find(needle, at + 1)) {
    ++count;
  }
  return count;
}

// A rollout migrating its second node, with every field of the status set.
inline v1::RolloutStatus MigratingStatus() {
  v1::RolloutStatus status;
  status.set_rollout_id("r-7f3a");
  status.set_revision(12);
  status.set_goal(v1::NODE_STATE_MIGRATED);
  status.set_phase(v1::RolloutStatus::MIGRATING);
  status.set_next("wait for cp-2 to finish prepared -> migrated");
  v1::ClusterFacts* facts = status.mutable_facts();
  facts->set_rbac_ready(true);
  facts->set_lease_held_by_healthy_manager(true);
  facts->set_source("kubernetes");
  facts->set_detail("migration lease held by cloud-controller-manager on cp-1");
  facts->set_checked_unix_ms(1'700'000'000'000);
  v1::InFlightMove* move = status.mutable_in_flight();
  move->set_command_id("r-7f3a-5");
  move->set_node("cp-2");
  move->set_from(v1::NODE_STATE_PREPARED);
  move->set_to(v1::NODE_STATE_MIGRATED);
  move->set_sent_unix_ms(1'700'000'001'000);
  status.set_updated_unix_ms(1'700'000'002'500);
  auto add_node = [&status](const std::string& name, v1::NodeState state, bool connected,
                            bool healthy, v1::NodeState moving_to, int done, int total,
                            const std::string& last_result) {
    v1::NodeProgress* node = status.add_nodes();
    node->set_name(name);
    node->set_state(state);
    node->set_connected(connected);
    node->set_healthy(healthy);
    node->set_moving_to(moving_to);
    node->set_steps_done(done);
    node->set_steps_total(total);
    node->set_last_result(last_result);
  };
  add_node("cp-1", v1::NODE_STATE_MIGRATED, true, true, v1::NODE_STATE_UNSPECIFIED, 2, 2,
           "succeeded: prepared -> migrated, verified");
  add_node("cp-2", v1::NODE_STATE_PREPARED, true, true, v1::NODE_STATE_MIGRATED, 1, 2,
           "succeeded: in-tree -> prepared, verified");
  add_node("cp-3", v1::NODE_STATE_PREPARED, false, false, v1::NODE_STATE_UNSPECIFIED, 1, 2, "");
  return status;
}

inline constexpr char kMigratingStatusText[] =
    "rollout:    r-7f3a (revision 12, updated 2023-11-14T22:13:22.5Z)\n"
    "goal:       migrated\n"
    "phase:      migrating\n"
    "next:       wait for cp-2 to finish prepared -> migrated\n"
    "cluster:    rbac ready, migration lease held by a healthy manager (kubernetes, checked "
    "2023-11-14T22:13:20Z): migration lease held by cloud-controller-manager on cp-1\n"
    "in flight:  cp-2 prepared -> migrated (command r-7f3a-5, sent 2023-11-14T22:13:21Z)\n"
    "\n"
    "NODE  STATE     CONNECTED  HEALTHY  PROGRESS        MOVING TO  LAST RESULT\n"
    "cp-1  migrated  yes        yes      [########] 2/2  -          succeeded: prepared -> "
    "migrated, verified\n"
    "cp-2  prepared  yes        yes      [####----] 1/2  migrated   succeeded: in-tree -> "
    "prepared, verified\n"
    "cp-3  prepared  no         no       [####----] 1/2  -          -\n";

// The same rollout after cp-2's move failed: halted.
inline v1::RolloutStatus HaltedStatus() {
  v1::RolloutStatus status = MigratingStatus();
  status.set_revision(13);
  status.set_phase(v1::RolloutStatus::HALTED);
  status.set_halted(true);
  status.set_halt_reason(
      "cp-2: prepared -> migrated rolled back: cloud-controller-manager did not become healthy "
      "within 5m");
  status.set_next("wait for the operator: resume, start or rollback");
  status.clear_in_flight();
  status.mutable_nodes(1)->set_moving_to(v1::NODE_STATE_UNSPECIFIED);
  status.mutable_nodes(1)->set_last_result(
      "rolled back: cloud-controller-manager did not become healthy within 5m");
  return status;
}

inline constexpr char kHaltedStatusText[] =
    "rollout:    r-7f3a (revision 13, updated 2023-11-14T22:13:22.5Z)\n"
    "goal:       migrated\n"
    "phase:      halted\n"
    "halted:     cp-2: prepared -> migrated rolled back: cloud-controller-manager did not become "
    "healthy within 5m\n"
    "next:       wait for the operator: resume, start or rollback\n"
    "cluster:    rbac ready, migration lease held by a healthy manager (kubernetes, checked "
    "2023-11-14T22:13:20Z): migration lease held by cloud-controller-manager on cp-1\n"
    "in flight:  none\n"
    "\n"
    "NODE  STATE     CONNECTED  HEALTHY  PROGRESS        MOVING TO  LAST RESULT\n"
    "cp-1  migrated  yes        yes      [########] 2/2  -          succeeded: prepared -> "
    "migrated, verified\n"
    "cp-2  prepared  yes        yes      [####----] 1/2  -          rolled back: "
    "cloud-controller-manager did not become healthy within 5m\n"
    "cp-3  prepared  no         no       [####----] 1/2  -          -\n";

// Before the first Start: no id, no goal, no nodes.
inline v1::RolloutStatus IdleStatus() {
  v1::RolloutStatus status;
  status.set_revision(1);
  status.set_phase(v1::RolloutStatus::IDLE);
  status.set_next("wait for the operator to start");
  return status;
}

inline constexpr char kIdleStatusText[] =
    "rollout:    none started yet (revision 1)\n"
    "goal:       none\n"
    "phase:      idle\n"
    "next:       wait for the operator to start\n"
    "cluster:    not checked yet\n"
    "in flight:  none\n"
    "\n"
    "no nodes yet: no agent has connected\n";

}  // namespace handoff::ctl::test_support

#endif  // HANDOFF_TESTS_CTL_ROLLOUT_TEST_SUPPORT_H_
