// CommandLine: what the programs' users see through the wrapper is CLI11's
// behaviour: required options, refused values and missing commands are usage
// errors with CLI11's exit codes (scripts tell them from an action's 1 by
// them), values reach their targets, actions run only for the command given
// and can end the parse with a code of their own.
#include "clickatron/command_line.h"

#include <gtest/gtest.h>

#include <optional>
#include <string>
#include <vector>

namespace clickatron::command_line_test {
namespace {

// CLI11's exit codes (CLI::ExitCodes), which the programs exit with.
constexpr int kValueRefused = 105;     // ValidationError
constexpr int kRequiredMissing = 106;  // RequiredError (an option or a command)
constexpr int kNeedsMissing = 107;     // RequiresError

std::optional<int> Parse(CommandLine& cli, std::vector<std::string> args) {
  args.insert(args.begin(), "prog");
  std::vector<const char*> argv;
  for (const std::string& arg : args) argv.push_back(arg.c_str());
  return cli.Parse(static_cast<int>(argv.size()), argv.data());
}

TEST(CommandLineTest, RequiredOptionLeftOutIsAUsageError) {
  std::string config;
  CommandLine without{"test", "prog"};
  without.Option("--config", config, "cluster file").Required();
  EXPECT_EQ(Parse(without, {}), kRequiredMissing);

  CommandLine with{"test", "prog"};
  with.Option("--config", config, "cluster file").Required();
  EXPECT_EQ(Parse(with, {"--config", "c.toml"}), std::nullopt);
  EXPECT_EQ(config, "c.toml");
}

TEST(CommandLineTest, RangeRefusesValuesOutsideItsBounds) {
  for (const char* refused : {"0", "11", "-1", "x"}) {
    uint32_t count = 7;
    CommandLine cli{"test", "prog"};
    cli.Option("--count", count).Range(1u, 10u);
    EXPECT_EQ(Parse(cli, {"--count", refused}), kValueRefused) << refused;
    EXPECT_EQ(count, 7u) << refused;
  }
  uint32_t count = 7;
  CommandLine cli{"test", "prog"};
  cli.Option("--count", count).Range(1u, 10u);
  EXPECT_EQ(Parse(cli, {"--count", "10"}), std::nullopt);
  EXPECT_EQ(count, 10u);

  // nan compares false with both bounds: refused all the same.
  for (const char* refused : {"1.5", "nan", "-nan", "NaN"}) {
    std::optional<double> ratio;
    CommandLine fraction{"test", "prog"};
    fraction.Option("--ratio", ratio).Range(0.0, 1.0);
    EXPECT_EQ(Parse(fraction, {"--ratio", refused}), kValueRefused) << refused;
    EXPECT_FALSE(ratio.has_value()) << refused;
  }
}

TEST(CommandLineTest, NonNegativeAndPositiveRefuseWhatTheySay) {
  int shard = 5;
  CommandLine negative{"test", "prog"};
  negative.Option("--shard", shard).NonNegative();
  EXPECT_EQ(Parse(negative, {"--shard", "-1"}), kValueRefused);
  CommandLine zero_shard{"test", "prog"};
  zero_shard.Option("--shard", shard).NonNegative();
  EXPECT_EQ(Parse(zero_shard, {"--shard", "0"}), std::nullopt);
  EXPECT_EQ(shard, 0);

  int wait = 60;
  CommandLine zero_wait{"test", "prog"};
  zero_wait.Option("--wait", wait).Positive();
  EXPECT_EQ(Parse(zero_wait, {"--wait", "0"}), kValueRefused);
  EXPECT_EQ(wait, 60);
}

TEST(CommandLineTest, OneOfRefusesAnyOtherValue) {
  std::string format = "realtime";
  CommandLine bogus{"test", "prog"};
  bogus.Option("--format", format).OneOf({"realtime", "archive"});
  EXPECT_EQ(Parse(bogus, {"--format", "Archive"}), kValueRefused);
  EXPECT_EQ(format, "realtime");

  CommandLine good{"test", "prog"};
  good.Option("--format", format).OneOf({"realtime", "archive"});
  EXPECT_EQ(Parse(good, {"--format", "archive"}), std::nullopt);
  EXPECT_EQ(format, "archive");
}

TEST(CommandLineTest, NonEmptyRefusesAnEmptyValueOnly) {
  std::string id = "unset";
  CommandLine empty{"test", "prog"};
  empty.Option("--id", id).NonEmpty();
  EXPECT_EQ(Parse(empty, {"--id", ""}), kValueRefused);
  EXPECT_EQ(id, "unset");

  CommandLine given{"test", "prog"};
  given.Option("--id", id).NonEmpty();
  EXPECT_EQ(Parse(given, {"--id", "mine-1"}), std::nullopt);
  EXPECT_EQ(id, "mine-1");
}

TEST(CommandLineTest, NeedsRefusesAnOptionWithoutItsPartner) {
  uint32_t shard = 0;
  uint32_t shard_count = 1;
  CommandLine cli{"test", "prog"};
  CommandOption shard_option = cli.Option("--shard", shard);
  CommandOption count_option = cli.Option("--shard-count", shard_count);
  shard_option.Needs(count_option);
  EXPECT_EQ(Parse(cli, {"--shard", "1"}), kNeedsMissing);
}

TEST(CommandLineTest, ParsedSaysWhichCommandWasGiven) {
  CommandLine cli{"test", "prog"};
  cli.RequireCommand();
  Command run = cli.AddCommand("run", "run it");
  Command load = cli.AddCommand("load", "load it");
  EXPECT_EQ(Parse(cli, {"load"}), std::nullopt);
  EXPECT_TRUE(load.Parsed());
  EXPECT_FALSE(run.Parsed());
  EXPECT_EQ(load.Path(), "prog load");

  // Two levels down, as the tool's commands are ("clickatron ymdh decode").
  CommandLine nested{"test", "prog"};
  Command ymdh = nested.AddCommand("ymdh", "hour codes");
  Command decode = ymdh.AddCommand("decode", "a code to a time");
  EXPECT_EQ(Parse(nested, {"ymdh", "decode"}), std::nullopt);
  EXPECT_TRUE(decode.Parsed());
  EXPECT_EQ(decode.Path(), "prog ymdh decode");

  CommandLine none{"test", "prog"};
  none.RequireCommand();
  none.AddCommand("run", "run it");
  EXPECT_EQ(Parse(none, {}), kRequiredMissing);
}

// A mistyped command is named (CLI11 alone says only that one is required).
TEST(CommandLineTest, AnUnknownCommandIsNamed) {
  CommandLine cli{"test", "prog"};
  cli.RequireCommand();
  cli.AddCommand("run", "run it");
  ::testing::internal::CaptureStderr();
  EXPECT_EQ(Parse(cli, {"rnu"}), kRequiredMissing);
  const std::string said = ::testing::internal::GetCapturedStderr();
  EXPECT_NE(said.find("unknown command \"rnu\""), std::string::npos) << said;
}

TEST(CommandLineTest, VectorPositionalTakesEveryValueAndFlagIsSetWhenGiven) {
  std::vector<std::string> files;
  bool now = false;
  bool force = false;
  CommandLine cli{"test", "prog"};
  cli.Option("files", files, "data files").Required();
  cli.Flag("--now", now);
  cli.Flag("--force", force);
  EXPECT_EQ(Parse(cli, {"a.csv", "--now", "b.csv", "c.csv"}), std::nullopt);
  EXPECT_EQ(files, (std::vector<std::string>{"a.csv", "b.csv", "c.csv"}));
  EXPECT_TRUE(now);
  EXPECT_FALSE(force);
}

TEST(CommandLineTest, OptionalDoubleStaysUnsetUnlessGiven) {
  std::optional<double> unset;
  CommandLine left_out{"test", "prog"};
  left_out.Option("--ratio", unset);
  EXPECT_EQ(Parse(left_out, {}), std::nullopt);
  EXPECT_FALSE(unset.has_value());

  std::optional<double> set;
  CommandLine given{"test", "prog"};
  given.Option("--ratio", set);
  EXPECT_EQ(Parse(given, {"--ratio", "0.25"}), std::nullopt);
  ASSERT_TRUE(set.has_value());
  EXPECT_DOUBLE_EQ(*set, 0.25);
}

TEST(CommandLineTest, ActionRunsOnlyForItsCommandAndMayEndTheParseWithACode) {
  int runs = 0;
  int loads = 0;
  CommandLine cli{"test", "prog"};
  Command run = cli.AddCommand("run");
  Command load = cli.AddCommand("load");
  run.OnParsed([&] { ++runs; });
  load.OnParsed([&] {
    ++loads;
    ExitCommandLine(3);
  });
  EXPECT_EQ(Parse(cli, {"load"}), 3);
  EXPECT_EQ(loads, 1);
  EXPECT_EQ(runs, 0);
}

TEST(CommandLineTest, HelpExitsZeroAndShowsCli11sDescriptionsOfChecksAndDefaults) {
  uint32_t count = 1;
  std::string format = "realtime";
  int wait = 60;
  CommandLine cli{"test", "prog"};
  cli.SetFooter("the footer");
  Command sub = cli.AddCommand("sub", "a command");
  sub.Option("--count", count).Range(1u, 10u);
  sub.Option("--format", format).OneOf({"realtime", "archive"});
  sub.Option("--wait", wait).ShowDefault();
  ::testing::internal::CaptureStdout();
  const std::optional<int> code = Parse(cli, {"sub", "--help"});
  const std::string help = ::testing::internal::GetCapturedStdout();
  EXPECT_EQ(code, 0);
  EXPECT_NE(help.find("Usage: prog sub"), std::string::npos) << help;
  EXPECT_NE(help.find("--count UINT:UINT in [1 - 10]"), std::string::npos) << help;
  EXPECT_NE(help.find("--format TEXT:{realtime,archive}"), std::string::npos) << help;
  EXPECT_NE(help.find("--wait INT=60"), std::string::npos) << help;
  EXPECT_NE(help.find("the footer"), std::string::npos) << help << "(a command starts with its parent's footer)";
}

}  // namespace
}  // namespace clickatron::command_line_test
