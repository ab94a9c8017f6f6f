// Command lines of the programs (clickatron, clickatron-rebuild, the rebuild
// benchmark): commands, their options and the checks on them, parsed by CLI11.
//
// Why a wrapper: CLI11 is header-only and costs about 8 s of compile per
// translation unit that includes it (-O2). Included by src/command_line.cc
// alone, it is compiled once, and touching a header every program includes
// (clickatron/status.h) no longer compiles it again. So this header names
// CLI11's two classes without including them, and option targets are a fixed
// set of overloads rather than a template: a new target type is one more
// overload here and in the .cc.
//
// What the user sees is CLI11's, as before the wrapper: --help text (type
// names TEXT, INT, UINT, FLOAT; check descriptions), usage error messages and
// exit codes.
//
//   clickatron::CommandLine cli{"tool: what it does", "tool"};
//   cli.RequireCommand();
//   std::string config;
//   clickatron::Command run = cli.AddCommand("run", "run it");
//   run.Option("--config", config, "cluster file").Required();
//   if (std::optional<int> code = cli.Parse(argc, argv)) return *code;
//   if (run.Parsed()) ...
#pragma once

#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <vector>

namespace CLI {
class App;
class Option;
}  // namespace CLI

namespace clickatron {

// One option of a command, refined after adding it; each call returns the
// option so calls chain. A handle: the command line owns the option.
class CommandOption {
 public:
  // Leaving the option out is a usage error. Without this its target keeps
  // the value it had.
  CommandOption& Required();
  // --help shows the target's value as it is at this call ("INT=60").
  CommandOption& ShowDefault();
  // Refuses a value outside [min, max]. The bounds' type is the one --help
  // names ("UINT in [1 - 1073741824]") and the one the value is read as.
  CommandOption& Range(uint32_t min, uint32_t max);
  CommandOption& Range(double min, double max);
  // Refuses a negative number (--help: NONNEGATIVE).
  CommandOption& NonNegative();
  // Refuses zero and negative numbers (--help: POSITIVE).
  CommandOption& Positive();
  // Refuses an empty value (--help: NONEMPTY): for an option whose absence
  // means something else ("--id ''" is not "no id").
  CommandOption& NonEmpty();
  // Refuses any value but these, compared exactly (--help: {archive,realtime}).
  CommandOption& OneOf(std::vector<std::string> values);
  // Giving this option without `other` is a usage error.
  CommandOption& Needs(const CommandOption& other);

 private:
  friend class Command;
  explicit CommandOption(CLI::Option* option) : option_(option) {}
  CLI::Option* option_;
};

// A program or one of its commands ("clickatron", "clickatron oplog list").
// A handle, cheap to copy: the CommandLine owns every command and must
// outlive the handles.
class Command {
 public:
  // A command under this one. It starts with this command's footer (as it is
  // at this call), so set the parent's footer first.
  Command AddCommand(const std::string& name, const std::string& description = "");
  // Exactly one command under this one must be given; none or two is a usage
  // error.
  void RequireCommand();

  // An option ("--config", "-c,--config") or, for a name without dashes
  // ("FILE"), a positional argument. Parse writes the value to `target`, so
  // it must live until Parse and the actions are done. A vector takes every
  // value given; an optional stays unset when the option is left out.
  CommandOption Option(const std::string& names, std::string& target, const std::string& help = "");
  CommandOption Option(const std::string& names, int& target, const std::string& help = "");
  CommandOption Option(const std::string& names, int64_t& target, const std::string& help = "");
  CommandOption Option(const std::string& names, uint32_t& target, const std::string& help = "");
  CommandOption Option(const std::string& names, uint64_t& target, const std::string& help = "");
  CommandOption Option(const std::string& names, std::optional<double>& target, const std::string& help = "");
  CommandOption Option(const std::string& names, std::vector<std::string>& target, const std::string& help = "");
  // An option without a value: `target` becomes true when it is given.
  CommandOption Flag(const std::string& names, bool& target, const std::string& help = "");

  // The text --help shows under the options.
  std::string Footer() const;
  void SetFooter(const std::string& text);

  // Runs `action` during Parse, after every argument is read and checked,
  // when this command was given. The action may end Parse with a code of its
  // own (ExitCommandLine).
  void OnParsed(std::function<void()> action);
  // Whether this command was given (once Parse has run).
  bool Parsed() const;
  // The names from the program down to this command, as typed
  // ("clickatron ymdh decode"): for messages that say which command failed.
  std::string Path() const;

 protected:
  explicit Command(CLI::App* app) : app_(app) {}
  CLI::App* app_;
};

// The program's command line: the root command, and the parse.
class CommandLine : public Command {
 public:
  // `name` is the program's name in --help; empty takes argv[0].
  explicit CommandLine(const std::string& description, const std::string& name = "");
  ~CommandLine();
  CommandLine(const CommandLine&) = delete;
  CommandLine& operator=(const CommandLine&) = delete;

  // Reads the arguments into the targets and runs the actions of the commands
  // given. nullopt: parsed, main goes on. A code: main returns it; it is 0
  // after --help (printed to stdout), CLI11's code for a usage error (the
  // message printed to stderr: 105 a refused value, 106 a required option
  // left out, …), or the code an action passed to ExitCommandLine.
  std::optional<int> Parse(int argc, const char* const* argv);
};

// Ends CommandLine::Parse with `exit_code`, printing nothing: for an action
// (Command::OnParsed) that has reported its own failure. It throws, so call
// it only from inside an action.
[[noreturn]] void ExitCommandLine(int exit_code);

}  // namespace clickatron
