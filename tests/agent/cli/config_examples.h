// Test helper: the example configuration files shipped in packaging/examples against the options
// a daemon's --help lists, so that the examples document every key and only real ones.
#ifndef HANDOFF_TESTS_AGENT_CLI_CONFIG_EXAMPLES_H_
#define HANDOFF_TESTS_AGENT_CLI_CONFIG_EXAMPLES_H_

#include <fstream>
#include <regex>
#include <set>
#include <sstream>
#include <string>

namespace handoff::testing {

inline std::string ExampleConfig(const std::string& name) {
  std::ifstream in(std::string(HANDOFF_TESTDATA_DIR) + "/../../packaging/examples/" + name);
  std::stringstream text;
  text << in.rdbuf();
  return text.str();
}

// The long options a CLI11 --help lists ("  --sample-interval TEXT ..."), less help and config.
inline std::set<std::string> HelpOptions(const std::string& help) {
  std::set<std::string> names;
  const std::regex option("\\n  (?:-[a-zA-Z],)?--([a-z][a-z-]*)");
  for (auto it = std::sregex_iterator(help.begin(), help.end(), option);
       it != std::sregex_iterator(); ++it) {
    const std::string name = (*it)[1];
    if (name != "help" && name != "config") names.insert(name);
  }
  return names;
}

// Every key the example sets or shows commented out ("# timeout: 5m").
inline std::set<std::string> ExampleKeys(const std::string& example) {
  std::set<std::string> keys;
  const std::regex key("\\n(?:# )?([a-z][a-z-]*): ");
  const std::string text = "\n" + example;
  for (auto it = std::sregex_iterator(text.begin(), text.end(), key);
       it != std::sregex_iterator(); ++it) {
    keys.insert((*it)[1]);
  }
  return keys;
}

// The example with every key line uncommented: every default written out.
inline std::string Uncommented(const std::string& example) {
  return std::regex_replace("\n" + example, std::regex("\\n# ([a-z][a-z-]*: )"), "\n$1");
}

}  // namespace handoff::testing

#endif  // HANDOFF_TESTS_AGENT_CLI_CONFIG_EXAMPLES_H_
