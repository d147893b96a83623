// Sentence pairs as a translation model sees them: token ids framed by <bos> and <eos>, and
// batches of pairs of similar length.
//
// Batching by length is §5.1's "sentence pairs were batched together by approximate sequence
// length": a batch is padded to its longest sentence, so mixing a 4-token and a 40-token
// sentence spends most of the batch's compute on padding. Sorting by length and cutting the
// sorted list into batches of about the same number of tokens wastes almost none; shuffling
// the pairs before the (stable) sort and the batches after it keeps every epoch different.
#pragma once

#include <cstdint>
#include <span>
#include <string_view>
#include <vector>

#include "autograd/random.h"
#include "data/pair.h"
#include "data/sentence_pairs.h"
#include "data/tokenizer.h"

namespace gf::data {

// src = encode(source) + [eos], tgt = [bos] + encode(target) + [eos] (pair.h). Throws
// Utf8Error for invalid UTF-8.
Pair encode_pair(const Tokenizer& tokenizer, std::string_view source, std::string_view target);

// encode_pair for every pair of a file. Throws FormatError "NAME:LINE: ..." naming the line
// of a pair that cannot be encoded.
std::vector<Pair> encode_pairs(const Tokenizer& tokenizer, const SentencePairsFile& file);

// One epoch of batches: each holds as many pairs as fit in max_tokens once padded (the pair
// count times its longest source or target, whichever is longer), and at least one pair.
// Every pair is in exactly one batch. Throws std::invalid_argument for max_tokens < 1.
std::vector<std::vector<Pair>> batches_by_length(std::span<const Pair> pairs, int64_t max_tokens,
                                                 Rng& rng);

}  // namespace gf::data
