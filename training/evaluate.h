// Scoring a model on pairs whose answers are known. Decoding is never teacher-forced here:
// each output token comes from the model's own previous ones. Every function leaves the model
// as it found it (train or eval mode, attention recording, grad mode), so it may run in the
// middle of training without changing what training draws next.
#pragma once

#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "data/bleu.h"
#include "data/pair.h"
#include "data/sentence_pairs.h"
#include "data/tokenizer.h"
#include "data/word_alignment.h"
#include "models/decode.h"
#include "models/sample.h"
#include "models/transformer.h"

namespace gf::training {

struct DecodeSettings {
  int64_t beam = 1;             // 1: greedy; the paper uses 4 (§6.1)
  float length_penalty = 0.6f;  // alpha of the beam's length penalty (§6.1)
  bool early_stop = false;      // beam: BeamOptions::early_stop
  int64_t max_len = 0;          // most tokens per output; 0: source length + 50
  bool stop_at_eos = true;      // greedy: GreedyOptions::stop_at_eos
  int64_t batch = 64;           // sources decoded together
  // Sort the sources by length first (stable), so that each batch's padding and its longest
  // decode stay short; false: batches in input order.
  bool by_length = true;
};

// The output of each source (token ids without bos and eos), in input order.
std::vector<TokenIds> decode_corpus(Transformer& model,
                                    std::span<const std::vector<int32_t>> sources,
                                    const DecodeSettings& settings = {});

// The translation of each source text, in order. Throws Utf8Error for invalid UTF-8,
// std::invalid_argument naming the sentence for one longer than the model's max_len.
std::vector<std::string> translate_texts(Transformer& model, const data::Tokenizer& tokenizer,
                                         std::span<const std::string> sources,
                                         const DecodeSettings& settings = {});

// `count` texts sampled from a decoder-only model trained on text (models/sample.h), each the
// prompt and then its continuation, drawn from one generator seeded with seed: the same seed
// gives the same texts. Throws Utf8Error for a prompt that is not UTF-8, std::invalid_argument
// for one longer than the model's max_len - 1 tokens or options out of range, and
// std::logic_error for a model with an encoder.
std::vector<std::string> sample_texts(Transformer& model, const data::Tokenizer& tokenizer,
                                      const std::string& prompt, const SampleOptions& options,
                                      uint64_t seed, int64_t count = 1);

// One source as `transformer translate` and `decode` read a line: for a model trained on text
// (tokenizer given), text that the tokenizer encodes, then eos; for one trained on ids, ids
// separated by spaces, taken as they are (end them with eos, 2, as the tasks' sources do).
// Throws FormatError for a word that is not an id or an id outside the vocabulary, and
// std::invalid_argument for an empty source or one longer than the model's max_len.
std::vector<int32_t> read_source(const Transformer& model, const data::Tokenizer* tokenizer,
                                 const std::string& source);

// One source decoded as those commands decode it (read_source, then decode_corpus alone).
struct DecodedSource {
  std::vector<int32_t> src;  // as the encoder reads it
  std::vector<int32_t> tgt;  // bos, the output, eos: the pair to draw attention_maps with
  std::string output;        // what the command prints: the tokenizer's text, or the ids
};
DecodedSource decode_source(Transformer& model, const data::Tokenizer* tokenizer,
                            const std::string& source, const DecodeSettings& settings = {});

struct TranslationScores {
  data::BleuScore bleu;
  data::ChrfScore chrf;
  double exact = 0.0;  // the share of translations equal to their reference
  std::vector<std::string> hypotheses;
  std::vector<TokenIds> outputs;  // the ids each hypothesis was decoded from (no bos, no eos)
};

// Translates the sources of pairs and scores them against the targets. BLEU tokenizes with
// bleu_tokenize, or when it is empty with the tokenizer data::choose_bleu_tokenize picks for the
// targets (zh for Chinese: BLEU on characters).
TranslationScores score_translations(Transformer& model, const data::Tokenizer& tokenizer,
                                     std::span<const data::SentencePair> pairs,
                                     const DecodeSettings& settings = {},
                                     std::optional<data::BleuTokenize> bleu_tokenize = {});

// Whether a greedy output (without bos and eos) is the target [bos, ..., eos]: token for token,
// then the end. A target without eos (a pairs file may hold such targets, data/pairs_file.h)
// never taught the model where to stop, so its tokens need only come first.
bool decodes_to(const TokenIds& output, std::span<const int32_t> target, int32_t eos);

// The fraction of pairs whose greedy decoding reproduces the target (decodes_to).
double exact_match(Transformer& model, std::span<const data::Pair> pairs);

// log P(tgt[1:] | src, teacher forcing) = sum over t of log P(tgt[t+1] | src, tgt[0..t]), in
// nats: the model's own probabilities (dropout off, no smoothing). tgt starts with bos.
double log_likelihood(Transformer& model, std::span<const int32_t> src,
                      std::span<const int32_t> tgt);

// The perplexity of the targets of pairs: exp of the mean of -log P(token) over every target
// token (eos included, bos not: it is given), teacher forced, dropout off, no label smoothing.
// It is 1 when every next token is certain and the vocabulary size when the model guesses
// uniformly; like the paper's Table 3 it counts subword tokens, so two tokenizers of the same
// text give perplexities that do not compare. Pairs go through in consecutive batches of
// batch_size, which changes the sums' rounding only.
double perplexity(Transformer& model, std::span<const data::Pair> pairs, int64_t batch_size = 64);

// The same loss per character of text rather than per token, in bits: log2(perplexity) times
// the tokens, over the characters (code points) they spell. Unlike perplexity it compares models
// whose tokenizers differ, since the characters are the text's own.
double bits_per_character(double perplexity, int64_t tokens, int64_t characters);

// How unsure the model is of the next token: the mean, over the same target positions, of the
// entropy -sum_v p(v) log p(v) of its predicted distribution, in nats. 0 when every prediction
// is certain, log V when it is uniform. Label smoothing raises it: the model "learns to be more
// unsure" (§5.4). Teacher forced, dropout off; batches as in perplexity.
double prediction_entropy(Transformer& model, std::span<const data::Pair> pairs,
                          int64_t batch_size = 64);

// Whether every pair of file has a gold word alignment as its third column (the toy
// language's files), so that score_alignment can score it.
bool has_alignments(const data::SentencePairsFile& file);

// How well cross-attention finds the gold word alignment (data/word_alignment.h) on pairs whose
// third column is one: the reference target is fed with teacher forcing, and each target
// word's pooled attention in decoder layer `layer` (0-based; -1: the last), of head `head`
// (0-based; -1: the heads averaged), is compared with its aligned source word. Throws
// FormatError "NAME:LINE: ..." for a third column that is not an alignment,
// std::invalid_argument for a layer or head the model does not have.
data::AlignmentScore score_alignment(Transformer& model, const data::Tokenizer& tokenizer,
                                     const data::SentencePairsFile& file, int64_t layer = -1,
                                     int64_t head = -1);

}  // namespace gf::training
