// The one translation unit that compiles CLI11 (see command_line.h). It must
// not include clickatron/status.h, even through another of our headers: a
// change there would compile CLI11 again. src/CMakeLists.txt keeps it out of
// the unity files for the same reason.
#include "clickatron/command_line.h"

#include <CLI/CLI.hpp>

#include <cmath>
#include <cstdio>
#include <cstdlib>
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
  // CLI11's range compares, and nan compares false with every bound.
  option_->check(CLI::Validator(
      [](std::string& text) -> std::string {
        return std::isnan(std::strtod(text.c_str(), nullptr)) ? "nan is not in range" : std::string();
      },
      "", "not nan"));
  return *this;
}

namespace {

// A number's sign, checked with a plain message: CLI11's own checks name the
// largest double as the range's bound ("Value -1 not in range 0.000000 to
// 1797693134862315…", some 300 digits). `desc` is what --help shows.
CLI::Validator SignCheck(bool zero_ok, const std::string& desc) {
  return CLI::Validator(
      [zero_ok](std::string& text) -> std::string {
        char* end = nullptr;
        const double v = std::strtod(text.c_str(), &end);
        const bool number = end != text.c_str() && *end == '\0' && !std::isnan(v);
        if (number && (zero_ok ? v >= 0 : v > 0)) return std::string();
        return text + (zero_ok ? " is not a number of 0 or more" : " is not a number above 0");
      },
      desc, desc);
}

}  // namespace

CommandOption& CommandOption::NonNegative() {
  option_->check(SignCheck(/*zero_ok=*/true, "NONNEGATIVE"));
  return *this;
}

CommandOption& CommandOption::Positive() {
  option_->check(SignCheck(/*zero_ok=*/false, "POSITIVE"));
  return *this;
}

CommandOption& CommandOption::NonEmpty() {
  option_->check(CLI::Validator(
      [](std::string& value) { return value.empty() ? std::string("must not be empty") : std::string(); }, "NONEMPTY"));
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
    // A word where a command must be that names none: CLI11 says only "A
    // subcommand is required", which hides the typo.
    if (dynamic_cast<const CLI::RequiredError*>(&e) != nullptr && argc > 1 && argv[1][0] != '-' &&
        app_->get_require_subcommand_min() > 0) {
      bool known = false;
      for (const CLI::App* command : app_->get_subcommands({})) known |= command->check_name(argv[1]);
      if (!known) {
        std::fprintf(stderr, "%s: unknown command \"%s\" (--help lists the commands)\n", app_->get_name().c_str(),
                     argv[1]);
        return e.get_exit_code();
      }
    }
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
