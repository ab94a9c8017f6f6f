// The one translation unit that compiles CLI11 (see command_line.h). It must
// not include clickatron/status.h, even through another of our headers: a
// change there would compile CLI11 again. src/CMakeLists.txt keeps it out of
// the unity files for the same reason.
#include "clickatron/command_line.h"

#include <CLI/CLI.hpp>

#include <utility>

namespace clickatron {

CommandOption& CommandOption::Required() {
  option_->required();
  return *this;
}

CommandOption& CommandOption::ShowDefault() {
  option_->capture_default_str();
  return *this;
}

CommandOption& CommandOption::Range(uint32_t min, uint32_t max) {
  option_->check(CLI::Range(min, max));
  return *this;
}

CommandOption& CommandOption::Range(double min, double max) {
  option_->check(CLI::Range(min, max));
  return *this;
}

CommandOption& CommandOption::NonNegative() {
  option_->check(CLI::NonNegativeNumber);
  return *this;
}

CommandOption& CommandOption::Positive() {
  option_->check(CLI::PositiveNumber);
  return *this;
}

CommandOption& CommandOption::OneOf(std::vector<std::string> values) {
  option_->check(CLI::IsMember(std::move(values)));
  return *this;
}

CommandOption& CommandOption::Needs(const CommandOption& other) {
  option_->needs(other.option_);
  return *this;
}

Command Command::AddCommand(const std::string& name, const std::string& description) {
  return Command(app_->add_subcommand(name, description));
}

void Command::RequireCommand() { app_->require_subcommand(1); }

CommandOption Command::Option(const std::string& names, std::string& target, const std::string& help) {
  return CommandOption(app_->add_option(names, target, help));
}

CommandOption Command::Option(const std::string& names, int& target, const std::string& help) {
  return CommandOption(app_->add_option(names, target, help));
}

CommandOption Command::Option(const std::string& names, int64_t& target, const std::string& help) {
  return CommandOption(app_->add_option(names, target, help));
}

CommandOption Command::Option(const std::string& names, uint32_t& target, const std::string& help) {
  return CommandOption(app_->add_option(names, target, help));
}

CommandOption Command::Option(const std::string& names, uint64_t& target, const std::string& help) {
  return CommandOption(app_->add_option(names, target, help));
}

CommandOption Command::Option(const std::string& names, std::optional<double>& target, const std::string& help) {
  return CommandOption(app_->add_option(names, target, help));
}

CommandOption Command::Option(const std::string& names, std::vector<std::string>& target, const std::string& help) {
  return CommandOption(app_->add_option(names, target, help));
}

CommandOption Command::Flag(const std::string& names, bool& target, const std::string& help) {
  return CommandOption(app_->add_flag(names, target, help));
}

std::string Command::Footer() const { return app_->get_footer(); }

void Command::SetFooter(const std::string& text) { app_->footer(text); }

void Command::OnParsed(std::function<void()> action) { app_->callback(std::move(action)); }

bool Command::Parsed() const { return app_->parsed(); }

std::string Command::Path() const {
  std::string path = app_->get_name();
  for (const CLI::App* p = app_->get_parent(); p != nullptr; p = p->get_parent()) {
    path = p->get_name() + " " + path;
  }
  return path;
}

CommandLine::CommandLine(const std::string& description, const std::string& name)
    : Command(new CLI::App(description, name)) {}

CommandLine::~CommandLine() { delete app_; }

std::optional<int> CommandLine::Parse(int argc, const char* const* argv) {
  try {
    app_->parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    // CLI11's own handling: help to stdout, a usage error to stderr, an
    // action's exit (a RuntimeError) silently.
    return app_->exit(e);
  }
  return std::nullopt;
}

void ExitCommandLine(int exit_code) {
  // CLI11's way to leave parse() with a code: exit() prints nothing for it.
  throw CLI::RuntimeError(exit_code);
}

}  // namespace clickatron
