// Text in, text out: what `train --task translate`, `translate` and `eval` share. A model reads
// and writes token ids; these functions put the tokenizer on either side, decode in batches,
// and score the output.
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "data/bleu.h"
#include "data/sentence_pairs.h"
#include "data/tokenizer.h"
#include "models/transformer.h"

namespace gf::cli {

struct DecodeSettings {
  int64_t beam = 1;             // 1: greedy; the paper uses 4 (§6.1)
  float length_penalty = 0.6f;  // alpha of the beam's length penalty (§6.1)
  int64_t batch = 64;           // sentences decoded together
};

// The translation of each source text, in order. Sentences are decoded in batches of similar
// length (less padding); the output order is the input's. Throws Utf8Error for invalid UTF-8,
// std::invalid_argument naming the sentence for one longer than the model's max_len.
std::vector<std::string> translate_texts(Transformer& model, const data::Tokenizer& tokenizer,
                                         std::span<const std::string> sources,
                                         const DecodeSettings& settings = {});

struct TranslationScores {
  data::BleuScore bleu;
  data::ChrfScore chrf;
  std::vector<std::string> hypotheses;
};

// Translates the sources of pairs (never teacher-forced: each output token comes from the
// model's own previous ones) and scores them against the targets.
TranslationScores score_translations(Transformer& model, const data::Tokenizer& tokenizer,
                                     std::span<const data::SentencePair> pairs,
                                     const DecodeSettings& settings = {});

}  // namespace gf::cli
