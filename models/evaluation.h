// Scoring a model on pairs whose answers are known: how many it decodes exactly, and how well
// its cross-attention finds the gold word alignment. Both leave the model as they found it
// (train or eval mode, attention recording, grad mode), so they may run in the middle of
// training.
#pragma once

#include <cstdint>
#include <span>

#include "data/pair.h"
#include "data/sentence_pairs.h"
#include "data/tokenizer.h"
#include "data/word_alignment.h"
#include "models/transformer.h"

namespace gf {

// The fraction of pairs whose greedy decoding reproduces the target. A target that ends in
// eos must be produced token for token and then stop. One without eos (a pairs file may hold
// such targets, data/pairs_file.h) never taught the model where to stop, so its tokens need
// only come first, whatever follows.
double exact_match(Transformer& model, std::span<const data::Pair> pairs);

// How well cross-attention finds the gold word alignment (data/word_alignment.h) on pairs whose
// third column is one: the reference target is fed with teacher forcing, and each target
// word's pooled attention in decoder layer `layer` (0-based; -1: the last), heads averaged, is
// compared with its aligned source word. Throws FormatError "NAME:LINE: ..." for a third column
// that is not an alignment.
data::AlignmentScore score_alignment(Transformer& model, const data::Tokenizer& tokenizer,
                                     const data::SentencePairsFile& file, int64_t layer = -1);

}  // namespace gf
