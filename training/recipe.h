// A recipe for real sentence pairs: the settings `transformer train --task translate` starts
// from, chosen for a corpus of thousands to tens of thousands of pairs and a laptop's CPU.
//
// The paper trained on 4.5 million sentence pairs (§5.1). With a few tens of thousands, its
// base settings overfit and train too slowly, and what is known to help in that regime
// (Sennrich and Zhang 2019, "Revisiting Low-Resource Neural Machine Translation"; Nguyen and
// Salazar 2019, "Transformers without Tears"; Araabi and Monz 2020, "Optimizing Transformer
// for Low-Resource Neural Machine Translation") is:
//   - a smaller byte-pair vocabulary, so that each subword is seen often enough to learn;
//   - a smaller model, and more dropout;
//   - pre-norm layers, which train at a high rate without diverging;
//   - a learning rate that does not depend on d_model, warmed up and then decayed to zero over
//     the steps the run can afford (cosine_lr), and label smoothing as in §5.4.
// Lesson 12 measures each of these choices against the alternatives.
#pragma once

#include <cstdint>
#include <optional>
#include <string>

#include "data/sentence_pairs.h"
#include "models/transformer.h"
#include "training/choices.h"

namespace gf::training {

// What the recipe looks at in the training pairs.
struct CorpusFacts {
  int64_t pairs = 0;
  int64_t words = 0;  // whitespace-separated, both sides
  int64_t distinct_words = 0;
  int64_t characters = 0;  // distinct code points, both sides
};
CorpusFacts corpus_facts(const data::SentencePairsFile& train);

struct TextRecipe {
  TransformerConfig model;  // vocab_size 0: the tokenizer's size
  TokenizerKind tokenizer = TokenizerKind::Bpe;
  int64_t vocab_size = 0;  // byte-pair vocabulary, specials and bytes included
  ScheduleKind schedule = ScheduleKind::Cosine;
  float peak_lr = 0.0f;  // for model.d_model; peak_lr_for gives it for another width
  int64_t warmup = 0;
  float label_smoothing = 0.0f;
  int64_t batch_tokens = 0;  // padded target tokens per batch (sentence pairs)
  int64_t batch = 0;         // windows of model.max_len tokens per batch (a language model)
  int64_t steps = 0;         // a language model's --steps; 0: the default 600
  int64_t average = 0;       // checkpoints averaged at the end of the run
  int64_t checks = 0;        // BLEU on the dev set this many times, keeping the best weights
};

// The recipe for a corpus of real text, or nothing for one of fewer than kRealTextWords
// distinct words (a toy language such as `transformer generate` writes), which the small model
// of the toy tasks learns in seconds. The byte-pair vocabulary grows with the square root of
// the corpus's words, on top of one token per character it holds (specials and bytes
// included).
inline constexpr int64_t kRealTextWords = 2000;
std::optional<TextRecipe> text_recipe(const CorpusFacts& facts);

// What the language-model recipe looks at in a text.
struct TextFacts {
  int64_t characters = 0;  // code points
  int64_t distinct_characters = 0;
  int64_t words = 0;  // data::split_words's words that hold a letter or a digit
};
TextFacts text_facts(const std::string& text);

// The recipe for next-token prediction on a text (`transformer train --task lm`), for a text of
// any size: a decoder-only model (models/transformer.h) of 4 pre-norm layers reading windows of
// 128 tokens, 16 of them a step for 1200 steps, its vocabulary grown with the text as the
// translation recipe's is, no label smoothing (its score is the dev perplexity, which smoothing
// raises), and 10 checks of the dev perplexity. Lesson 13 measures it against a bigram model.
TextRecipe lm_recipe(const TextFacts& facts);

// The recipe's peak learning rate for a model of width d_model: 2e-3 at 128, falling as
// 1/sqrt(d_model) as §5.3's schedule does: 1.4e-3 at 256, 1e-3 at 512 (the paper's base model
// peaks at 512^-0.5 * 4000^-0.5 = 7.0e-4, post-norm; pre-norm takes a higher rate).
float peak_lr_for(int64_t d_model);

}  // namespace gf::training
