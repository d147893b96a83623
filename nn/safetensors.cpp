// Writing and reading safetensors files (layout in safetensors.h). The reader treats the file
// as untrusted input: each number in the header is checked against the file's real size
// before any memory is allocated from it, and the tensors must tile the data buffer exactly,
// as the reference implementation (huggingface/safetensors) requires.
#include "nn/safetensors.h"

#include <fcntl.h>
#include <fmt/format.h>
#include <signal.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <atomic>
#include <bit>
#include <cerrno>
#include <charconv>
#include <cstdint>
#include <filesystem>
#include <limits>
#include <nlohmann/json.hpp>
#include <optional>
#include <set>
#include <stdexcept>
#include <system_error>
#include <vector>

#include "autograd/errors.h"

namespace gf::nn {
namespace {

// ordered_json keeps keys in the order they were written: the header lists "__metadata__"
// first and then the tensors in buffer order, as the reference writer does.
using Json = nlohmann::ordered_json;

// Tensor bytes go straight between memory and file, which matches the format's little-endian
// layout only on a little-endian machine (x86-64, ARM64); a big-endian port would swap here.
static_assert(std::endian::native == std::endian::little,
              "safetensors data is little-endian; add byte swapping for this machine");

constexpr const char* kMetadataKey = "__metadata__";
constexpr uint64_t kBytesPerFloat = 4;
constexpr uint64_t kLengthBytes = 8;               // the header length field
constexpr uint64_t kHeaderAlignment = 8;           // header padded so the data is aligned
constexpr uint64_t kMaxHeaderBytes = 100'000'000;  // the reference reader's limit
constexpr uint64_t kMaxInt64 = std::numeric_limits<int64_t>::max();
constexpr int kMaxHeaderDepth = 3;         // the header, a tensor's entry, its shape
constexpr uint64_t kMaxArrayItems = 1024;  // far above any shape's rank or data_offsets' 2

std::string reason(int err) {
  return std::generic_category().message(err);
}

// Writes all n bytes, continuing after partial writes and interrupted calls. Returns 0 or errno.
int write_all(int fd, const void* bytes, size_t n) {
  const auto* p = static_cast<const unsigned char*>(bytes);
  while (n > 0) {
    const ssize_t written = ::write(fd, p, n);
    if (written < 0) {
      if (errno == EINTR) continue;
      return errno;
    }
    p += written;
    n -= static_cast<size_t>(written);
  }
  return 0;
}

// Reads exactly n bytes. Returns 0, errno, or -1 if the file ends first.
int read_all(int fd, void* bytes, size_t n) {
  auto* p = static_cast<unsigned char*>(bytes);
  while (n > 0) {
    const ssize_t got = ::read(fd, p, n);
    if (got < 0) {
      if (errno == EINTR) continue;
      return errno;
    }
    if (got == 0) return -1;
    p += got;
    n -= static_cast<size_t>(got);
  }
  return 0;
}

// ---- Writing --------------------------------------------------------------------------

// The JSON header for tensors laid out one after another in the given order, padded with
// spaces (which JSON ignores) to a multiple of 8 bytes so that the data buffer starts aligned.
std::string encode_header(const std::string& path, const NamedTensors& tensors,
                          const Metadata& metadata) {
  Json header = Json::object();
  if (!metadata.empty()) header[kMetadataKey] = Json(metadata);
  std::set<std::string> names;
  uint64_t offset = 0;
  for (const auto& [name, tensor] : tensors) {
    if (name == kMetadataKey)
      throw std::invalid_argument(fmt::format(
          "checkpoint: {}: \"{}\" is reserved for metadata and cannot name a tensor", path, name));
    if (!names.insert(name).second)
      throw std::invalid_argument(
          fmt::format("checkpoint: {}: duplicate tensor name \"{}\"", path, name));
    if (!tensor.defined())
      throw std::invalid_argument(
          fmt::format("checkpoint: {}: tensor \"{}\" is undefined", path, name));
    const uint64_t bytes = static_cast<uint64_t>(tensor.numel()) * kBytesPerFloat;
    header[name] =
        Json::object({{"dtype", "F32"},
                      {"shape", std::vector<int64_t>(tensor.shape().begin(), tensor.shape().end())},
                      {"data_offsets", Json::array({offset, offset + bytes})}});
    offset += bytes;
  }
  std::string text;
  try {
    text = header.dump();
  } catch (const nlohmann::json::exception& e) {  // a name or value that is not UTF-8
    throw std::invalid_argument(fmt::format("checkpoint: {}: {}", path, e.what()));
  }
  text.append((kHeaderAlignment - text.size() % kHeaderAlignment) % kHeaderAlignment, ' ');
  return text;
}

// A new file beside target, named target.tmp-<pid>-<k>. It is removed again on destruction
// unless commit() has renamed it over target: an error at any point leaves target as it was.
class TempFile {
 public:
  explicit TempFile(const std::string& target) : target_(target) {
    static std::atomic<unsigned> counter{0};  // distinct names for threads of one process
    for (int attempt = 0;; ++attempt) {
      path_ = fmt::format("{}.tmp-{}-{}", target, ::getpid(), counter++);
      fd_ = ::open(path_.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0666);
      if (fd_ >= 0) return;
      if (errno != EEXIST || attempt == 100) fail("cannot create", errno);
    }
  }
  TempFile(const TempFile&) = delete;
  TempFile& operator=(const TempFile&) = delete;
  ~TempFile() {
    if (fd_ >= 0) ::close(fd_);
    if (!committed_) ::unlink(path_.c_str());
  }

