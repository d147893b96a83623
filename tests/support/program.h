// The command line that starts one of our own programs (the transformer CLI) from a test. On
// the machine that built it, the binary itself. In a cross build (the aarch64 preset) the
// kernel cannot run it, so the tests start it through the emulator that ctest uses, as
// GRADFORMER_EMULATOR names it (tests/CMakeLists.txt): qemu-aarch64 BINARY ARGS...
#pragma once

#include <iterator>
#include <sstream>
#include <string>
#include <vector>

namespace gf::testing {

inline std::vector<std::string> program_command(const std::string& binary) {
  std::istringstream emulator(GRADFORMER_EMULATOR);  // "" natively; words split on spaces
  std::vector<std::string> command{std::istream_iterator<std::string>(emulator),
                                   std::istream_iterator<std::string>()};
  command.push_back(binary);
  return command;
}

}  // namespace gf::testing
