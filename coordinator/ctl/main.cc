#include <iostream>

#include "coordinator/ctl/ctl_cli.h"

int main(int argc, char** argv) {
  handoff::ctl::StartInterruptWatcher();
  return handoff::ctl::RunCtl(argc, argv, std::cout, std::cerr, handoff::ctl::RealCtlEnvironment());
}
