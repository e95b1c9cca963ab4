// The handoff-coordinator daemon: flags, the state dir (its lock and SQLite database), the gRPC
// server, a thread that refreshes the cluster facts and ticks the controller, and a graceful stop
// on SIGTERM/SIGINT (common/system/service_lifecycle.h). Under systemd (Type=notify) READY=1 once
// the state is loaded and the port serves, STATUS= with the rollout's phase, WATCHDOG=1 from the
// main loop.
#ifndef HANDOFF_COORDINATOR_SERVER_COORDINATOR_MAIN_H_
#define HANDOFF_COORDINATOR_SERVER_COORDINATOR_MAIN_H_

namespace handoff::server {

// Exit codes: 0 stopped on a signal; 2 bad configuration (named on stderr) or the server could
// not start. Blocks SIGINT and SIGTERM itself before any thread starts.
int RunCoordinator(int argc, const char* const* argv);

}  // namespace handoff::server

#endif  // HANDOFF_COORDINATOR_SERVER_COORDINATOR_MAIN_H_
