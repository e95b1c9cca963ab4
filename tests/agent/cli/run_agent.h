// Runs handoff-agent's command line in-process, for the CLI tests.
#ifndef HANDOFF_TESTS_AGENT_CLI_RUN_AGENT_H_
#define HANDOFF_TESTS_AGENT_CLI_RUN_AGENT_H_

#include <sstream>
#include <string>
#include <vector>

#include "agent/cli/agent_cli.h"

namespace handoff {

struct Result {
  int code;
  std::string out;
  std::string err;
};

// `handoff-agent ARGS...` in `environment` (the real host's by default); its exit code, stdout
// and stderr.
inline Result RunAgent(std::vector<std::string> args,
                       const AgentEnvironment& environment = RealAgentEnvironment()) {
  args.insert(args.begin(), "handoff-agent");
  std::vector<const char*> argv;
  for (const std::string& arg : args) argv.push_back(arg.c_str());
  std::ostringstream out;
  std::ostringstream err;
  const int code =
      RunAgentCli(static_cast<int>(argv.size()), argv.data(), out, err, environment);
  return Result{code, out.str(), err.str()};
}

}  // namespace handoff

#endif  // HANDOFF_TESTS_AGENT_CLI_RUN_AGENT_H_
