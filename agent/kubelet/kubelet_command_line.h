// The kubelet's effective flags: what the kubelet runs with once systemd has merged its unit,
// drop-ins and environment files (common/systemd/unit_file.h), each flag with the file, line
// and variable it was written in; and the edits that set a flag where it takes effect. Pure.
#ifndef HANDOFF_AGENT_KUBELET_KUBELET_COMMAND_LINE_H_
#define HANDOFF_AGENT_KUBELET_KUBELET_COMMAND_LINE_H_

#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/statusor.h"
#include "common/systemd/unit_file.h"

namespace handoff {

// Whether the kubelet's flag `name` (without dashes) is a boolean, which pflag never gives the
// next word as its value: the boolean flags `kubelet --help` lists for v1.26 and v1.27 (checked
// against the real kubelets in tests/real). Any other flag written without '=' takes the next
// word, whatever it is, as pflag does.
bool IsKubeletBooleanFlag(std::string_view name);

struct KubeletFlag {
  std::string name;                  // without the dashes: "cloud-provider"
  std::optional<std::string> value;  // nullopt for a bare boolean
  // The word that named the flag: its variable ("" for the ExecStart line itself) and where that
  // was written.
  systemd::CommandWord word;
};

struct KubeletCommandLine {
  std::string program;
  std::vector<KubeletFlag> flags;  // in the order the kubelet reads them
  // The occurrence the kubelet keeps (pflag: the last), nullptr when the flag is not given.
  const KubeletFlag* Effective(std::string_view name) const;
  // Every occurrence, in order.
  std::vector<const KubeletFlag*> All(std::string_view name) const;
};

// Reads `argv` (argv[0] the program) as pflag does: --name=value, --name value (the next word,
// for a flag that is no boolean), a bare boolean, -v 2 / -v=2; "--" ends the flags. Errors name
// the word's file and line: a non-boolean flag last with no value (the kubelet would exit
// "flag needs an argument"), an argument that is no flag (the kubelet takes none).
absl::StatusOr<KubeletCommandLine> ParseKubeletCommandLine(
    const std::vector<systemd::CommandWord>& argv);

// The kubelet as systemd starts it: its unit's files and the environment files they name.
struct KubeletUnit {
  std::vector<systemd::UnitFileText> unit_files;   // the unit file, then its drop-ins
  std::map<std::string, std::string> environment;  // environment file path → text, when present
  systemd::Specifiers specifiers;
};

// What the kubelet runs with, from `unit`. Errors name the file that does not parse, or a
// variable referenced by the command line that a file mentions but systemd ignores (the flags
// written there never reach the kubelet: "export KUBELET_EXTRA_ARGS=…").
struct EffectiveKubelet {
  systemd::ServiceCommand command;
  systemd::ServiceEnvironment environment;
  KubeletCommandLine flags;
  // The words systemd starts the kubelet with, the program first: its process's argv.
  std::vector<std::string> argv;
};
absl::StatusOr<EffectiveKubelet> ReadEffectiveKubelet(const KubeletUnit& unit);

// "--cloud-provider=aws (KUBELET_EXTRA_ARGS, /etc/default/kubelet line 1)".
std::string DescribeFlag(const KubeletFlag& flag);

// The environment files to write so that the kubelet runs with --name=value (or without the
// flag when `value` is nullopt), by path, with their new texts; the others are untouched.
// Every occurrence of the flag is rewritten where it was written, so no file names another
// value. A flag not given is added to KUBELET_KUBEADM_ARGS when the command line expands it
// from an environment file (kubeadm-flags.env), else to the last $VAR whose value an
// environment file sets. The result is read back with ReadEffectiveKubelet and checked before
// it is returned. Errors name the file and line when the flag is written where handoff does not
// write: in a unit file (the ExecStart line or Environment=), or inside a ${VAR} of a longer
// word; and when no environment file can take a new flag.
absl::StatusOr<std::map<std::string, std::string>> SetKubeletFlag(
    const KubeletUnit& unit, std::string_view name, const std::optional<std::string>& value);

}  // namespace handoff

#endif  // HANDOFF_AGENT_KUBELET_KUBELET_COMMAND_LINE_H_
