// Registration and the input/output helpers shared by all subcommands.
#include <fmt/format.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <utility>

#include "commands.h"

namespace clickatron::tool {
namespace {

std::vector<std::pair<int, CommandAdder>>& Registry() {
  // Function-local so it exists before any file's registrar runs.
  static std::vector<std::pair<int, CommandAdder>> registry;
  return registry;
}

// Line-at-a-time reading with POSIX getline: any line length, embedded NUL
// bytes kept (they are reported as bad input, not silently cut).
Status ReadLines(std::FILE* file, std::string_view name,
                 const std::function<Status(std::string_view)>& fn) {
  char* buffer = nullptr;
  size_t capacity = 0;
  Status status;
  for (uint64_t line_no = 1;; ++line_no) {
    errno = 0;
    const ssize_t n = getline(&buffer, &capacity, file);
    if (n < 0) {
      if (std::ferror(file)) {
        status = Status::IoError(fmt::format("reading {}: {}", name, std::strerror(errno)));
      }
      break;
    }
    std::string_view line(buffer, static_cast<size_t>(n));
    if (!line.empty() && line.back() == '\n') line.remove_suffix(1);
    // CRLF as LF, as /incr takes batch lines: a visitor log written on
    // Windows must not make "alice\r" a visitor other than "alice".
    if (!line.empty() && line.back() == '\r') line.remove_suffix(1);
    status = fn(line);
    if (!status.ok()) {
      status = status.WithContext(fmt::format("{} line {}", name, line_no));
      break;
    }
  }
  std::free(buffer);
  return status;
}

}  // namespace

bool RegisterCommand(int order, CommandAdder adder) {
  Registry().emplace_back(order, adder);
  return true;
}

void AddRegisteredCommands(Command& app) {
  auto& registry = Registry();
  std::stable_sort(registry.begin(), registry.end(),
                   [](const auto& a, const auto& b) { return a.first < b.first; });
  for (const auto& [order, adder] : registry) adder(app);
}

void SetDetails(Command sub, std::string_view details) {
  // The footer is inherited from the parent at creation; keep it after ours.
  const std::string inherited = sub.Footer();
  sub.SetFooter(fmt::format("{}{}{}", details, inherited.empty() ? "" : "\n\n", inherited));
}

void SetAction(Command sub, std::function<Status()> body) {
  sub.OnParsed([sub, body = std::move(body)] {
    const Status status = body();
    if (status.ok()) return;
    std::fflush(stdout);  // answers printed so far come before the error
    // The full command path ("clickatron ymdh decode"), as the user typed it.
    fmt::print(stderr, "{}: {}\n", sub.Path(), status.message());
    ExitCommandLine(1);  // the error is printed: leave with 1, silently
  });
}

Status ForEachArgOrStdinLine(const std::vector<std::string>& args,
                             const std::function<Status(std::string_view)>& fn) {
  if (args.empty()) return ReadLines(stdin, "stdin", fn);
  for (size_t i = 0; i < args.size(); ++i) {
    if (Status st = fn(args[i]); !st.ok()) {
      return st.WithContext(fmt::format("argument {}", i + 1));
    }
  }
  return Status::Ok();
}

Status ForEachFileLine(const std::vector<std::string>& files,
                       const std::function<Status(std::string_view)>& fn) {
  if (files.empty()) return ReadLines(stdin, "stdin", fn);
  for (const std::string& path : files) {
    if (path == "-") {
      CLICKATRON_RETURN_IF_ERROR(ReadLines(stdin, "stdin", fn));
      continue;
    }
    std::FILE* file = std::fopen(path.c_str(), "rb");
    if (file == nullptr) {
      return Status::IoError(fmt::format("cannot open {}: {}", path, std::strerror(errno)));
    }
    const Status st = ReadLines(file, path, fn);
    std::fclose(file);
    CLICKATRON_RETURN_IF_ERROR(st);
  }
  return Status::Ok();
}

void PrintLine(std::string_view line) {
  std::fwrite(line.data(), 1, line.size(), stdout);
  std::fputc('\n', stdout);
}

}  // namespace clickatron::tool
