// The progress line carries records, bytes, rates and an ETA once a total is known.
#include "sortmerge/progress.h"

#include <gtest/gtest.h>

namespace clickatron::rebuild {
namespace {

TEST(Progress, LineHasRatesAndEta) {
  Progress::SetQuiet(true);
  Progress progress("sort 2012-03-25", 4'000'000);
  progress.Add(1500, 1'000'000);
  const std::string line = progress.Line();
  EXPECT_NE(line.find("sort 2012-03-25: 1.5k records, 1.0 MB of 4.0 MB"), std::string::npos) << line;
  EXPECT_NE(line.find("rec/s"), std::string::npos) << line;
  EXPECT_NE(line.find("ETA"), std::string::npos) << line;
  progress.Add(0, 3'000'000);
  EXPECT_EQ(progress.Line().find("ETA"), std::string::npos) << "no ETA once everything is done";
  Progress::SetQuiet(false);
}

TEST(Progress, HumanUnits) {
  EXPECT_EQ(HumanBytes(512), "512 B");
  EXPECT_EQ(HumanBytes(2.5e9), "2.50 GB");
  EXPECT_EQ(HumanCount(1234567), "1.23M");
}

}  // namespace
}  // namespace clickatron::rebuild
