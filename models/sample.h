// Sampling text from a decoder-only model (a language model): at each step the next token is
// drawn from the model's predicted distribution instead of taken as its most probable token,
// after three ways of reshaping that distribution:
//
//   temperature T   p(v) proportional to exp(logit(v) / T): below 1 sharper (T -> 0 is greedy),
//                   above 1 flatter (Ackley, Hinton and Sejnowski 1985; the softmax's T);
//   top-k           only the k most probable tokens keep their probability (Fan, Lewis and
//                   Dauphin 2018, "Hierarchical Neural Story Generation");
//   top-p           only the smallest set of most probable tokens whose probabilities sum to at
//                   least p, the "nucleus" (Holtzman et al. 2020, "The Curious Case of Neural
//                   Text Degeneration").
//
// The kept probabilities are renormalised to sum to 1. The three compose in that order, as in
// Hugging Face's generate. Lesson 13 measures what each does to the samples' entropy and
// repetition.
//
// A decoder-only model reads sequences that start with bos (the windows it was trained on do:
// data/text_windows.h), so a context is bos and then the prompt. Generation runs incrementally
// with the key/value cache of models/decode.h. When the context fills the model's max_len
// positions, it slides: the cache is rebuilt from bos and the newest half of the tokens, in one
// pass, and generation goes on from there.
#pragma once

#include <cstdint>
#include <span>
#include <vector>

#include "autograd/random.h"
#include "models/decode.h"
#include "models/transformer.h"

namespace gf {

struct SampleOptions {
  int64_t length = 200;      // tokens to generate after the prompt
  float temperature = 1.0f;  // > 0; see above (greedy decoding is a separate function)
  int64_t top_k = 0;         // 0: every token
  float top_p = 1.0f;        // in (0, 1]; 1: every token
  bool stop_at_eos = true;   // a row stops when it draws eos (a language model rarely does)

  // Throws std::invalid_argument naming the first option out of range.
  void validate() const;
};

// The distribution sampling draws from for one position's logits [V]: the softmax at the
// temperature, then top-k, then top-p, renormalised. Probabilities of the tokens left out are
// exactly 0. Ties at the cut of top-k keep the lower ids.
std::vector<float> sampling_distribution(std::span<const float> logits,
                                         const SampleOptions& options);

// The index drawn from probabilities that sum to 1: the first whose running sum exceeds one
// uniform draw of rng (one draw per call).
int32_t draw_token(std::span<const float> probabilities, Rng& rng);

// `count` continuations of prompt (token ids, without bos) sampled from a decoder-only model,
// each the generated ids without bos or eos. Rows are drawn together in one batch, each row
// drawing from rng in turn at every step, so the same seed gives the same samples at any
// thread count. Runs in eval mode without a tape. Throws std::logic_error for a model with an
// encoder, std::invalid_argument for options out of range or a prompt longer than max_len - 1,
// IndexError for an id outside the vocabulary.
std::vector<TokenIds> sample(Transformer& model, std::span<const int32_t> prompt,
                             const SampleOptions& options, Rng& rng, int64_t count = 1);

}  // namespace gf
