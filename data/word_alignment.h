// Scoring attention against gold word alignments: for each target word, is the source word
// the model attends to most the one it translates? This is the alignment score of the toy
// language (toy_language.h), and the question the cross-attention heatmaps pose by eye.
//
// Models see tokens, alignments are between words, and a word may be several tokens (BPE).
// So the token-level attention is first pooled into words: a target word's row is the mean of
// the rows of its tokens, and a source word's weight is the sum of the weights of its tokens
// (the probability mass that lands anywhere inside the word). The target word is then aligned
// to the source word with the most mass. Mass on tokens outside every word (<eos>) is left out.
//
// Which row belongs to a target token: the decoder step that PRODUCES the token, i.e. the row
// whose input is the token before it (<bos> for the first), as when the model is scored on the
// reference target with teacher forcing.
#pragma once

#include <cstdint>
#include <span>
#include <utility>
#include <vector>

#include "data/tokenizer.h"

namespace gf::data {

// For the ids of one encoded text, the index of the whitespace-separated word each token is
// part of: a token whose text starts with a space starts a new word. Special tokens get -1.
std::vector<int32_t> word_of_tokens(const Tokenizer& tokenizer, std::span<const int32_t> ids);

struct AlignmentScore {
  int64_t correct = 0;  // target words whose most-attended source word is a gold one
  int64_t total = 0;    // target words that have a gold alignment
  double accuracy() const {
    return total == 0 ? 0.0 : static_cast<double>(correct) / static_cast<double>(total);
  }
};

// Adds one sentence to score. attention is [target_tokens, source_tokens], row-major, one row
// per produced target token (see above); word_of_target / word_of_source map tokens to words
// (word_of_tokens); gold holds (source word, target word) pairs. Throws std::invalid_argument
// when the sizes disagree.
void add_alignment_score(std::span<const float> attention, std::span<const int32_t> word_of_target,
                         std::span<const int32_t> word_of_source,
                         std::span<const std::pair<int32_t, int32_t>> gold, AlignmentScore& score);

// The source word each target word attends to most, by the pooling above (-1 for a target
// word with no tokens, or when every source weight is zero). Throws as add_alignment_score.
std::vector<int32_t> most_attended_words(std::span<const float> attention,
                                         std::span<const int32_t> word_of_target,
                                         std::span<const int32_t> word_of_source);

}  // namespace gf::data
