// solver_pairs run as a process: two sides given the same solver options solve every step
// bit-identically (each step starts B from A's snapshot), different options are told apart,
// and bad options are refused by name.
#include <sstream>
#include <string>

#include "gtest/gtest.h"
#include "run_command.h"

namespace {

const std::string kHumanoid = AXION_TEST_HUMANOID;
const std::string kBinary = AXION_SOLVER_PAIRS_BINARY;

// Runs solver_pairs with `flags`; returns its exit status, stdout and stderr in `output`.
int RunPairs(const std::string& flags, std::string* output) {
  return axion::test::RunCommand(kBinary + " " + flags + " 2>&1", output);
}

// The Newton iterations per step of side `side` ("A" or "B"): the first number after the label.
double NewtonPerStep(const std::string& output, const std::string& side) {
  std::istringstream lines(output);
  for (std::string line; std::getline(lines, line);) {
    if (line.rfind(side + " ", 0) != 0) continue;
    std::istringstream fields(line.substr(side.size()));
    std::string options;
    fields >> options;
    if (options == "(the") fields >> options;  // "(the model's)"
    double newton = -1;
    fields >> newton;
    return newton;
  }
  return -1;
}

const std::string kRun = "--model=" + kHumanoid + " --timestep=0.005 --steps=40 --seeds=3-4";

TEST(SolverPairsTest, SameOptionsSolveEveryStepBitIdentically) {
  std::string out;
  ASSERT_EQ(RunPairs(kRun + " --b=line_search=true", &out), 0) << out;
  EXPECT_NE(out.find("80 step pairs"), std::string::npos) << out;
  EXPECT_NE(out.find("80 of 80 steps bit-identical"), std::string::npos) << out;
  EXPECT_NE(out.find("B / A: Newton 1.000, CR 1.000"), std::string::npos) << out;
  EXPECT_GT(NewtonPerStep(out, "A"), 1.0) << out;  // the humanoid takes Newton iterations
  EXPECT_EQ(NewtonPerStep(out, "A"), NewtonPerStep(out, "B")) << out;
}

TEST(SolverPairsTest, DifferentOptionsAreMeasuredOnTheSameStates) {
  std::string out;
  ASSERT_EQ(RunPairs(kRun + " --b=newton_iterations=1", &out), 0) << out;
  EXPECT_GT(NewtonPerStep(out, "A"), 1.5) << out;
  EXPECT_GT(NewtonPerStep(out, "B"), 0.0) << out;
  EXPECT_LE(NewtonPerStep(out, "B"), 1.0) << out;
  EXPECT_EQ(out.find("80 of 80 steps bit-identical"), std::string::npos) << out;
}

TEST(SolverPairsTest, RefusesUnknownOrMalformedOptions) {
  std::string out;
  EXPECT_EQ(RunPairs(kRun + " --b=newton_limit=3", &out), 1) << out;
  EXPECT_NE(out.find("--b: unknown solver option 'newton_limit'"), std::string::npos) << out;
  EXPECT_EQ(RunPairs(kRun + " --a=cr_tolerance=nan", &out), 1) << out;
  EXPECT_NE(out.find("--a: cr_tolerance='nan': expected a number"), std::string::npos) << out;
  EXPECT_EQ(RunPairs(kRun + " --b=line_search=maybe", &out), 1) << out;
  EXPECT_NE(out.find("line_search='maybe': expected true or false"), std::string::npos) << out;
  EXPECT_EQ(RunPairs("--model=" + kHumanoid + " --seeds=5-2", &out), 1) << out;
  EXPECT_NE(out.find("--seeds='5-2'"), std::string::npos) << out;
}

}  // namespace
