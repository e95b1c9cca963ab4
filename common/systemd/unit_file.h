// A systemd service's command line and environment as systemd builds them from the unit file
// and its drop-ins (systemd.unit(5), systemd.service(5), systemd.exec(5)): which files, in
// which order, what each setting adds or resets, and the ExecStart command after its variables
// are expanded, each word with the file and line it came from. The merge is checked against
// the real systemd's (systemd-analyze verify) in tests/common/systemd.
#ifndef HANDOFF_COMMON_SYSTEMD_UNIT_FILE_H_
#define HANDOFF_COMMON_SYSTEMD_UNIT_FILE_H_

#include <map>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/statusor.h"
#include "common/fs/file_system.h"
#include "common/systemd/environment_file.h"

namespace handoff::systemd {

// Where something was written: a unit file, a drop-in or an environment file, and the line.
struct Origin {
  std::string file;
  int line = 0;
};

// "/etc/default/kubelet line 3".
std::string Describe(const Origin& origin);

struct UnitFileText {
  std::string path;
  std::string text;
};

struct EnvironmentSetting {
  std::string key;
  std::string value;
  Origin origin;
};

struct EnvironmentFileSetting {
  std::string path;
  bool optional = false;  // written with a leading '-': a missing file is no error
  Origin origin;
};

// The [Service] settings that make the process's command line, as systemd merged them.
struct ServiceCommand {
  std::string fragment;               // the unit file's path
  std::vector<std::string> drop_ins;  // in the order systemd applies them
  // Environment= assignments left after the last reset, in order (a later one of a key wins).
  std::vector<EnvironmentSetting> environment;
  // EnvironmentFile= settings left after the last reset, in order.
  std::vector<EnvironmentFileSetting> environment_files;
  // The one ExecStart= left, split and unquoted, specifiers resolved, its prefixes ('-', '@',
  // ':', '+', '!') removed; $VAR and ${VAR} not yet expanded. argv[0] is the program.
  std::vector<std::string> exec_start;
  Origin exec_start_origin;
};

// What a unit's specifiers (%H, %n, …) stand for on the node.
struct Specifiers {
  std::string host_name;  // %H, %l (the short form)
  std::string unit_name;  // %n, %N, %p
};

// Merges `files`: the unit file first, then its drop-ins in the order systemd applies them
// (FindUnitFiles). Errors name the file and line: no ExecStart= or more than one left (systemd
// refuses such a service unless Type=oneshot), a specifier this does not resolve, a C escape it
// does not read, UnsetEnvironment= (what the process sees would depend on the manager's own
// environment). An invalid assignment in Environment= is dropped, as systemd drops it. Pure.
absl::StatusOr<ServiceCommand> MergeServiceCommand(const std::vector<UnitFileText>& files,
                                                   const Specifiers& specifiers);

// The directories systemd (v252) loads system units from, highest priority first, leaving out
// the ones it generates at run time (generators, transient units, system.control).
const std::vector<std::string>& SystemUnitDirectories();

// The unit file and drop-ins of `unit` ("kubelet.service") on `fs`, in the order systemd
// applies them: the unit file from the first directory of SystemUnitDirectories that has it;
// the drop-ins are the *.conf files of "<unit>.d/" and then "<type>.d/" ("service.d/") in each
// directory, of each name the first found in that order, sorted by name. NotFound naming the
// directories when no directory has the unit; FailedPrecondition when it is masked (a link to
// /dev/null or an empty file). A drop-in linked to /dev/null is left out, as systemd does.
absl::StatusOr<std::vector<UnitFileText>> FindUnitFiles(const FileSystem& fs,
                                                        std::string_view unit);

// The environment the process starts with (less the manager's own): Environment= in order,
// then each EnvironmentFile= in order, a file's assignment overriding Environment= and earlier
// files. `files` holds the environment files' texts by path; a path it lacks is missing (an
// error unless optional). Errors name the file that does not parse. Wildcards in a path are
// refused. Pure.
struct ServiceEnvironment {
  std::map<std::string, EnvironmentSetting> variables;
  // Assignments systemd ignores in the environment files (EnvironmentFile::ignored).
  std::vector<IgnoredAssignment> ignored;
};
absl::StatusOr<ServiceEnvironment> BuildEnvironment(
    const ServiceCommand& command, const std::map<std::string, std::string>& files);

// The texts of `command`'s environment files on `fs`, by path; a missing file is left out
// (BuildEnvironment then decides whether that is an error). Other read errors name the file.
absl::StatusOr<std::map<std::string, std::string>> ReadEnvironmentFiles(
    const FileSystem& fs, const ServiceCommand& command);

// One argument of the command the process gets, and where its text was written.
struct CommandWord {
  std::string text;
  // The variable it came from ("KUBELET_EXTRA_ARGS"), "" for a word of the ExecStart line.
  std::string variable;
  // Where: the environment file's (or Environment= line's) assignment of `variable`, else the
  // ExecStart line. A word that mixes both (--x=${VAR}) names the assignment.
  Origin origin;
  // For a word of a $VAR (the whole word, split): its index among SplitVariableValue(value).
  // -1 for a word of the ExecStart line, with or without a ${VAR} in it.
  int piece = -1;
};

// A word of a variable's value as a $VAR expands it, and its bytes in the value.
struct ValueWord {
  std::string text;
  size_t begin = 0;
  size_t end = 0;
};
// The value split as systemd splits a $VAR word: on white space, '…' and "…" grouping and
// removed, a backslash keeping the next character, a quote left open closed at the end.
std::vector<ValueWord> SplitVariableValue(std::string_view value);

struct ExpandedCommand {
  std::vector<CommandWord> argv;
  std::vector<std::string> unset_variables;  // referenced but unset: expanded to nothing
};

// The ExecStart command with its variables expanded as systemd does when it starts the process
// (src/basic/env-util.c replace_env_argv): a word that is exactly $VAR becomes the variable's
// value split on white space (quotes in it group and are removed), zero words when unset;
// ${VAR} anywhere in a word is replaced by the exact value; $$ is '$'. Anything else with a '$'
// stays as written. Pure.
absl::StatusOr<ExpandedCommand> ExpandCommand(const ServiceCommand& command,
                                              const ServiceEnvironment& environment);

}  // namespace handoff::systemd

#endif  // HANDOFF_COMMON_SYSTEMD_UNIT_FILE_H_
