// `clickatron`: the operator tool. Subcommands register themselves (see
// commands.h); main only builds the app, runs it and checks stdout.
#include <fmt/format.h>

#include <cstdio>
#include <optional>

#include "commands.h"

int main(int argc, char** argv) {
  clickatron::CommandLine app{"clickatron: operator tool for a Clickatron cluster (YMDH codes, hashes, shards, records)",
                              "clickatron"};
  app.RequireCommand();
  app.SetFooter(
      "Inputs: with no arguments, most subcommands read one input per line from stdin.\n"
      "Values starting with '-' go after '--'. Exit code: 0 ok, 1 bad input, other: usage error.");
  clickatron::tool::AddRegisteredCommands(app);
  if (const std::optional<int> code = app.Parse(argc, argv)) {
    std::fflush(stdout);
    return *code;
  }
  // A full disk or closed pipe must not look like success to a script.
  if (std::fflush(stdout) != 0 || std::ferror(stdout)) {
    fmt::print(stderr, "clickatron: writing to stdout failed\n");
    return 1;
  }
  return 0;
}