  void write(const void* bytes, size_t n) {
    if (const int err = write_all(fd_, bytes, n)) fail("cannot write", err);
  }

  // fsync before rename: otherwise a crash soon after could leave the new name pointing at
  // data that never reached the disk.
  void commit() {
    if (::fsync(fd_) != 0) fail("cannot flush", errno);
    const int closed = ::close(fd_);
    fd_ = -1;
    if (closed != 0) fail("cannot close", errno);
    std::error_code ec;
    std::filesystem::rename(path_, target_, ec);
    if (ec)
      throw std::runtime_error(
          fmt::format("checkpoint: {}: cannot rename {} to it ({})", target_, path_, ec.message()));
    committed_ = true;
    sync_directory();
  }

 private:
  [[noreturn]] void fail(const char* what, int err) const {
    throw std::runtime_error(
        fmt::format("checkpoint: {}: {} {} ({})", target_, what, path_, reason(err)));
  }

  // Makes the rename itself durable. Best effort: some file systems refuse to sync a
  // directory, and the new file is complete either way.
  void sync_directory() const {
    std::filesystem::path dir = std::filesystem::path(target_).parent_path();
    if (dir.empty()) dir = ".";
    const int fd = ::open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (fd < 0) return;
    [[maybe_unused]] const int ignored = ::fsync(fd);
    ::close(fd);
  }

