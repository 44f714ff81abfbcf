// gpu_bench (bench/gpu), the batch-size sweep, run as a process on the CPU backend: its
// table for the 10-box stack at two batch sizes, --help, a bad flag, and the CUDA backend
// asked for where there is no device.
#include <sstream>
#include <string>
#include <vector>

#include "gtest/gtest.h"
#include "run_command.h"

namespace {

const std::string kBinary = AXION_GPU_BENCH_BINARY;

// Runs gpu_bench with `flags`; returns its exit status and stdout in `output`, stderr appended
// when `with_stderr`.
int RunBench(const std::string& flags, std::string* output, bool with_stderr = false) {
  return axion::test::RunCommand(kBinary + " " + flags + (with_stderr ? " 2>&1" : " 2>/dev/null"),
                                 output);
}

// The table's rows for `scene`: each row's whitespace-separated fields.
std::vector<std::vector<std::string>> Rows(const std::string& output, const std::string& scene) {
  std::vector<std::vector<std::string>> rows;
  std::istringstream lines(output);
  for (std::string line; std::getline(lines, line);) {
    std::istringstream fields(line);
    std::vector<std::string> row;
    for (std::string field; fields >> field;) row.push_back(field);
    if (!row.empty() && row[0] == scene) rows.push_back(row);
  }
  return rows;
}

TEST(GpuBenchTest, SweepsTheStackOnTheCpu) {
  std::string out;
  ASSERT_EQ(RunBench("--backend=cpu --scene=stack --worlds=1,4 --settle_steps=5 --max_steps=5 "
                     "--min_time=0 --threads=1",
                     &out),
            0)
      << out;
  // scene bknd worlds steps setup_s timed_s world_steps/s newton newton_max trips unconv% cr
  // contacts bytes/world
  const auto rows = Rows(out, "stack");
  ASSERT_EQ(rows.size(), 2u) << out;
  for (size_t i = 0; i < rows.size(); ++i) {
    ASSERT_EQ(rows[i].size(), 14u) << out;
    EXPECT_EQ(rows[i][1], "cpu");
    EXPECT_EQ(rows[i][2], i == 0 ? "1" : "4");
    EXPECT_GT(std::stod(rows[i][6]), 0) << "world-steps/s: " << out;
    EXPECT_GE(std::stod(rows[i][12]), 36) << "the stack rests on 4 contacts a box: " << out;
    EXPECT_GT(std::stod(rows[i][13]), 0) << "bytes per world: " << out;
  }
}

TEST(GpuBenchTest, HelpPrintsTheUsageAndSucceeds) {
  std::string out;
  ASSERT_EQ(RunBench("--help", &out), 0) << out;
  for (const char* flag : {"--backend", "--worlds", "--scene", "--rl_loop"})
    EXPECT_NE(out.find(flag), std::string::npos) << flag << " missing from:\n" << out;
}

TEST(GpuBenchTest, BadFlagIsRefusedByName) {
  std::string out;
  EXPECT_EQ(RunBench("--worlds=0", &out, true), 2) << out;
  EXPECT_NE(out.find("--worlds must be"), std::string::npos) << out;
  EXPECT_EQ(RunBench("--no_such_flag", &out, true), 2) << out;
  EXPECT_NE(out.find("unknown argument --no_such_flag"), std::string::npos) << out;
}

TEST(GpuBenchTest, CudaWithoutADeviceIsAClearError) {
  std::string out;
  const int status =
      RunBench("--backend=cuda --scene=stack --worlds=1 --max_steps=1 --min_time=0", &out, true);
  if (out.find("CUDA device absent") == std::string::npos)
    GTEST_SKIP() << "a CUDA device is present: the CUDA backend runs";
  EXPECT_NE(status, 0) << out;
  EXPECT_NE(out.find("the CUDA backend was requested"), std::string::npos) << out;
  EXPECT_NE(out.find("cpu"), std::string::npos) << out;
}

}  // namespace
