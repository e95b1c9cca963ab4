#include "rehearsal/node/node_enter.h"

#include <fcntl.h>
#include <poll.h>
#include <sched.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <iostream>

#include "absl/time/clock.h"
#include "common/base/strings.h"
#include "common/base/unique_fd.h"
#include "rehearsal/node/first_process.h"

namespace handoff::sandbox::node {

std::vector<std::string> EnterArgs(const EnterSpec& spec) {
  std::vector<std::string> args = {"--pid", std::to_string(spec.pid)};
  for (const std::string& env : spec.env) {
    args.push_back("--env");
    args.push_back(env);
  }
  args.push_back("--");
  args.insert(args.end(), spec.argv.begin(), spec.argv.end());
  return args;
}

absl::StatusOr<EnterSpec> ParseEnterArgs(const std::vector<std::string>& args) {
  EnterSpec spec;
  size_t i = 0;
  for (; i < args.size() && args[i] != "--"; i += 2) {
    if (i + 1 >= args.size()) return absl::InvalidArgumentError(StrCat(args[i], " needs a value"));
    const std::string& value = args[i + 1];
    if (args[i] == "--pid") {
      char* end = nullptr;
      const long pid = std::strtol(value.c_str(), &end, 10);
      if (value.empty() || *end != '\0' || pid <= 0) {
        return absl::InvalidArgumentError(StrCat("--pid \"", value, "\" is not a process id"));
      }
      spec.pid = static_cast<pid_t>(pid);
    } else if (args[i] == "--env") {
      if (value.find('=') == std::string::npos || value.front() == '=') {
        return absl::InvalidArgumentError(StrCat("--env \"", value, "\" is not KEY=VALUE"));
      }
      spec.env.push_back(value);
    } else {
      return absl::InvalidArgumentError(StrCat("unknown argument ", args[i]));
    }
  }
  if (spec.pid == 0) return absl::InvalidArgumentError("--pid is required");
  if (i >= args.size() || i + 1 == args.size()) {
    return absl::InvalidArgumentError("no command: give it after --");
  }
  spec.argv.assign(args.begin() + static_cast<long>(i) + 1, args.end());
  return spec;
}

int EnterNode(const EnterSpec& spec) {
  // The mount namespace last: after it, /proc is the node's.
  constexpr struct {
    const char* name;
    int type;
  } kNamespaces[] = {{"ipc", CLONE_NEWIPC},
                     {"uts", CLONE_NEWUTS},
                     {"net", CLONE_NEWNET},
                     {"pid", CLONE_NEWPID},
                     {"mnt", CLONE_NEWNS}};
  std::vector<UniqueFd> files;
  for (const auto& ns : kNamespaces) {
    const std::string path = StrCat("/proc/", spec.pid, "/ns/", ns.name);
    UniqueFd fd(::open(path.c_str(), O_RDONLY | O_CLOEXEC));
    if (!fd.valid()) {
      std::cerr << "handoff-sandbox-node enter: " << path << ": " << std::strerror(errno)
                << " (is the node up?)\n";
      return 125;
    }
    files.push_back(std::move(fd));
  }
  for (size_t i = 0; i < files.size(); ++i) {
    if (::setns(files[i].get(), kNamespaces[i].type) != 0) {
      std::cerr << "handoff-sandbox-node enter: setns " << kNamespaces[i].name << ": "
                << std::strerror(errno) << "\n";
      return 125;
    }
  }
  if (::chdir("/") != 0) {
    std::cerr << "handoff-sandbox-node enter: chdir /: " << std::strerror(errno) << "\n";
    return 125;
  }
  // Only children join the PID namespace.
  FirstProcess command;
  command.who = "handoff-sandbox-node enter";
  command.forwarded = {SIGTERM, SIGINT, SIGHUP, SIGQUIT};
  command.setup_failed = 125;
  command.child = [&spec] {
    for (const std::string& env : spec.env) {
      const size_t equals = env.find('=');
      ::setenv(env.substr(0, equals).c_str(), env.substr(equals + 1).c_str(), 1);
    }
    std::vector<char*> argv;
    for (const std::string& arg : spec.argv) argv.push_back(const_cast<char*>(arg.c_str()));
    argv.push_back(nullptr);
    ::execvp(argv[0], argv.data());
    std::cerr << "handoff-sandbox-node enter: " << spec.argv[0] << ": " << std::strerror(errno)
              << "\n";
    return 127;
  };
  return RunFirstProcess(command);
}

absl::StatusOr<std::string> SendControl(const std::string& socket, const std::string& command,
                                        absl::Duration timeout) {
  UniqueFd fd(::socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0));
  if (!fd.valid()) return absl::InternalError(StrCat("socket: ", std::strerror(errno)));
  sockaddr_un address{};
  address.sun_family = AF_UNIX;
  if (socket.size() >= sizeof(address.sun_path)) {
    return absl::InvalidArgumentError(StrCat(socket, ": too long for a unix socket"));
  }
  std::strncpy(address.sun_path, socket.c_str(), sizeof(address.sun_path) - 1);
  if (::connect(fd.get(), reinterpret_cast<sockaddr*>(&address), sizeof(address)) != 0) {
    return absl::UnavailableError(StrCat("connect ", socket, ": ", std::strerror(errno)));
  }
  const std::string line = StrCat(command, "\n");
  if (::write(fd.get(), line.data(), line.size()) != static_cast<ssize_t>(line.size())) {
    return absl::UnavailableError(StrCat("write ", socket, ": ", std::strerror(errno)));
  }
  std::string answer;
  const absl::Time deadline = absl::Now() + timeout;
  while (answer.find('\n') == std::string::npos) {
    pollfd event{fd.get(), POLLIN, 0};
    const int wait_ms =
        static_cast<int>(std::max<int64_t>(0, absl::ToInt64Milliseconds(deadline - absl::Now())));
    if (::poll(&event, 1, wait_ms) <= 0) {
      return absl::UnavailableError(StrCat("no answer to \"", command, "\" from ", socket,
                                           " within ", absl::FormatDuration(timeout)));
    }
    char buffer[256];
    const ssize_t got = ::read(fd.get(), buffer, sizeof(buffer));
    if (got <= 0) break;
    answer.append(buffer, static_cast<size_t>(got));
  }
  return std::string(StripWhitespace(answer));
}

}  // namespace handoff::sandbox::node
