/* The pause image's program (registry.k8s.io/pause:3.9 in the kubeadm sandbox): the process that
 * holds a pod sandbox's namespaces. It waits for SIGINT or SIGTERM and exits 0, and reaps any
 * child re-parented to it, as upstream's pause does. Built static (gcc -static): the image holds
 * this one file. Test fixture only: handoff itself is C++. */
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/wait.h>
#include <unistd.h>

static void on_stop(int signo) {
  (void)signo;
  _exit(0);
}

static void on_child(int signo) {
  (void)signo;
  while (waitpid(-1, NULL, WNOHANG) > 0) {
  }
}

int main(int argc, char** argv) {
  if (argc > 1 && argv[1][0] == '-' && argv[1][1] == 'v') {
    puts("pause (handoff sandbox) 3.9");
    return 0;
  }
  struct sigaction stop = {0};
  stop.sa_handler = on_stop;
  struct sigaction child = {0};
  child.sa_handler = on_child;
  child.sa_flags = SA_NOCLDSTOP;
  if (sigaction(SIGINT, &stop, NULL) < 0 || sigaction(SIGTERM, &stop, NULL) < 0 ||
      sigaction(SIGCHLD, &child, NULL) < 0) {
    perror("pause: sigaction");
    return 1;
  }
  for (;;) pause();
}
