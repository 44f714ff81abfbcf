// Runs a program as a user would, from a test: a shell command line, its exit status and stdout.
#pragma once

#include <sys/wait.h>

#include <array>
#include <cstdio>
#include <string>

namespace axion::test {

// Runs `command` through the shell; returns its exit status (-1 when it did not exit) and leaves
// its stdout in `output`. Redirections (2>&1, 2>/dev/null) belong to the command.
inline int RunCommand(const std::string& command, std::string* output) {
  FILE* pipe = ::popen(command.c_str(), "r");
  if (!pipe) return -1;
  std::array<char, 4096> buffer;
  output->clear();
  size_t n;
  while ((n = std::fread(buffer.data(), 1, buffer.size(), pipe)) > 0)
    output->append(buffer.data(), n);
  int status = ::pclose(pipe);
  return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
}

}  // namespace axion::test
