// A stand-in for the stand-in controller-manager, for the simulated kubelet's tests: the kubelet
// must not care what it runs. It writes what it was started with to
// $HANDOFF_SANDBOX_ROOT/standin/<pid> (argv, one item per line, then "--", then the
// HANDOFF_SANDBOX_* variables, newlines in values written as \n), then waits for SIGTERM and exits
// 0. With the argument
// --test-ignore-sigterm it ignores SIGTERM (only SIGKILL ends it).
#include <signal.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <string>

extern char** environ;

int main(int argc, char** argv) {
  bool ignore_sigterm = false;
  for (int i = 1; i < argc; ++i) {
    if (std::strcmp(argv[i], "--test-ignore-sigterm") == 0) ignore_sigterm = true;
  }
  sigset_t term;
  sigemptyset(&term);
  sigaddset(&term, SIGTERM);
  sigprocmask(SIG_BLOCK, &term, nullptr);

  const char* root = std::getenv("HANDOFF_SANDBOX_ROOT");
  if (root != nullptr) {
    const std::string dir = std::string(root) + "/standin";
    const std::string path = dir + "/" + std::to_string(getpid());
    const std::string temp = dir + "/." + std::to_string(getpid());
    {
      std::ofstream out(temp);
      for (int i = 0; i < argc; ++i) out << argv[i] << "\n";
      out << "--\n";
      for (char** variable = environ; *variable != nullptr; ++variable) {
        if (std::strncmp(*variable, "HANDOFF_SANDBOX_", 16) != 0) continue;
        for (const char* c = *variable; *c != '\0'; ++c)
          out << (*c == '\n' ? "\\n" : std::string(1, *c));
        out << "\n";
      }
    }
    // Renamed into place whole, so that a test that sees the file sees all of it.
    std::rename(temp.c_str(), path.c_str());
  }
  while (true) {
    int signal = 0;
    if (sigwait(&term, &signal) == 0 && signal == SIGTERM && !ignore_sigterm) return 0;
  }
}
