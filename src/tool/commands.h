// The `clickatron` operator tool: how subcommands plug in, and the input and
// output helpers they share.
//
// Each subcommand group lives in its own <name>_command.cc and registers itself
// at static-initialisation time, so adding one (status, oplog, …) touches no
// shared file (each registrar has a name of its own: unity builds compile
// several of these files as one):
//
//   namespace {
//   void AddOplogCommand(Command& app) { ... SetAction(sub, [=] { ... }); }
//   const bool kOplogRegistered = RegisterCommand(60, AddOplogCommand);
//   }
//
// This relies on the tool's sources being compiled straight into the
// executable (src/CMakeLists.txt globs src/tool/*.cc); in a static library an
// unreferenced registrar would be dropped by the linker.
#pragma once

#include <functional>
#include <string>
#include <string_view>
#include <vector>

#include "clickatron/command_line.h"
#include "clickatron/status.h"

namespace clickatron::tool {

using CommandAdder = void (*)(Command& app);

// Queues `adder` for main(); `order` fixes the order of subcommands in --help
// (static initialisers run in no particular order across files). Mine use
// 10 ymdh, 20 hash, 30 shard, 40 convert, 50 record.
bool RegisterCommand(int order, CommandAdder adder);
// Calls every registered adder, in order.
void AddRegisteredCommands(Command& app);

// Adds detailed help shown by `clickatron SUB --help` (under the options),
// keeping the one-line description for the subcommand list.
void SetDetails(Command sub, std::string_view details);

// Makes `body` the subcommand's action. A failed Status is printed to stderr as
// "clickatron <sub>: <message>" and the process exits with code 1.
void SetAction(Command sub, std::function<Status()> body);

// Calls `fn` on each of `args`, or, when `args` is empty, on each line of
// stdin. An error gets "argument N" or "stdin line N" in front of it.
Status ForEachArgOrStdinLine(const std::vector<std::string>& args,
                             const std::function<Status(std::string_view)>& fn);

// Calls `fn` on each line of each file ("-" or no files at all: stdin). An
// error gets "<file> line N" in front of it.
Status ForEachFileLine(const std::vector<std::string>& files,
                       const std::function<Status(std::string_view)>& fn);

// Writes `line` and a newline to stdout (buffered; main() checks the flush).
void PrintLine(std::string_view line);

}  // namespace clickatron::tool
