// A training example for an encoder-decoder: a source sequence and a target sequence of
// token ids, unpadded. Padding is added only when pairs are stacked into a batch (batch.h).
#pragma once

#include <cstdint>
#include <vector>

namespace gf::data {

// A decoder-only model (models/transformer.h) reads no source: its examples have an empty src
// and a tgt of bos then text (data/text_windows.h).
//
// src: what the encoder reads, e.g. content + [eos].
// tgt: the FULL target as the model sees it, [bos] + content + [eos]. Teacher forcing feeds
//      tgt[:-1] to the decoder and asks it to predict tgt[1:], so position i learns to
//      predict token i+1 from tokens 0..i (§3.2.3 of the paper).
struct Pair {
  std::vector<int32_t> src;
  std::vector<int32_t> tgt;

  friend bool operator==(const Pair&, const Pair&) = default;
};

}  // namespace gf::data
