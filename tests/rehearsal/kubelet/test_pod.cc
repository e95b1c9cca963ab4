// A stand-in for a real upstream manager, for the simulated kubelet's tests of real pods: static
// (it runs in the pod's own root, which holds no libraries) and it reports on stdout, which is
// the pod's log, what it finds inside the pod:
//   argv: <argv joined by spaces>
//   pid: <pid>
//   hostname: <hostname>
//   cat PATH: <content> | error <strerror>      for each --test-cat=PATH
//   write PATH: ok | error <strerror>            for each --test-write=PATH (creates/truncates)
//   exists PATH: yes | no                        for each --test-exists=PATH
//   env NAME=<value> | env NAME unset            for each --test-env=NAME
//   ready pid=<pid>
// then waits for SIGTERM (blocked before "ready") and exits 0. Other arguments are ignored.
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

namespace {

const char* Value(const char* arg, const char* prefix) {
  const size_t n = strlen(prefix);
  return strncmp(arg, prefix, n) == 0 ? arg + n : nullptr;
}

void Cat(const char* path) {
  const int fd = open(path, O_RDONLY);
  if (fd < 0) {
    printf("cat %s: error %s\n", path, strerror(errno));
    return;
  }
  char buffer[4096];
  const ssize_t n = read(fd, buffer, sizeof(buffer) - 1);
  close(fd);
  buffer[n > 0 ? n : 0] = '\0';
  printf("cat %s: %s\n", path, buffer);
}

void Write(const char* path) {
  const int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0644);
  if (fd < 0) {
    printf("write %s: error %s\n", path, strerror(errno));
    return;
  }
  const ssize_t n = write(fd, "written in the pod\n", 19);
  close(fd);
  printf("write %s: %s\n", path, n == 19 ? "ok" : "error short write");
}

}  // namespace

int main(int argc, char** argv) {
  sigset_t term;
  sigemptyset(&term);
  sigaddset(&term, SIGTERM);
  sigprocmask(SIG_BLOCK, &term, nullptr);

  printf("argv:");
  for (int i = 0; i < argc; ++i) printf(" %s", argv[i]);
  printf("\npid: %d\n", static_cast<int>(getpid()));
  char host[256] = {0};
  gethostname(host, sizeof(host) - 1);
  printf("hostname: %s\n", host);
  for (int i = 1; i < argc; ++i) {
    if (const char* path = Value(argv[i], "--test-cat=")) Cat(path);
    if (const char* path = Value(argv[i], "--test-write=")) Write(path);
    if (const char* path = Value(argv[i], "--test-exists=")) {
      printf("exists %s: %s\n", path, access(path, F_OK) == 0 ? "yes" : "no");
    }
    if (const char* name = Value(argv[i], "--test-env=")) {
      const char* value = getenv(name);
      if (value == nullptr) {
        printf("env %s unset\n", name);
      } else {
        printf("env %s=%s\n", name, value);
      }
    }
  }
  printf("ready pid=%d\n", static_cast<int>(getpid()));
  fflush(stdout);
  while (true) {
    int signal = 0;
    if (sigwait(&term, &signal) == 0 && signal == SIGTERM) return 0;
  }
}
