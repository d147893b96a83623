// Scoring a model on pairs whose answers are known.
#pragma once

#include <span>

#include "data/pair.h"
#include "models/transformer.h"

namespace gf {

// The fraction of pairs whose greedy decoding reproduces the target. A target that ends in
// eos must be produced token for token and then stop. One without eos (a pairs file may hold
// such targets, data/pairs_file.h) never taught the model where to stop, so its tokens need
// only come first, whatever follows.
double exact_match(Transformer& model, std::span<const data::Pair> pairs);

}  // namespace gf
