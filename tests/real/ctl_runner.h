// Test helper: runs handoffctl commands in-process (ctl::RunCtl) on the real host's files,
// libcurl and clock, against a kubeconfig the test wrote.
#ifndef HANDOFF_TESTS_REAL_CTL_RUNNER_H_
#define HANDOFF_TESTS_REAL_CTL_RUNNER_H_

#include <optional>
#include <sstream>
#include <string>
#include <vector>

#include "common/fs/file_system.h"
#include "common/system/clock.h"
#include "common/kube/http_transport.h"
#include "ctl/ctl_cli.h"

namespace handoff::testing {

struct CtlResult {
  int code = -1;
  std::string out;
  std::string err;
};

inline CtlResult RunHandoffctl(std::vector<std::string> args) {
  ctl::CtlEnvironment environment;
  environment.open_files = [] { return NewPosixFileSystem(""); };
  environment.open_transport = kube::NewCurlTransport;
  environment.open_clock = [] { return NewRealClock(); };
  environment.get_env = [](const std::string&) -> std::optional<std::string> {
    return std::nullopt;
  };
  environment.interrupted = [] { return false; };
  environment.output_is_terminal = [] { return false; };
  args.insert(args.begin(), "handoffctl");
  std::vector<const char*> argv;
  for (const std::string& arg : args) argv.push_back(arg.c_str());
  std::ostringstream out;
  std::ostringstream err;
  CtlResult result;
  result.code = ctl::RunCtl(static_cast<int>(argv.size()), argv.data(), out, err, environment);
  result.out = out.str();
  result.err = err.str();
  return result;
}

}  // namespace handoff::testing

#endif  // HANDOFF_TESTS_REAL_CTL_RUNNER_H_
