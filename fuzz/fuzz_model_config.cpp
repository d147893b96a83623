// TransformerConfig::from_metadata on arbitrary checkpoint metadata: the "__metadata__"
// strings of a file someone else wrote. The input is read as lines KEY<TAB>VALUE. The
// documented outcome is a FormatError or a configuration that passes validate().
#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <map>
#include <stdexcept>
#include <string>
#include <string_view>

#include "autograd/errors.h"
#include "fuzz/fuzz_support.h"
#include "models/transformer.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string_view text(reinterpret_cast<const char*>(data), size);
  std::map<std::string, std::string> metadata;
  size_t start = 0;
  while (start < text.size()) {
    const size_t newline = std::min(text.find('\n', start), text.size());
    const std::string_view line = text.substr(start, newline - start);
    const size_t tab = line.find('\t');
    if (tab != std::string_view::npos)
      metadata[std::string(line.substr(0, tab))] = std::string(line.substr(tab + 1));
    start = newline + 1;
  }
  gf::TransformerConfig config;
  try {
    config = gf::TransformerConfig::from_metadata(metadata, "fuzz");
  } catch (const gf::FormatError&) {
    return 0;
  }
  try {
    config.validate();
  } catch (const std::invalid_argument&) {
    gf::fuzz::require(false, "an accepted configuration is valid");
  }
  // Writing it back and reading that again gives the same metadata.
  const auto written = config.to_metadata();
  gf::fuzz::require(gf::TransformerConfig::from_metadata(written, "again").to_metadata() == written,
                    "to_metadata/from_metadata round-trips");
  return 0;
}
