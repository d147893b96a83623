// The smallest model with everything in it (one encoder layer, two decoder layers, two heads),
// for tests that need a real Transformer but not a trained one: it builds and runs in
// microseconds.
#pragma once

#include <cstdint>

#include "models/transformer.h"

namespace gf::testing {

inline TransformerConfig tiny_config(int64_t vocab_size = 11) {
  return {.vocab_size = vocab_size,
          .d_model = 16,
          .d_ff = 32,
          .heads = 2,
          .encoder_layers = 1,
          .decoder_layers = 2,
          .max_len = 32,
          .dropout = 0.1f};
}

}  // namespace gf::testing
