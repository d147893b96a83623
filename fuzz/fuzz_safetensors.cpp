// load_safetensors on arbitrary bytes. The documented outcome is a FormatError or a file
// whose tensors are exactly the data buffer, cut at the offsets its header gives; any other
// exception, crash, sanitizer report, hang or large allocation is a finding.
//
// The reader takes a path, so each input goes into an in-memory file (memfd) that the reader
// opens as /proc/self/fd/N: no disk traffic, and the fstat/read path is the real one.
#include <sys/mman.h>
#include <unistd.h>

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <string>

#include "autograd/errors.h"
#include "fuzz/fuzz_support.h"
#include "nn/safetensors.h"

namespace {

class MemoryFile {
 public:
  MemoryFile() : fd_(::memfd_create("fuzz_safetensors", MFD_CLOEXEC)) {
    gf::fuzz::require(fd_ >= 0, "memfd_create succeeds");
    path_ = "/proc/self/fd/" + std::to_string(fd_);
  }
  MemoryFile(const MemoryFile&) = delete;
  MemoryFile& operator=(const MemoryFile&) = delete;
  ~MemoryFile() { ::close(fd_); }

  const std::string& hold(const uint8_t* data, size_t size) {
    gf::fuzz::require(::ftruncate(fd_, 0) == 0, "ftruncate succeeds");
    const ssize_t written = size == 0 ? 0 : ::pwrite(fd_, data, size, 0);
    gf::fuzz::require(written == static_cast<ssize_t>(size), "pwrite writes everything");
    return path_;
  }

 private:
  int fd_;
  std::string path_;
};

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  static MemoryFile file;
  const std::string& path = file.hold(data, size);
  gf::nn::SafetensorsFile loaded;
  try {
    loaded = gf::nn::load_safetensors(path);
  } catch (const gf::FormatError&) {
    return 0;
  }
  // Accepted: the tensors, in buffer order, must be the file's last bytes, end to end.
  size_t tensor_bytes = 0;
  for (const auto& [name, tensor] : loaded.tensors)
    tensor_bytes += static_cast<size_t>(tensor.numel()) * sizeof(float);
  gf::fuzz::require(size >= 8 + tensor_bytes, "the tensors fit in the file");
  size_t offset = size - tensor_bytes;
  for (const auto& [name, tensor] : loaded.tensors) {
    const size_t n = static_cast<size_t>(tensor.numel()) * sizeof(float);
    gf::fuzz::require(n == 0 || std::memcmp(tensor.data(), data + offset, n) == 0,
                      "each tensor holds its bytes of the data buffer");
    offset += n;
  }
  return 0;
}