  std::string target_;
  std::string path_;
  int fd_ = -1;
  bool committed_ = false;
};

// ---- Reading --------------------------------------------------------------------------

FormatError format_error(const std::string& path, const std::string& problem) {
  return FormatError(fmt::format("checkpoint: {}: {}", path, problem));
}

// A file opened for reading, closed on every way out.
struct InputFile {
  explicit InputFile(const std::string& path) : fd(::open(path.c_str(), O_RDONLY | O_CLOEXEC)) {
    if (fd < 0) throw format_error(path, fmt::format("cannot open the file ({})", reason(errno)));
  }
  InputFile(const InputFile&) = delete;
  InputFile& operator=(const InputFile&) = delete;
  ~InputFile() { ::close(fd); }
  int fd;
};

// One tensor's header entry, checked.
struct Entry {
  std::string name;
  Shape shape;
  uint64_t begin = 0;  // byte offsets into the data buffer, end exclusive
  uint64_t end = 0;
};

// The value of a JSON integer in [0, 2^63), or nothing for anything else (negative numbers,
// fractions, 3.0, strings).
std::optional<uint64_t> non_negative_int(const Json& value) {
  if (!value.is_number_unsigned()) return std::nullopt;  // nlohmann stores >= 0 as unsigned
  const auto n = value.get<uint64_t>();
  if (n > kMaxInt64) return std::nullopt;
  return n;
}

// Parses the header, refusing a key that appears twice in one object: nlohmann would keep
// only one of them silently, and a file that says two things about a tensor is corrupt.
// Also refused while parsing, before the tree is built: containers nested deeper than a valid
// header's three levels (the header, an entry, its shape), which would overflow the stack in
// the recursive dump() that error messages use, and arrays longer than any shape, which
// would let a 100 MB header of "0," grow into a tree of gigabytes.
Json parse_header(const std::string& path, const std::string& text) {
  struct Open {
    bool is_array = false;
    uint64_t items = 0;          // values so far, counted for arrays
    std::set<std::string> keys;  // keys so far, for objects
  };
  std::vector<Open> open;
  std::optional<std::string> duplicate;
  const auto check = [&](int depth, nlohmann::json::parse_event_t event, Json& parsed) {
    using Event = nlohmann::json::parse_event_t;
    const bool starts = event == Event::object_start || event == Event::array_start;
    if (starts && depth >= kMaxHeaderDepth)
      throw format_error(path,
                         fmt::format("the header nests deeper than {} levels", kMaxHeaderDepth));
    if ((starts || event == Event::value) && !open.empty() && open.back().is_array &&
        ++open.back().items > kMaxArrayItems)
      throw format_error(
          path, fmt::format("the header has an array of more than {} items", kMaxArrayItems));
    if (starts) open.push_back({.is_array = event == Event::array_start, .items = 0, .keys = {}});
    if (event == Event::object_end || event == Event::array_end) open.pop_back();
    if (event == Event::key && !open.back().keys.insert(parsed.get<std::string>()).second &&
        !duplicate)
      duplicate = parsed.get<std::string>();
    return true;  // keep every value
  };
  Json header;
  try {
    header = Json::parse(text, check);
  } catch (const nlohmann::json::exception& e) {
    throw format_error(path, fmt::format("the header is not valid JSON ({})", e.what()));
  }
  if (duplicate)
    throw format_error(path, fmt::format("the header has the key \"{}\" twice", *duplicate));
  if (!header.is_object()) throw format_error(path, "the header is not a JSON object");
  return header;
}

Metadata parse_metadata(const std::string& path, const Json& value) {
  if (!value.is_object())
    throw format_error(path, fmt::format("\"{}\" is not a JSON object", kMetadataKey));
  Metadata metadata;
  for (const auto& [key, item] : value.items()) {
    if (!item.is_string())
      throw format_error(path, fmt::format("\"{}\" value of \"{}\" is not a string ({})",
                                           kMetadataKey, key, item.dump()));
    metadata[key] = item.get<std::string>();
  }
  return metadata;
}

Entry parse_entry(const std::string& path, const std::string& name, const Json& value,
                  uint64_t buffer_bytes) {
  const auto error = [&](const std::string& what) {
    return format_error(path, fmt::format("tensor \"{}\": {}", name, what));
  };
  if (!value.is_object())
    throw error(fmt::format("the entry is not a JSON object ({})", value.dump()));
  for (const auto& [key, item] : value.items())
    if (key != "dtype" && key != "shape" && key != "data_offsets")
      throw error(fmt::format("unknown key \"{}\"", key));
  for (const char* key : {"dtype", "shape", "data_offsets"})
    if (!value.contains(key)) throw error(fmt::format("missing \"{}\"", key));

  const Json& dtype = value["dtype"];
  if (!dtype.is_string()) throw error(fmt::format("\"dtype\" is not a string ({})", dtype.dump()));
  if (dtype != "F32")
    throw error(
        fmt::format("dtype is {}, but only F32 (float32) can be read", dtype.get<std::string>()));

  // The shape: at most Shape::kMaxRank dimensions, each a non-negative integer, and a
  // product that fits in int64 (checked before each multiplication).
  Entry entry;
  entry.name = name;
  const Json& shape = value["shape"];
  if (!shape.is_array()) throw error(fmt::format("\"shape\" is not an array ({})", shape.dump()));
  if (shape.size() > static_cast<size_t>(Shape::kMaxRank))
    throw error(fmt::format("rank {} exceeds the maximum of {}", shape.size(), Shape::kMaxRank));
  uint64_t numel = 1;
  for (const Json& dim : shape) {
    const std::optional<uint64_t> d = non_negative_int(dim);
    if (!d)
      throw error(fmt::format("shape {} is not a list of non-negative integers", shape.dump()));
    if (*d != 0 && numel > kMaxInt64 / kBytesPerFloat / *d)
      throw error(fmt::format("shape {} has too many elements", shape.dump()));
    numel *= *d;
    entry.shape.push_back(static_cast<int64_t>(*d));
  }

  const Json& offsets = value["data_offsets"];
  std::optional<uint64_t> begin, end;
  if (offsets.is_array() && offsets.size() == 2) {
    begin = non_negative_int(offsets[0]);
    end = non_negative_int(offsets[1]);
  }
  if (!begin || !end)
    throw error(
        fmt::format("data_offsets {} is not a pair of non-negative integers", offsets.dump()));
  if (*begin > *end)
    throw error(fmt::format("data_offsets [{}, {}] end before they begin", *begin, *end));
  if (*end > buffer_bytes)
    throw error(fmt::format("data_offsets [{}, {}] reach past the end of the {}-byte data buffer",
                            *begin, *end, buffer_bytes));
  if (*end - *begin != numel * kBytesPerFloat)
    throw error(fmt::format("shape {} needs {} bytes of F32, but data_offsets [{}, {}] hold {}",
                            entry.shape, numel * kBytesPerFloat, *begin, *end, *end - *begin));
  entry.begin = *begin;
  entry.end = *end;
  return entry;
}

// Sorts entries into buffer order and checks that they cover [0, buffer_bytes) exactly once.
void check_tiling(const std::string& path, std::vector<Entry>& entries, uint64_t buffer_bytes) {
  std::stable_sort(entries.begin(), entries.end(), [](const Entry& a, const Entry& b) {
    return a.begin != b.begin ? a.begin < b.begin : a.end < b.end;
  });
  uint64_t covered = 0;  // bytes [0, covered) belong to the entries checked so far
  const Entry* last = nullptr;
  for (const Entry& e : entries) {
    if (e.begin < covered)
      throw format_error(
          path, fmt::format("tensors \"{}\" (bytes [{}, {})) and \"{}\" (bytes [{}, {})) overlap",
                            last->name, last->begin, last->end, e.name, e.begin, e.end));
    if (e.begin > covered)
      throw format_error(path, fmt::format("bytes [{}, {}) of the data buffer belong to no tensor",
                                           covered, e.begin));
    covered = e.end;
    last = &e;
  }
  if (covered != buffer_bytes)
    throw format_error(path, fmt::format("bytes [{}, {}) of the data buffer belong to no tensor",
                                         covered, buffer_bytes));
}

}  // namespace

void save_safetensors(const std::string& path, const NamedTensors& tensors,
                      const Metadata& metadata) {
  const std::string header = encode_header(path, tensors, metadata);
  std::array<unsigned char, kLengthBytes> length{};
  for (size_t i = 0; i < length.size(); ++i)  // little-endian: least significant byte first
    length[i] = static_cast<unsigned char>(static_cast<uint64_t>(header.size()) >> (8 * i));

  TempFile file(path);
  file.write(length.data(), length.size());
  file.write(header.data(), header.size());
  for (const auto& [name, tensor] : tensors)
    file.write(tensor.data(), static_cast<size_t>(tensor.numel()) * kBytesPerFloat);
  file.commit();
}

SafetensorsFile load_safetensors(const std::string& path) {
  InputFile file(path);
  struct stat info {};
  if (::fstat(file.fd, &info) != 0)
    throw format_error(path, fmt::format("cannot read the file ({})", reason(errno)));
  if (!S_ISREG(info.st_mode)) throw format_error(path, "not a regular file");
  const auto file_bytes = static_cast<uint64_t>(info.st_size);
  const auto read = [&](void* bytes, uint64_t n) {
    const int err = read_all(file.fd, bytes, static_cast<size_t>(n));
    if (err == -1)
      throw format_error(path, "the file ended early (was it truncated while being read?)");
    if (err != 0) throw format_error(path, fmt::format("cannot read the file ({})", reason(err)));
  };

  // The length field, then the header. Both size checks come before the allocation, so a
  // corrupt length cannot make us reserve gigabytes.
  if (file_bytes < kLengthBytes)
    throw format_error(
        path,
        fmt::format("the file has {} bytes, too few for the 8-byte header length", file_bytes));
  std::array<unsigned char, kLengthBytes> length{};
  read(length.data(), length.size());
  uint64_t header_bytes = 0;
  for (size_t i = 0; i < length.size(); ++i) header_bytes |= uint64_t{length[i]} << (8 * i);
  if (header_bytes > kMaxHeaderBytes)
    throw format_error(path, fmt::format("not a safetensors file? The header length it starts "
                                         "with, {}, exceeds the limit of {} bytes",
                                         header_bytes, kMaxHeaderBytes));
  if (header_bytes > file_bytes - kLengthBytes)
    throw format_error(path, fmt::format("the header length {} exceeds the {} bytes that follow it",
                                         header_bytes, file_bytes - kLengthBytes));
  std::string text(static_cast<size_t>(header_bytes), '\0');
  read(text.data(), header_bytes);

  // Check every entry against the buffer before reading any data.
  const uint64_t buffer_bytes = file_bytes - kLengthBytes - header_bytes;
  const Json header = parse_header(path, text);
  SafetensorsFile result;
  std::vector<Entry> entries;
  for (const auto& [key, value] : header.items()) {
    if (key == kMetadataKey)
      result.metadata = parse_metadata(path, value);
    else
      entries.push_back(parse_entry(path, key, value, buffer_bytes));
  }
  check_tiling(path, entries, buffer_bytes);

  // The entries now tile the buffer in order, so one sequential pass reads it all.
  for (const Entry& e : entries) {
    Tensor t = Tensor::empty(e.shape);
    read(t.data(), e.end - e.begin);
    result.tensors.emplace_back(e.name, t);
  }
  return result;
}

int remove_stale_temporaries(const std::string& path) {
  namespace fs = std::filesystem;
  const fs::path target(path);
  const fs::path dir = target.parent_path().empty() ? fs::path(".") : target.parent_path();
  const std::string prefix = target.filename().string() + ".tmp-";
  std::error_code ec;
  int removed = 0;
  for (const fs::directory_entry& entry : fs::directory_iterator(dir, ec)) {
    const std::string name = entry.path().filename().string();
    if (!name.starts_with(prefix)) continue;
    const std::string rest = name.substr(prefix.size());  // "<pid>-<k>"
    pid_t pid = 0;
    const auto [stop, err] = std::from_chars(rest.data(), rest.data() + rest.size(), pid);
    if (err != std::errc{} || stop == rest.data() || *stop != '-' || pid <= 0) continue;
    // ESRCH: no such process. A live one (even one that only reuses the number) keeps its file.
    if (::kill(pid, 0) == 0 || errno != ESRCH) continue;
    removed += fs::remove(entry.path(), ec) ? 1 : 0;
  }
  return removed;
}

}  // namespace gf::nn
