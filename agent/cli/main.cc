#include <iostream>

#include "agent/cli/agent_cli.h"

int main(int argc, char** argv) {
  return handoff::RunAgentCli(argc, argv, std::cout, std::cerr, handoff::RealAgentEnvironment());
}
