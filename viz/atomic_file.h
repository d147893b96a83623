// Writing a whole file so that a reader never sees half of it: the bytes go to PATH.tmp, which
// is then renamed over PATH. The pictures (png.h) and the run pages (run_page.h) are written
// this way, so that a program stopped half-way leaves the old file or the new one.
#pragma once

#include <string>
#include <string_view>

namespace gf::viz {

// Writes bytes to path, creating missing parent folders. Throws std::runtime_error
// "WHAT: cannot write PATH: <reason>" ("png: cannot write out/x.png: No space left on device"),
// and leaves no temporary file behind.
void write_file_atomically(std::string_view bytes, const std::string& path, std::string_view what);

}  // namespace gf::viz
