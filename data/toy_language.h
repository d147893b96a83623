// A generated toy language pair with gold word alignments, for learning to translate in
// minutes on a CPU while knowing exactly what the model ought to attend to.
//
// The source is English-like subject-verb-object sentences:
//
//   the big red cat does not see some small dogs near my house .
//
// and the target language differs from it in the ways that make attention work for its keep:
//
//   miru roso grano lo  tavin pikoj unoj ka  domi mia pres  ne vido .
//   cat  red  big   the dogs  small some OBJ house my  near NOT sees
//
//   - the verb moves to the end of the sentence and agrees with the subject;
//   - every noun phrase is mirrored: the noun, then its adjectives in reverse, then the
//     determiner;
//   - determiners, adjectives and verbs take a suffix that agrees with the class (animate or
//     inanimate) and number of their noun: -o, -oj, -a, -aj;
//   - prepositions become postpositions, and the prepositional phrase moves before the verb;
//   - the object is marked by the particle "ka"; negation is the particle "ne" before the verb,
//     where English needs "does not" or "do not".
//
// Every generated pair carries its alignment: for each target word, the source word it
// translates ("ka" and the English "does"/"do" have no counterpart). The vocabulary is a few
// dozen words per side, so the whole language is in the tables of toy_language.cpp.
//
// Randomness comes only from gf::Rng::below, so a seed gives the same corpus with every
// standard library, and sets are ordered (std::set), never hashed.
#pragma once

#include <cstdint>
#include <filesystem>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "autograd/random.h"
#include "data/sentence_pairs.h"

namespace gf::data {

// One word-aligned sentence pair. alignment holds (source index, target index) pairs, sorted
// by target index, as in the Pharaoh format that word aligners write ("0-0 3-1 ...").
struct AlignedPair {
  std::vector<std::string> source;
  std::vector<std::string> target;
  std::vector<std::pair<int32_t, int32_t>> alignment;

  friend bool operator==(const AlignedPair&, const AlignedPair&) = default;
};

// The words joined by single spaces: how a pair is written to a file and fed to a tokenizer.
std::string join_words(const std::vector<std::string>& words);

// "0-0 3-1 2-2" <-> alignment pairs. parse_alignment throws std::invalid_argument naming the
// offending item for anything but space-separated "S-T" pairs of non-negative integers.
std::string alignment_text(const std::vector<std::pair<int32_t, int32_t>>& alignment);
std::vector<std::pair<int32_t, int32_t>> parse_alignment(std::string_view text);

// How train and test differ.
//   random:        one pool of distinct sentences, shuffled and cut into train, dev and test.
//   compositional: a few adjective-noun combinations never occur in train or dev; every test
//                  sentence contains at least one of them. Every word is seen in training, only
//                  the combination is new.
//   length:        train and dev sentences have at most length_threshold source words (the
//                  final "." included); test sentences have more.
enum class ToySplit { Random, Compositional, Length };

// "random" | "compositional" | "length"; throws std::invalid_argument listing the valid names.
ToySplit parse_toy_split(std::string_view name);
std::string toy_split_name(ToySplit split);

struct ToyLanguageConfig {
  ToySplit split = ToySplit::Random;
  int64_t train = 10000, dev = 500, test = 1000;  // sentence pairs per part
  int64_t length_threshold = 11;      // for ToySplit::Length; sentences have 6..17 words
  int64_t held_out_combinations = 8;  // for ToySplit::Compositional
};

// Throws std::invalid_argument naming the field and its allowed range.
void validate(const ToyLanguageConfig& config);

struct ToyCorpus {
  std::vector<AlignedPair> train, dev, test;
  // For the compositional split, the held-out combinations, e.g. "red cat"; empty otherwise.
  std::vector<std::string> held_out;
};

// One sentence pair drawn from the grammar (the building block of generate_toy_corpus).
AlignedPair generate_toy_pair(Rng& rng);

// A corpus of distinct sentence pairs (no source sentence occurs twice anywhere in it, so test
// sentences are unseen), split as the config says. Throws as validate() does, and
// std::runtime_error if the grammar cannot supply enough distinct sentences of a kind (which
// only happens for absurd sizes, e.g. a million sentences of at most 7 words).
ToyCorpus generate_toy_corpus(const ToyLanguageConfig& config, Rng& rng);

// Writes one pair per line: source, tab, target, tab, alignment, then \n. The first two
// columns are what any sentence-pair file holds; readers of plain pairs ignore the third.
// Atomic: a temporary file, then a rename. Throws std::runtime_error "cannot write PATH: ...".
void write_aligned_tsv(const std::filesystem::path& path, const std::vector<AlignedPair>& pairs);

// The pairs as a file of sentence pairs named `name` (no file is written): the words joined by
// spaces, the alignment as the third column, line k holding pair k. How the toy language
// reaches code written for files, such as training and the alignment score.
SentencePairsFile sentence_pairs_of(const std::vector<AlignedPair>& pairs, const std::string& name);

}  // namespace gf::data
