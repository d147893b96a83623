// tokenizer_from_json on arbitrary text, as found in a checkpoint's "__metadata__". The
// documented outcome is a FormatError or a tokenizer whose own JSON reads back to the same
// JSON (and so the same ids for every text).
#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <string_view>

#include "autograd/errors.h"
#include "data/tokenizer.h"
#include "fuzz/fuzz_support.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string_view json(reinterpret_cast<const char*>(data), size);
  std::unique_ptr<gf::data::Tokenizer> tokenizer;
  try {
    tokenizer = gf::data::tokenizer_from_json(json);
  } catch (const gf::FormatError&) {
    return 0;
  }
  const std::string written = tokenizer->to_json();
  gf::fuzz::require(gf::data::tokenizer_from_json(written)->to_json() == written,
                    "to_json/tokenizer_from_json round-trips");
  return 0;
}
