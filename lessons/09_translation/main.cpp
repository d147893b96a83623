// Lesson 09: toy translation.
//
// Can the model of lessons 02-08 learn to translate, and can we see how? The toy language of
// data/toy_language.h has the hard parts of a real language pair in miniature (the verb moves
// to the end, noun phrases are mirrored, words take agreement suffixes) and comes with gold word
// alignments, so we know what the model ought to attend to. The program learns one BPE
// vocabulary for both languages (§5.1) and ties the embeddings to it (§3.4), trains on the
// random split, decodes the test split greedily and with beam search (§6.1), scores BLEU and
// chrF, scores the cross-attention against the gold alignments and draws it, trains on the
// compositional and the length splits to see what the model does not learn, and finally writes
// the random split's run as a page to open in a browser.
// README.md is the text that walks through this file. Every claim is checked; a failed check
// makes the program exit with 1.
//
// main(), at the end, is the table of contents: it calls the sections in the order of
// README.md, and they are defined above it in the same order.
//
// Shape legend: B batch, S source length, T target length, D d_model, H heads, V vocabulary.
#include <fmt/format.h>
#include <fmt/ranges.h>

#include <CLI/CLI.hpp>
#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdint>
#include <exception>
#include <filesystem>
#include <functional>
#include <map>
#include <memory>
#include <numeric>
#include <set>
#include <span>
#include <string>
#include <vector>

#include "autograd/graph.h"
#include "autograd/random.h"
#include "autograd/tensor.h"
#include "data/batch.h"
#include "data/batch_source.h"
#include "data/bleu.h"
#include "data/pair.h"
#include "data/parallel_corpus.h"
#include "data/tokenizer.h"
#include "data/toy_language.h"
#include "data/word_alignment.h"
#include "lessons/lesson.h"
#include "models/decode.h"
#include "models/transformer.h"
#include "nn/optim.h"
#include "training/evaluate.h"
#include "training/loop.h"
#include "training/run_page.h"
#include "training/trainer.h"
#include "viz/heatmap.h"
#include "viz/line_plot.h"
#include "viz/png.h"
#include "viz/run_page.h"

using namespace gf;
using namespace gf::lessons;

namespace {

// Everything a run is made of; --quick shrinks it.
struct Setup {
  bool quick = false;
  int64_t train_pairs = 0, test_pairs = 0;  // per split
  int32_t vocab_size = 0;                   // the shared BPE vocabulary
  TransformerConfig model;
  int64_t steps = 0;        // on the random split
  int64_t split_steps = 0;  // on the compositional and length splits
  int64_t batch_tokens = 0, warmup = 0;
  float factor = 0.0f;  // multiplies eq. 3's rate (§5.3)
  float label_smoothing = 0.1f;
  int64_t page_dev_pairs = 0;  // whose BLEU the run's page follows through training (section 6)
};

// The corpus and the model of the README's full run, and the smaller ones of --quick.
Setup make_setup(bool quick) {
  Setup s;
  s.quick = quick;
  s.train_pairs = quick ? 800 : 10000;
  s.test_pairs = quick ? 60 : 500;
  s.vocab_size = 170;
  s.model = {.vocab_size = 0,  // set from the tokenizer
             .d_model = quick ? 32 : 64,
             .d_ff = quick ? 64 : 256,
             .heads = quick ? 2 : 4,
             .encoder_layers = quick ? 1 : 2,
             .decoder_layers = quick ? 1 : 2,
             .max_len = 128,
             .dropout = 0.0f,
             .tied = true};
  s.steps = quick ? 150 : 700;
  s.split_steps = quick ? 60 : 350;
  s.batch_tokens = quick ? 600 : 2000;
  s.warmup = quick ? 20 : 200;
  s.factor = quick ? 1.0f : 0.5f;
  // All 50 dev pairs; --quick's barely trained model decodes long outputs, so only 10 there.
  s.page_dev_pairs = quick ? 10 : 50;
  return s;
}

// Plumbing of several sections, defined at the end of the file.
std::vector<std::string> sources_of(std::span<const data::AlignedPair> pairs);  // as text
std::vector<std::string> targets_of(std::span<const data::AlignedPair> pairs);
// Adjacent target words aligned to adjacent source words in the opposite order.
int64_t mirrored_neighbours(const data::AlignedPair& p);
// The (adjective, noun) source positions of the held-out combinations in p.
std::vector<std::pair<int32_t, int32_t>> held_out_in(const data::AlignedPair& p,
                                                     const std::vector<std::string>& held_out);
// The test sentence of 8 to 12 words with the most mirrored neighbours, with or without a
// prepositional phrase: section 4 draws both, and the run's page follows the first.
size_t drawn_sentence(const data::ToyCorpus& corpus, bool prepositional);

// ---- 1. The toy language ----

struct Corpora {
  data::ToyCorpus random, compositional, length;
};

// Helpers of this section, below it.
bool reorders(const data::AlignedPair& p);
void print_aligned(const data::AlignedPair& p);

Corpora the_toy_language(const Setup& s, uint64_t seed, Checks& check) {
  banner("1. The toy language");
  // [snippet: corpora]
  const auto corpus = [&](data::ToySplit split) {
    Rng rng(seed);
    return data::generate_toy_corpus(
        {.split = split, .train = s.train_pairs, .dev = 50, .test = s.test_pairs}, rng);
  };
  Corpora c{.random = corpus(data::ToySplit::Random),
            .compositional = corpus(data::ToySplit::Compositional),
            .length = corpus(data::ToySplit::Length)};
  // [/snippet]

  // Three examples: long mirrored noun phrases, a negation, and a postposition.
  const auto& train = c.random.train;
  const auto find = [&](const std::function<bool(const data::AlignedPair&)>& wanted) {
    for (const data::AlignedPair& p : train)
      if (wanted(p)) return p;
    return train.front();
  };
  const auto has = [](const std::vector<std::string>& words, const std::string& w) {
    return std::find(words.begin(), words.end(), w) != words.end();
  };
  const data::AlignedPair mirrored = find([&](const data::AlignedPair& p) {
    return mirrored_neighbours(p) >= 3 && has(p.target, "ka") && p.source.size() <= 12;
  });
  print_aligned(mirrored);
  print_aligned(find([&](const data::AlignedPair& p) {
    return has(p.source, "not") && p.source.size() <= 11 && !(p == mirrored);
  }));
  print_aligned(find([&](const data::AlignedPair& p) {
    return has(p.source, "near") && !has(p.source, "not") && p.source.size() <= 10;
  }));

  int64_t reordered = 0, ka = 0, ka_unaligned = 0;
  for (const data::AlignedPair& p : train) {
    reordered += reorders(p);
    for (size_t t = 0; t < p.target.size(); ++t)
      if (p.target[t] == "ka") {
        ++ka;
        ka_unaligned += std::none_of(p.alignment.begin(), p.alignment.end(), [&](const auto& a) {
          return a.second == static_cast<int32_t>(t);
        });
      }
  }
  const double reordered_share = static_cast<double>(reordered) / static_cast<double>(train.size());
  check(reordered_share > 0.95,
        fmt::format("{:.1f}% of the {} training pairs need reordering (their alignment crosses)",
                    100 * reordered_share, train.size()));
  check(ka > 0 && ka_unaligned == ka,
        fmt::format("the object particle \"ka\" ({} times) is aligned to no source word", ka));

  std::set<std::string> train_sources;
  for (const std::string& src : sources_of(train)) train_sources.insert(src);
  int64_t seen = 0;
  for (const std::string& src : sources_of(c.random.test)) seen += train_sources.count(src);
  check(seen == 0, fmt::format("random split: none of the {} test sentences occurs in training",
                               c.random.test.size()));

  int64_t train_with = 0, test_with = 0;
  for (const data::AlignedPair& p : c.compositional.train)
    train_with += !held_out_in(p, c.compositional.held_out).empty();
  for (const data::AlignedPair& p : c.compositional.test)
    test_with += !held_out_in(p, c.compositional.held_out).empty();
  fmt::print("  compositional split, held-out adjective-noun pairs: {}\n",
             fmt::join(c.compositional.held_out, ", "));
  check(train_with == 0 && test_with == static_cast<int64_t>(c.compositional.test.size()),
        "compositional split: no training sentence holds a held-out pair, every test sentence "
        "holds one");

  size_t longest_train = 0, shortest_test = 1000;
  for (const data::AlignedPair& p : c.length.train)
    longest_train = std::max(longest_train, p.source.size());
  for (const data::AlignedPair& p : c.length.test)
    shortest_test = std::min(shortest_test, p.source.size());
  check(longest_train < shortest_test,
        fmt::format("length split: training sentences have at most {} source words, test "
                    "sentences at least {}",
                    longest_train, shortest_test));
  return c;
}

// Whether the source words of the target words, read left to right, ever go backwards.
bool reorders(const data::AlignedPair& p) {
  for (size_t i = 1; i < p.alignment.size(); ++i)
    if (p.alignment[i].first < p.alignment[i - 1].first) return true;
  return false;
}

// The pair written as two lines, each target word above the source word it translates.
void print_aligned(const data::AlignedPair& p) {
  fmt::print("  source: {}\n  target: {}\n", data::join_words(p.source),
             data::join_words(p.target));
  std::vector<std::string> from(p.target.size(), "-");
  for (const auto& [s, t] : p.alignment)
    from[static_cast<size_t>(t)] = p.source[static_cast<size_t>(s)];
  std::string top = "    target word  ", bottom = "    translates   ";
  for (size_t t = 0; t < p.target.size(); ++t) {
    const size_t width = std::max(p.target[t].size(), from[t].size()) + 1;
    top += fmt::format("{:<{}}", p.target[t], width);
    bottom += fmt::format("{:<{}}", from[t], width);
  }
  fmt::print("{}\n{}\n  alignment (source-target): {}\n\n", top, bottom,
             data::alignment_text(p.alignment));
}

// ---- 2. One vocabulary for both languages ----

// [snippet: shared-vocabulary]
// §5.1: "a shared source-target vocabulary". The merges are learned from the sentences of both
// languages at once, so one id means one piece of text whichever side it comes from.
data::BpeTokenizer shared_bpe(const data::ToyCorpus& corpus, int32_t vocab_size) {
  std::vector<std::string> texts = sources_of(corpus.train);
  for (const std::string& t : targets_of(corpus.train)) texts.push_back(t);
  return data::BpeTokenizer::learn(texts, {.vocab_size = vocab_size, .byte_fallback = false});
}
// [/snippet]

std::string pieces(const data::Tokenizer& tokenizer, const std::string& text) {
  std::vector<std::string> labels;
  for (const int32_t id : tokenizer.encode(text)) labels.push_back(tokenizer.label(id));
  return fmt::format("{}", fmt::join(labels, " | "));
}

data::BpeTokenizer one_vocabulary(const Setup& s, const data::ToyCorpus& corpus, Checks& check) {
  banner("2. One vocabulary for both languages");
  const data::BpeTokenizer bpe = shared_bpe(corpus, s.vocab_size);
  const std::vector<data::BpeMerge>& merges = bpe.merges();
  fmt::print("  BPE vocabulary: {} ids = 4 specials + {} characters + {} merges\n", bpe.size(),
             bpe.size() - 4 - static_cast<int32_t>(merges.size()), merges.size());
  fmt::print("  the first merges:");
  for (size_t m = 0; m < std::min<size_t>(12, merges.size()); ++m)
    fmt::print("{}{} + {} -> {}", m % 4 == 0 ? "\n    " : "   ", bpe.label(merges[m].left),
               bpe.label(merges[m].right), bpe.label(merges[m].result));
  fmt::print("\n\n");

  // How target words split: the stem, then the agreement suffix as a piece of its own.
  std::map<std::string, int64_t> words;  // target word types -> occurrences
  for (const data::AlignedPair& p : corpus.train)
    for (const std::string& w : p.target) ++words[w];
  std::map<std::string, int64_t> last_piece;  // the final piece of words of 2+ pieces
  int64_t split_words = 0;
  for (const auto& [w, n] : words) {
    const std::vector<int32_t> ids = bpe.encode(" " + w);
    if (ids.size() < 2) continue;
    ++split_words;
    ++last_piece[bpe.label(ids.back())];
  }
  for (const std::string w :
       {"tavin", "baurin", "pikoj", "pikaj", "granoj", "grano", "porto", "unaj"})
    fmt::print("  {:<8} -> {}\n", w, pieces(bpe, " " + w));
  std::vector<std::pair<int64_t, std::string>> ranked;
  for (const auto& [piece, n] : last_piece) ranked.emplace_back(n, piece);
  std::sort(ranked.rbegin(), ranked.rend());
  fmt::print("\n  {} of the {} target word forms split into pieces; their most common last pieces:",
             split_words, words.size());
  for (size_t i = 0; i < std::min<size_t>(6, ranked.size()); ++i)
    fmt::print(" {} ({})", ranked[i].second, ranked[i].first);
  fmt::print("\n");
  int64_t suffix_ends = 0;
  for (const std::string suffix : {"o", "oj", "a", "aj", "n"})
    suffix_ends += last_piece.count(suffix) ? last_piece.at(suffix) : 0;
  check(suffix_ends * 2 > split_words,
        fmt::format("most split target words ({} of {}) end in a suffix piece -o, -oj, -a, -aj "
                    "or -n: a stem is learned once for all its forms",
                    suffix_ends, split_words));

  // Which ids the two languages share.
  std::set<int32_t> source_ids, target_ids;
  for (const std::string& t : sources_of(corpus.train))
    for (const int32_t id : bpe.encode(t)) source_ids.insert(id);
  for (const std::string& t : targets_of(corpus.train))
    for (const int32_t id : bpe.encode(t)) target_ids.insert(id);
  std::vector<std::string> both;
  for (const int32_t id : source_ids)
    if (target_ids.count(id)) both.push_back(bpe.label(id));
  fmt::print("\n  ids used by the source: {}, by the target: {}, by both: {} ({}{})\n",
             source_ids.size(), target_ids.size(), both.size(),
             fmt::join(both.begin(), both.begin() + std::min<long>(14, std::ssize(both)), " "),
             both.size() > 14 ? " ..." : "");
  return bpe;
}

// Mean and largest tokens per sentence, over both sides of the pairs.
std::pair<double, size_t> lengths(const data::Tokenizer& tokenizer,
                                  std::span<const std::string> texts) {
  size_t total = 0, longest = 0;
  for (const std::string& t : texts) {
    const size_t n = tokenizer.encode(t).size();
    total += n;
    longest = std::max(longest, n);
  }
  return {static_cast<double>(total) / static_cast<double>(texts.size()), longest};
}

// Vocabulary size against sequence length, three ways, and BPE's round trip.
void three_tokenizers(const data::BpeTokenizer& bpe, const data::ToyCorpus& corpus, Checks& check) {
  std::vector<std::string> texts = sources_of(corpus.train);
  for (const std::string& t : targets_of(corpus.train)) texts.push_back(t);
  const data::WordTokenizer word = data::WordTokenizer::learn(texts);
  const data::CharTokenizer chars = data::CharTokenizer::learn(texts, {.byte_fallback = false});
  fmt::print("\n  {:<10} {:>10} {:>16} {:>16}\n", "tokenizer", "vocabulary", "tokens/sentence",
             "longest sentence");
  const auto [word_mean, word_max] = lengths(word, texts);
  const auto [bpe_mean, bpe_max] = lengths(bpe, texts);
  const auto [char_mean, char_max] = lengths(chars, texts);
  fmt::print("  {:<10} {:>10} {:>16.1f} {:>16}\n", "word", word.size(), word_mean, word_max);
  fmt::print("  {:<10} {:>10} {:>16.1f} {:>16}\n", "BPE", bpe.size(), bpe_mean, bpe_max);
  fmt::print("  {:<10} {:>10} {:>16.1f} {:>16}\n", "character", chars.size(), char_mean, char_max);
  check(word.size() > bpe.size() && bpe.size() > chars.size() && word_mean < bpe_mean &&
            bpe_mean < char_mean,
        "BPE sits between words and characters: fewer ids than words, shorter sequences than "
        "characters");

  int64_t round_trips = 0, texts_checked = 0;
  for (const auto* part : {&corpus.train, &corpus.test})
    for (const data::AlignedPair& p : *part)
      for (const std::string& t : {data::join_words(p.source), data::join_words(p.target)}) {
        round_trips += bpe.decode(bpe.encode(t)) == t;
        ++texts_checked;
      }
  check(round_trips == texts_checked,
        fmt::format("decode(encode(s)) == s for all {} train and test sentences", texts_checked));
}

// What tying saves (§3.4: one matrix for the source embedding, the target embedding and the
// output projection).
void tied_embeddings(TransformerConfig config, Checks& check) {
  Rng rng(1);
  const Transformer tied(config, rng);
  config.tied = false;
  const Transformer untied(config, rng);
  const int64_t saved = untied.parameter_count() - tied.parameter_count();
  fmt::print("\n  parameters with V = {}, D = {}: tied {}, untied {} (saves {} = 2 V D)\n",
             config.vocab_size, config.d_model, tied.parameter_count(), untied.parameter_count(),
             saved);
  check(saved == 2 * config.vocab_size * config.d_model && tied.embed && !tied.src_embed &&
            !tied.generator,
        "tying keeps one [V, D] matrix where the untied model has three");
}

// ---- 3. Training and decoding ----

struct Trained {
  std::unique_ptr<Transformer> model;
  std::vector<float> losses;
  double seconds = 0;
};

// [snippet: train]
// Teacher forcing with label smoothing (§5.4), Adam with the warm-up schedule of eq. 3 (§5.3),
// and batches of pairs of similar length (§5.1). after_step(step, loss, model) may look on.
Trained train(const Setup& s, const TransformerConfig& config, std::span<const data::Pair> pairs,
              int64_t steps, uint64_t seed,
              const std::function<void(int64_t, float, Transformer&)>& after_step = {}) {
  const auto start = std::chrono::steady_clock::now();
  Rng rng(seed);
  Trained t{.model = std::make_unique<Transformer>(config, rng), .losses = {}, .seconds = 0};
  Transformer& model = *t.model;
  // The generator that drew the weights goes on to draw the batches of each epoch.
  data::BatchSource batches =
      data::BatchSource::by_length({pairs.begin(), pairs.end()}, s.batch_tokens, rng);
  training::Trainer trainer(nn::Optimizer(model.named_parameters(), nn::AdamConfig{}),
                            training::noam(config.d_model, s.warmup, s.factor));
  training::run(
      trainer, [&] { return batches.next(); },
      [&](const data::Batch& batch) {
        return training::teacher_forced_loss(model, batch, s.label_smoothing);
      },
      steps, {.after_step = [&](const training::StepRecord& r) {
        t.losses.push_back(r.result.loss);
        if (after_step) after_step(r.result.step, r.result.loss, model);
      }});
  t.seconds = seconds_since(start);
  return t;
}
// [/snippet]

// [snippet: translate]
// The test sentences decoded 64 at a time, in their order: greedily (beam 1), or by beam search
// with §6.1's beam size 4 and length penalty alpha (0.6 in the paper). score_translations turns
// the output ids back into text and scores it against the references: BLEU, chrF, exact share.
training::TranslationScores translate(Transformer& model, const data::Tokenizer& tokenizer,
                                      const data::SentencePairsFile& test, int64_t beam,
                                      float alpha = 0.6f, bool early_stop = false) {
  return training::score_translations(model, tokenizer, test.pairs,
                                      {.beam = beam,
                                       .length_penalty = alpha,
                                       .early_stop = early_stop,
                                       .batch = 64,
                                       .by_length = false});
}
// [/snippet]

// [snippet: score]
// How beam search ranks an output: log P(tokens, then eos | source), the sum of each token's
// log-probability given those before it, divided by the length penalty
// lp = ((5 + length) / 6)^alpha of Wu et al. (2016), the length counting eos.
double beam_score(Transformer& model, const std::vector<int32_t>& src, const TokenIds& tokens,
                  float alpha) {
  std::vector<int32_t> tgt = {model.config.bos_id};  // <s> tokens </s>
  tgt.insert(tgt.end(), tokens.begin(), tokens.end());
  tgt.push_back(model.config.eos_id);
  const double length = static_cast<double>(tokens.size() + 1);  // with eos
  return training::log_likelihood(model, src, tgt) / std::pow((5.0 + length) / 6.0, alpha);
}
// [/snippet]

struct RandomRun {
  Trained trained;
  double bleu_at_split_budget = 0;  // greedy test BLEU after split_steps, for section 5
  training::PageHistory history;    // snapshots and dev BLEU through training, for section 6
};

// What the run's page (section 6) follows through training: the attention of section 4's first
// sentence and greedy BLEU on the dev pairs, at step 0 and 19 more steps evenly spaced.
training::PageRecorder page_recorder(const Setup& s, const TransformerConfig& config,
                                     const data::Tokenizer& tokenizer,
                                     const data::ToyCorpus& corpus, uint64_t seed) {
  const data::AlignedPair& p = corpus.test[drawn_sentence(corpus, false)];
  const data::Pair pair =
      data::encode_pair(tokenizer, data::join_words(p.source), data::join_words(p.target));
  const auto n = std::min<std::ptrdiff_t>(std::ssize(corpus.dev), s.page_dev_pairs);
  const std::vector<data::AlignedPair> dev_pairs(corpus.dev.begin(), corpus.dev.begin() + n);
  auto dev =
      std::make_shared<const data::SentencePairsFile>(data::sentence_pairs_of(dev_pairs, "dev"));
  training::PageRecorder recorder(
      pair, training::token_names(&tokenizer, config),
      {.name = fmt::format("BLEU, greedy, {} dev pairs", dev->pairs.size()),
       .score =
           [&tokenizer, dev](Transformer& m) {
             return translate(m, tokenizer, *dev, 1).bleu.score;
           }},
      s.steps, 20);
  // train() draws its initial weights first from Rng(seed), so this model has them: step 0.
  Rng rng(seed);
  Transformer initial(config, rng);
  recorder.at_step(initial, 0);
  return recorder;
}

// The test set translated greedily and with beam search (beam 4, alpha 0.6).
struct TestTranslations {
  training::TranslationScores greedy, beam;
};

TestTranslations decoding_and_bleu(const Setup& s, Transformer& model,
                                   const data::Tokenizer& tokenizer, const data::ToyCorpus& corpus,
                                   const data::SentencePairsFile& test, Checks& check);
void where_beam_and_greedy_differ(const Setup& s, Transformer& model,
                                  const data::Tokenizer& tokenizer, const data::ToyCorpus& corpus,
                                  const data::SentencePairsFile& test,
                                  const training::TranslationScores& greedy,
                                  const training::TranslationScores& beam, Checks& check);

// The lowest loss label smoothing allows (§5.4): the smoothed target keeps 1 - eps + eps/V on
// the right token and eps/V on each of the others, and the cross-entropy against a target is
// never below the target's own entropy.
double smoothed_target_entropy(double eps, int64_t vocab_size) {
  const double v = static_cast<double>(vocab_size), right = 1.0 - eps + eps / v, other = eps / v;
  return -(right * std::log(right) + (v - 1.0) * other * std::log(other));
}

RandomRun train_and_decode(const Setup& s, const TransformerConfig& config,
                           const data::Tokenizer& tokenizer, const data::ToyCorpus& corpus,
                           uint64_t seed, const std::string& out_dir, Checks& check) {
  banner("3. Training, greedy decoding and beam search");
  const std::vector<data::Pair> train_pairs =
      data::encode_pairs(tokenizer, data::sentence_pairs_of(corpus.train, "train"));
  const data::SentencePairsFile test = data::sentence_pairs_of(corpus.test, "test");
  RandomRun run;
  const auto recording = std::chrono::steady_clock::now();
  training::PageRecorder recorder = page_recorder(s, config, tokenizer, corpus, seed);
  double page_seconds = seconds_since(recording);  // what recording the page's history costs
  double looking = 0;  // seconds spent measuring during training, which its speed leaves out
  run.trained =
      train(s, config, train_pairs, s.steps, seed, [&](int64_t step, float loss, Transformer& m) {
        const auto start = std::chrono::steady_clock::now();
        if (step % (s.steps / 7) == 0 || step == s.steps)
          fmt::print("  step {:>4}  loss {:.3f}\n", step, loss);
        if (step == s.split_steps)
          run.bleu_at_split_budget = translate(m, tokenizer, test, 1).bleu.score;
        const auto recording_step = std::chrono::steady_clock::now();
        if (recorder.at_step(m, step)) page_seconds += seconds_since(recording_step);
        looking += seconds_since(start);
      });
  run.history = recorder.history();
  run.history.checking_seconds = page_seconds;
  run.history.training_seconds = run.trained.seconds - looking;
  const Trained& t = run.trained;
  fmt::print("  trained {} steps of about {} tokens in {:.1f} s ({} parameters)\n", s.steps,
             s.batch_tokens, t.seconds, t.model->parameter_count());
  check(t.losses.back() < 0.5f * t.losses.front(),
        fmt::format("the training loss fell from {:.2f} to {:.2f}", t.losses.front(),
                    t.losses.back()));
  const double floor = smoothed_target_entropy(s.label_smoothing, config.vocab_size);
  const int64_t tail = std::min<int64_t>(50, std::ssize(t.losses));
  const double tail_loss =
      std::accumulate(t.losses.end() - tail, t.losses.end(), 0.0) / static_cast<double>(tail);
  fmt::print("  the loss cannot go below the entropy of the smoothed target: {:.3f} nats\n", floor);
  if (!s.quick)
    check(tail_loss < floor + 0.05,
          fmt::format("the loss of the last {} steps ({:.3f}) is within 0.05 of that floor", tail,
                      tail_loss));

  const TestTranslations decoded = decoding_and_bleu(s, *t.model, tokenizer, corpus, test, check);
  where_beam_and_greedy_differ(s, *t.model, tokenizer, corpus, test, decoded.greedy, decoded.beam,
                               check);

  const std::string path = out_dir + "/loss.png";
  viz::write_png(viz::line_plot({{.name = "training loss (label smoothing 0.1)", .ys = t.losses}},
                                {.title = "random split: training loss",
                                 .y_label = "cross-entropy (log scale)",
                                 .log_y = true}),
                 path);
  fmt::print("  wrote {}\n", path);
  return run;
}

// The test set translated greedily and with beam 4, scored, timed and shown.
TestTranslations decoding_and_bleu(const Setup& s, Transformer& model,
                                   const data::Tokenizer& tokenizer, const data::ToyCorpus& corpus,
                                   const data::SentencePairsFile& test, Checks& check) {
  const std::vector<std::string> references = targets_of(corpus.test);
  const auto start = std::chrono::steady_clock::now();
  const training::TranslationScores greedy = translate(model, tokenizer, test, 1);
  const double greedy_seconds = seconds_since(start);
  const training::TranslationScores beam = translate(model, tokenizer, test, 4);
  const double beam_seconds = seconds_since(start) - greedy_seconds;
  fmt::print("\n  on the {} test pairs:\n", references.size());
  fmt::print("  greedy   {}\n           chrF {:.1f}, exact {:.1f}%, {:.1f} s\n",
             greedy.bleu.to_string(), greedy.chrf.score, 100 * greedy.exact, greedy_seconds);
  fmt::print("  beam 4   {}\n           chrF {:.1f}, exact {:.1f}%, {:.1f} s\n",
             beam.bleu.to_string(), beam.chrf.score, 100 * beam.exact, beam_seconds);
  double mean_sentence_bleu = 0;
  for (size_t i = 0; i < references.size(); ++i)
    mean_sentence_bleu += data::sentence_bleu(greedy.hypotheses[i], references[i]).score;
  mean_sentence_bleu /= static_cast<double>(references.size());
  fmt::print("  (the mean of the greedy sentence BLEUs would be {:.2f}: not corpus BLEU)\n",
             mean_sentence_bleu);
  const double best_bleu = std::max(greedy.bleu.score, beam.bleu.score);
  if (s.quick)
    check(std::isfinite(best_bleu) && best_bleu >= 0,
          fmt::format("--quick: BLEU is computed ({:.1f}); the full run asserts >= 95", best_bleu));
  else
    check(best_bleu >= 95.0,
          fmt::format("test BLEU {:.2f} (greedy {:.2f}, beam {:.2f}) is at least 95", best_bleu,
                      greedy.bleu.score, beam.bleu.score));

  fmt::print("\n  a few test translations (greedy):\n");
  for (size_t i = 0; i < 3; ++i)
    fmt::print("    source     {}\n    reference  {}\n    greedy     {}\n\n",
               data::join_words(corpus.test[i].source), references[i], greedy.hypotheses[i]);
  return {.greedy = greedy, .beam = beam};
}

// Where a beam's output differs from greedy's, which one the model scores higher, when the beam
// stops early and when it goes on; then the length penalty alpha.
void where_beam_and_greedy_differ(const Setup& s, Transformer& model,
                                  const data::Tokenizer& tokenizer, const data::ToyCorpus& corpus,
                                  const data::SentencePairsFile& test,
                                  const training::TranslationScores& greedy,
                                  const training::TranslationScores& beam, Checks& check) {
  const std::vector<data::Pair> test_pairs = data::encode_pairs(tokenizer, test);
  const std::vector<std::string> references = targets_of(corpus.test);
  struct Differences {
    int64_t differ = 0, beam_right = 0, greedy_right = 0, beam_higher = 0, cut_short = 0;
  };
  const auto compare = [&](const training::TranslationScores& other, bool show) {
    const std::vector<TokenIds>& ids = other.outputs;
    const std::vector<TokenIds>& greedy_ids = greedy.outputs;
    const std::vector<std::string>& out = other.hypotheses;
    const std::vector<std::string>& greedy_out = greedy.hypotheses;
    Differences d;
    for (size_t i = 0; i < greedy_out.size(); ++i) {
      if (greedy_out[i] == out[i]) continue;
      const double greedy_score = beam_score(model, test_pairs[i].src, greedy_ids[i], 0.6f);
      const double beam_found = beam_score(model, test_pairs[i].src, ids[i], 0.6f);
      d.beam_higher += beam_found > greedy_score;
      d.cut_short += beam_found < greedy_score && ids[i].size() < greedy_ids[i].size();
      d.beam_right += out[i] == references[i];
      d.greedy_right += greedy_out[i] == references[i];
      if (show && d.differ < 3)
        fmt::print(
            "    source     {}\n    reference  {}\n    greedy     {}   (score {:.3f})\n"
            "    beam       {}   (score {:.3f})\n\n",
            data::join_words(corpus.test[i].source), references[i], greedy_out[i], greedy_score,
            out[i], beam_found);
      ++d.differ;
    }
    fmt::print(
        "  beam and greedy differ on {} of {} sentences. There the beam's output is exact {} "
        "times, greedy's {} times;\n  the beam's output scores higher {} times, and is shorter "
        "and scores lower {} times\n",
        d.differ, greedy_out.size(), d.beam_right, d.greedy_right, d.beam_higher, d.cut_short);
    return d;
  };
  // The quick stopping rule: done as soon as 4 hypotheses have emitted eos.
  const training::TranslationScores early = translate(model, tokenizer, test, 4, 0.6f, true);
  fmt::print("\n  beam 4 stopping as soon as 4 hypotheses have finished (early_stop):\n");
  fmt::print("  {}\n\n", early.bleu.to_string());
  const Differences quick = compare(early, true);
  if (!s.quick)
    check(quick.differ > 0 && 2 * quick.cut_short > quick.differ,
          "stopping early, where beam and greedy differ the beam's output is mostly shorter and "
          "scores LOWER than greedy's: the search missed a translation it would rank higher");
  fmt::print("\n  beam 4 going on while a hypothesis still alive scores better (the default):\n");
  const Differences patient = compare(beam, false);
  if (!s.quick)
    check(patient.cut_short < quick.cut_short,
          fmt::format("going on, the beam loses a better translation on {} sentences instead of "
                      "{}",
                      patient.cut_short, quick.cut_short));

  fmt::print("\n  beam 4 and the length penalty alpha, test BLEU:");
  for (const float alpha : {0.0f, 0.6f, 1.0f, 2.0f}) {
    const data::BleuScore b = translate(model, tokenizer, test, 4, alpha).bleu;
    fmt::print("  alpha {:.1f}: {:.2f} (length ratio {:.3f})", alpha, b.score,
               static_cast<double>(b.hypothesis_length) / static_cast<double>(b.reference_length));
  }
  fmt::print("\n");
}

// ---- 4. What the cross-attention aligns ----

// Draws the cross-attention of one test sentence (below).
void draw_sentence(Transformer& model, const data::Tokenizer& tokenizer, const data::AlignedPair& p,
                   int index, const std::string& out_dir);

double where_attention_goes(Transformer& model, const data::Tokenizer& tokenizer,
                            const data::ToyCorpus& corpus, bool quick, const std::string& out_dir,
                            Checks& check) {
  banner("4. What the cross-attention aligns");
  const data::SentencePairsFile test = data::sentence_pairs_of(corpus.test, "test");
  // [snippet: alignment]
  // For each target word, the source word with the most attention, the weights pooled over the
  // word's BPE pieces, must be the one the gold alignment names: in each decoder layer with its
  // heads averaged, and in each head of the last layer alone.
  std::vector<data::AlignmentScore> layers, last_layer;
  for (int64_t layer = 0; layer < model.config.decoder_layers; ++layer)
    layers.push_back(training::score_alignment(model, tokenizer, test, layer));
  for (int64_t head = 0; head < model.config.heads; ++head)
    last_layer.push_back(training::score_alignment(model, tokenizer, test, -1, head));
  // [/snippet]
  for (size_t layer = 0; layer < layers.size(); ++layer)
    fmt::print(
        "  decoder layer {}, heads averaged: {:.1f}% of {} target words attend most to "
        "their gold source word\n",
        layer + 1, 100 * layers[layer].accuracy(), layers[layer].total);
  fmt::print("  last layer, head by head:");
  for (const data::AlignmentScore& h : last_layer) fmt::print(" {:.1f}%", 100 * h.accuracy());
  fmt::print("\n\n");
  const double score = layers.back().accuracy();
  if (quick)
    check(score >= 0.0 && score <= 1.0 && layers.back().total > 0,
          fmt::format("--quick: the alignment score is computed ({:.1f}%)", 100 * score));
  else
    check(score > 0.8,
          fmt::format("alignment score {:.1f}% (last layer, heads averaged): the attention "
                      "finds the source word it translates",
                      100 * score));

  // Two test sentences with long mirrored noun phrases, the second with a postposition.
  draw_sentence(model, tokenizer, corpus.test[drawn_sentence(corpus, false)], 1, out_dir);
  draw_sentence(model, tokenizer, corpus.test[drawn_sentence(corpus, true)], 2, out_dir);
  return score;
}

size_t drawn_sentence(const data::ToyCorpus& corpus, bool prepositional) {
  const auto has_preposition = [](const data::AlignedPair& p) {
    for (const std::string w : {"near", "under", "behind", "with"})
      if (std::find(p.source.begin(), p.source.end(), w) != p.source.end()) return true;
    return false;
  };
  size_t best = 0;
  int64_t most = -1;
  for (size_t i = 0; i < corpus.test.size(); ++i) {
    const data::AlignedPair& p = corpus.test[i];
    if (p.source.size() < 8 || p.source.size() > 12 || has_preposition(p) != prepositional)
      continue;
    if (const int64_t m = mirrored_neighbours(p); m > most) most = m, best = i;
  }
  return best;
}

// The cross-attention of every decoder layer, [1, H, T, S] each, while the model reads the
// reference target (teacher forcing): row t is the step that produces target token t + 1.
std::vector<Tensor> cross_attention(Transformer& model, const data::Pair& pair) {
  model.eval();
  model.record_attention(true);
  NoGrad no_grad;
  const std::vector<int32_t> tgt_in(pair.tgt.begin(), pair.tgt.end() - 1);
  model.forward(IndexTensor::from({1, std::ssize(pair.src)}, pair.src),
                IndexTensor::from({1, std::ssize(tgt_in)}, tgt_in));
  std::vector<Tensor> maps = model.attention(AttentionKind::Cross);
  model.record_attention(false);
  return maps;
}

// One head's map [T * S] of probs [1, H, T, S], or with head = -1 the mean over the heads.
std::vector<float> head_map(const Tensor& probs, int64_t head) {
  const int64_t heads = probs.dim(1), cells = probs.dim(2) * probs.dim(3);
  std::vector<float> out(static_cast<size_t>(cells), 0.0f);
  for (int64_t h = 0; h < heads; ++h) {
    if (head >= 0 && h != head) continue;
    const float weight = head >= 0 ? 1.0f : 1.0f / static_cast<float>(heads);
    for (int64_t k = 0; k < cells; ++k)
      out[static_cast<size_t>(k)] += weight * probs.data()[h * cells + k];
  }
  return out;
}

// The word each attention row (target side) and column (source side) belongs to.
struct TokenWords {
  std::vector<int32_t> target, source;
};

TokenWords token_words(const data::Tokenizer& tokenizer, const data::Pair& pair) {
  // Rows produce tgt[1], ..., the last word's last token, then <eos>, which is no word.
  TokenWords w{.target = data::word_of_tokens(
                   tokenizer, std::span<const int32_t>(pair.tgt).subspan(1, pair.tgt.size() - 2)),
               .source = data::word_of_tokens(tokenizer, pair.src)};
  w.target.push_back(-1);
  return w;
}

// Token attention [rows * cols] pooled into words [target words * source words]: a target
// word's row is the mean of its tokens' rows, a source word's weight the sum over its tokens.
std::vector<float> pool_to_words(std::span<const float> attention, const TokenWords& w,
                                 size_t target_words, size_t source_words) {
  std::vector<float> pooled(target_words * source_words, 0.0f);
  std::vector<float> rows_of(target_words, 0.0f);
  const size_t cols = w.source.size();
  for (size_t r = 0; r < w.target.size(); ++r) {
    if (w.target[r] < 0) continue;
    const auto tw = static_cast<size_t>(w.target[r]);
    rows_of[tw] += 1.0f;
    for (size_t c = 0; c < cols; ++c)
      if (w.source[c] >= 0)
        pooled[tw * source_words + static_cast<size_t>(w.source[c])] += attention[r * cols + c];
  }
  for (size_t tw = 0; tw < target_words; ++tw)
    for (size_t sw = 0; sw < source_words; ++sw)
      if (rows_of[tw] > 0) pooled[tw * source_words + sw] /= rows_of[tw];
  return pooled;
}

void draw_sentence(Transformer& model, const data::Tokenizer& tokenizer, const data::AlignedPair& p,
                   int index, const std::string& out_dir) {
  const data::Pair pair =
      data::encode_pair(tokenizer, data::join_words(p.source), data::join_words(p.target));
  const std::vector<Tensor> maps = cross_attention(model, pair);
  const TokenWords words = token_words(tokenizer, pair);
  // Rows are labelled with the token each one predicts (row t produces tgt[t + 1]), so the
  // row of "miru" is the one that looks for "cat".
  std::vector<std::string> row_labels, col_labels;
  for (size_t i = 1; i < pair.tgt.size(); ++i) row_labels.push_back(tokenizer.label(pair.tgt[i]));
  for (const int32_t id : pair.src) col_labels.push_back(tokenizer.label(id));
  const int64_t rows = std::ssize(row_labels), cols = std::ssize(col_labels);

  std::vector<viz::Image> panels;
  for (size_t layer = 0; layer < maps.size(); ++layer)
    for (int64_t h = 0; h < maps[layer].dim(1); ++h)
      panels.push_back(viz::heatmap(head_map(maps[layer], h), rows, cols,
                                    {.title = fmt::format("layer {}, head {}", layer + 1, h + 1),
                                     .row_labels = row_labels,
                                     .col_labels = col_labels,
                                     .row_axis = "target (token predicted)",
                                     .col_axis = "source token",
                                     .cell_size = 12,
                                     .colour_bar = false}));
  const std::string heads_path = fmt::format("{}/cross_heads_{}.png", out_dir, index);
  viz::write_png(viz::grid(panels, maps.front().dim(1),
                           "cross-attention: decoder layers (rows) x heads (columns)"),
                 heads_path);

  const std::string mean_path = fmt::format("{}/cross_mean_{}.png", out_dir, index);
  viz::write_png(viz::heatmap(head_map(maps.back(), -1), rows, cols,
                              {.title = "last decoder layer, heads averaged",
                               .row_labels = row_labels,
                               .col_labels = col_labels,
                               .row_axis = "target (token predicted)",
                               .col_axis = "source token",
                               .value_label = "attention weight",
                               .cell_size = 22}),
                 mean_path);

  // The gold alignment and the attention pooled into words, on the same axes.
  const size_t tw = p.target.size(), sw = p.source.size();
  std::vector<float> gold(tw * sw, 0.0f);
  for (const auto& [s, t] : p.alignment)
    gold[static_cast<size_t>(t) * sw + static_cast<size_t>(s)] = 1.0f;
  const std::vector<float> pooled = pool_to_words(head_map(maps.back(), -1), words, tw, sw);
  const auto word_map = [&](const std::vector<float>& values, const std::string& title) {
    return viz::heatmap(values, static_cast<int64_t>(tw), static_cast<int64_t>(sw),
                        {.title = title,
                         .row_labels = p.target,
                         .col_labels = p.source,
                         .row_axis = "target word",
                         .col_axis = "source word",
                         .cell_size = 20,
                         .colour_bar = false});
  };
  const std::string words_path = fmt::format("{}/alignment_{}.png", out_dir, index);
  viz::write_png(
      viz::grid({word_map(gold, "gold alignment"), word_map(pooled, "attention pooled into words")},
                2, "gold word alignment beside the last layer's attention"),
      words_path);

  const std::vector<int32_t> attended =
      data::most_attended_words(head_map(maps.back(), -1), words.target, words.source);
  fmt::print("  sentence {}: {}\n    most attended source word per target word:", index,
             data::join_words(p.source));
  for (size_t t = 0; t < tw; ++t)
    fmt::print("{}{} <- {}", t % 6 == 0 ? "\n      " : ", ", p.target[t],
               attended[t] >= 0 ? p.source[static_cast<size_t>(attended[t])] : "?");
  fmt::print("\n    wrote {}, {}, {}\n", heads_path, mean_path, words_path);
}

// ---- 5. The compositional and length splits ----

struct SplitResult {
  std::string name;
  int64_t steps = 0;
  double bleu = 0, chrf = 0, exact = 0, alignment = 0;
  double length_ratio = 0;  // output tokens / reference tokens, as BLEU counts them
};

SplitResult evaluate_split(const std::string& name, const Setup& s, const data::ToyCorpus& corpus,
                           uint64_t seed, std::vector<viz::Series>& curves,
                           std::vector<std::string>& hypotheses) {
  const data::BpeTokenizer tokenizer = shared_bpe(corpus, s.vocab_size);
  TransformerConfig config = s.model;
  config.vocab_size = tokenizer.size();
  const std::vector<data::Pair> train_pairs =
      data::encode_pairs(tokenizer, data::sentence_pairs_of(corpus.train, "train"));
  const data::SentencePairsFile test = data::sentence_pairs_of(corpus.test, "test");
  Trained t = train(s, config, train_pairs, s.split_steps, seed);
  curves.push_back({.name = name, .ys = t.losses});
  const training::TranslationScores scores = translate(*t.model, tokenizer, test, 1);
  hypotheses = scores.hypotheses;
  fmt::print("  {} split: trained {} steps in {:.1f} s\n", name, s.split_steps, t.seconds);
  const data::BleuScore& bleu = scores.bleu;
  return {.name = name,
          .steps = s.split_steps,
          .bleu = bleu.score,
          .chrf = scores.chrf.score,
          .exact = scores.exact,
          .alignment = training::score_alignment(*t.model, tokenizer, test).accuracy(),
          .length_ratio = static_cast<double>(bleu.hypothesis_length) /
                          static_cast<double>(bleu.reference_length)};
}

// Helpers of this section, below it.
int64_t compositional_phrases(const data::ToyCorpus& corpus,
                              const std::vector<std::string>& compositional_out);
void exact_by_length(const data::ToyCorpus& corpus, const std::vector<std::string>& length_out,
                     std::vector<float>& xs, std::vector<float>& ys);

void other_splits(const Setup& s, const Corpora& c, const RandomRun& random, uint64_t seed,
                  const std::string& out_dir, Checks& check) {
  banner("5. The compositional and length splits");
  std::vector<viz::Series> curves = {
      {.name = "random",
       .ys = std::vector<float>(random.trained.losses.begin(),
                                random.trained.losses.begin() + s.split_steps)}};
  std::vector<std::string> compositional_out, length_out;
  const SplitResult compositional =
      evaluate_split("compositional", s, c.compositional, seed, curves, compositional_out);
  const SplitResult length = evaluate_split("length", s, c.length, seed, curves, length_out);

  fmt::print("\n  {:<15} {:>6} {:>10} {:>6} {:>7} {:>10} {:>13}\n", "split", "steps", "test BLEU",
             "chrF", "exact", "alignment", "length ratio");
  fmt::print("  {:<15} {:>6} {:>10.2f}\n", "random", s.split_steps, random.bleu_at_split_budget);
  for (const SplitResult& r : {compositional, length})
    fmt::print("  {:<15} {:>6} {:>10.2f} {:>6.1f} {:>6.1f}% {:>9.1f}% {:>13.3f}\n", r.name, r.steps,
               r.bleu, r.chrf, 100 * r.exact, 100 * r.alignment, r.length_ratio);
  fmt::print("  (all greedy; the alignment score is the last layer's, heads averaged)\n");

  const int64_t phrases = compositional_phrases(c.compositional, compositional_out);
  std::vector<float> xs, ys;  // source words, % exact
  exact_by_length(c.length, length_out, xs, ys);

  const std::string path = out_dir + "/splits.png";
  viz::write_png(viz::grid({viz::line_plot(curves, {.title = "training loss of the three splits",
                                                    .y_label = "loss (log scale)",
                                                    .log_y = true,
                                                    .width = 520,
                                                    .height = 360}),
                            viz::line_plot({{.name = "length split", .xs = xs, .ys = ys}},
                                           {.title = "length split: exact test translations",
                                            .x_label = "source words",
                                            .y_label = "% exact",
                                            .width = 520,
                                            .height = 360})},
                           2),
                 path);
  fmt::print("  wrote {}\n", path);

  check(std::isfinite(compositional.bleu) && std::isfinite(length.bleu) && phrases > 0,
        "the compositional and length splits are trained, decoded and scored");
  if (!s.quick)
    check(length.bleu < random.bleu_at_split_budget,
          fmt::format("with the same budget, the length split's test BLEU ({:.1f}) is below the "
                      "random split's ({:.1f}): longer sentences than any seen are harder",
                      length.bleu, random.bleu_at_split_budget));
}

// Compositional: is the held-out phrase itself translated right? Its reference words are
// the target words aligned to the adjective and the noun, a contiguous run once mirrored.
// Prints the count and returns how many phrases there are.
int64_t compositional_phrases(const data::ToyCorpus& corpus,
                              const std::vector<std::string>& compositional_out) {
  int64_t phrases = 0, phrases_right = 0;
  for (size_t i = 0; i < corpus.test.size(); ++i) {
    const data::AlignedPair& p = corpus.test[i];
    for (const auto& [adjective, noun] : held_out_in(p, corpus.held_out)) {
      int32_t lo = 1000, hi = -1;
      for (const auto& [sw, t] : p.alignment)
        if (sw == adjective || sw == noun) lo = std::min(lo, t), hi = std::max(hi, t);
      const std::vector<std::string> phrase(p.target.begin() + lo, p.target.begin() + hi + 1);
      ++phrases;
      phrases_right +=
          (" " + compositional_out[i] + " ").find(" " + data::join_words(phrase) + " ") !=
          std::string::npos;
    }
  }
  fmt::print(
      "\n  compositional: {} of {} held-out adjective-noun phrases come out right ({:.1f}%)\n",
      phrases_right, phrases,
      100.0 * static_cast<double>(phrases_right) /
          static_cast<double>(std::max<int64_t>(1, phrases)));
  return phrases;
}

// Length: exact translations by source length, printed, and as points (xs, ys) to draw.
void exact_by_length(const data::ToyCorpus& corpus, const std::vector<std::string>& length_out,
                     std::vector<float>& xs, std::vector<float>& ys) {
  struct Counts {
    int64_t exact = 0, total = 0, output_words = 0, reference_words = 0;
  };
  std::map<size_t, Counts> by_length;  // source words -> counts
  const std::vector<std::string> references = targets_of(corpus.test);
  for (size_t i = 0; i < references.size(); ++i) {
    Counts& n = by_length[corpus.test[i].source.size()];
    n.exact += length_out[i] == references[i];
    ++n.total;
    n.output_words += std::ssize(data::bleu_tokenize(length_out[i]));
    n.reference_words += std::ssize(data::bleu_tokenize(references[i]));
  }
  size_t longest_train = 0;
  for (const data::AlignedPair& p : corpus.train)
    longest_train = std::max(longest_train, p.source.size());
  fmt::print("  length split (training sentences had at most {} source words), by source length:\n",
             longest_train);
  fmt::print("    {:>12} {:>6} {:>12} {:>26}\n", "source words", "pairs", "exact",
             "output / reference words");
  for (const auto& [words, n] : by_length) {
    const double exact = static_cast<double>(n.exact) / static_cast<double>(n.total);
    fmt::print("    {:>12} {:>6} {:>11.0f}% {:>26.3f}\n", words, n.total, 100 * exact,
               static_cast<double>(n.output_words) / static_cast<double>(n.reference_words));
    xs.push_back(static_cast<float>(words));
    ys.push_back(static_cast<float>(100 * exact));
  }
}

// ---- 6. The run's page ----

// The random split's run as one HTML page that opens offline (viz/run_page.h): its settings,
// curves and timings, greedy translations of test sentences beside their references, the
// attention of three of them, and the snapshots of section 4's first sentence through training.
viz::RunPage translation_run_page(const Setup& s, uint64_t seed, const RandomRun& run,
                                  const data::Tokenizer& tokenizer, const data::ToyCorpus& corpus) {
  Transformer& model = *run.trained.model;
  const auto steps = std::ssize(run.trained.losses);
  const training::RunPageHeader header{
      .title = "lesson 09: toy translation",
      .subtitle = fmt::format("random split, {} steps", steps),
      .settings = {{"optimizer", "Adam, beta1 0.9, beta2 0.98, eps 1e-9"},
                   {"learning rate",
                    fmt::format("eq. 3 x {}, {} warm-up steps", s.factor, s.warmup)},
                   {"batch",
                    fmt::format("pairs of similar length, about {} tokens", s.batch_tokens)},
                   {"label smoothing", fmt::format("{}", s.label_smoothing)},
                   {"dropout", fmt::format("{}", s.model.dropout)},
                   {"seed", fmt::format("{}", seed)}},
      .data = {{"split", "random"},
               {"training pairs", fmt::format("{}", corpus.train.size())},
               {"dev pairs", fmt::format("{}", corpus.dev.size())},
               {"test pairs", fmt::format("{}", corpus.test.size())},
               {"vocabulary", fmt::format("{} tokens ({}), shared by both languages",
                                          tokenizer.size(), tokenizer.kind())}}};
  // train() keeps no rates; these are the schedule's at each step, the ones the trainer used.
  // It counts no tokens either, so the page's speeds are per step.
  const training::Schedule schedule = training::noam(model.config.d_model, s.warmup, s.factor);
  std::vector<float> rates;
  for (int64_t step = 1; step <= steps; ++step) rates.push_back(schedule(step));
  viz::RunPage page = training::run_page(header, model, run.trained.losses, rates, run.history);
  for (const data::AlignedPair& p : std::span(corpus.train).first(3))
    page.data_examples.emplace_back(data::join_words(p.source), data::join_words(p.target));

  const data::SentencePairsFile test = data::sentence_pairs_of(corpus.test, "test");
  page.samples = training::translation_samples(model, tokenizer, std::span(test.pairs).first(8));
  page.sample_metric = "chrF";
  const training::TokenNames names = training::token_names(&tokenizer, model.config);
  for (const size_t i : {drawn_sentence(corpus, false), drawn_sentence(corpus, true), size_t{0}}) {
    const data::Pair pair =
        data::encode_pair(tokenizer, test.pairs[i].source, test.pairs[i].target);
    page.attention.push_back({.label = test.pairs[i].source,
                              .maps = training::attention_maps(model, pair.src, pair.tgt, names)});
  }
  return page;
}

// Of the target words with a gold alignment, how many attend most to their gold source word in
// the last decoder layer's cross-attention, heads averaged, pooled into words (section 4).
int64_t aligned_words(const viz::AttentionMaps& maps, const data::Tokenizer& tokenizer,
                      const data::AlignedPair& p) {
  const data::Pair pair =
      data::encode_pair(tokenizer, data::join_words(p.source), data::join_words(p.target));
  const std::vector<std::vector<float>>& heads = maps.cross.back();
  std::vector<float> mean(heads.front().size(), 0.0f);
  for (const std::vector<float>& head : heads)
    for (size_t k = 0; k < mean.size(); ++k) mean[k] += head[k] / static_cast<float>(heads.size());
  const TokenWords words = token_words(tokenizer, pair);
  const std::vector<int32_t> attended = data::most_attended_words(mean, words.target, words.source);
  int64_t right = 0;
  for (const auto& [source, target] : p.alignment)
    right += attended[static_cast<size_t>(target)] == source;
  return right;
}

void the_runs_page(const Setup& s, uint64_t seed, const RandomRun& run,
                   const data::Tokenizer& tokenizer, const data::ToyCorpus& corpus,
                   const std::string& out_dir, Checks& check) {
  banner("6. The run's page");
  const viz::RunPage page = translation_run_page(s, seed, run, tokenizer, corpus);
  const std::string path = out_dir + "/run.html";
  viz::write_run_page(page, path);
  const bool written = std::filesystem::exists(path) && std::filesystem::file_size(path) > 0;
  // No size in kB: the page records how long the run took, so its size varies between runs.
  fmt::print("  wrote {}: open it in a browser\n\n", path);
  check(written, fmt::format("the run's page is written to {}", path));

  const training::PageHistory& h = run.history;
  const std::vector<double>& bleu = h.metric_values;
  check(page.snapshots.size() == bleu.size() && page.snapshots.front().step == 0 &&
            page.snapshots.back().step == s.steps,
        fmt::format("it holds {} snapshots of sentence 1's attention and as many dev BLEUs, from "
                    "step 0 to step {}; recording them took {:.1f} s beside {:.1f} s of training "
                    "steps",
                    page.snapshots.size(), page.snapshots.back().step, h.checking_seconds,
                    h.training_seconds));

  const data::AlignedPair& p = corpus.test[drawn_sentence(corpus, false)];
  const int64_t before = aligned_words(page.snapshots.front().maps, tokenizer, p);
  const int64_t after = aligned_words(page.snapshots.back().maps, tokenizer, p);
  const auto words = std::ssize(p.alignment);
  fmt::print(
      "  sentence 1, last layer: {} of {} target words attend most to their gold source "
      "word at step 0, {} at step {}; dev BLEU {:.1f} at step 0, {:.1f} at step {}\n",
      before, words, after, s.steps, bleu.front(), bleu.back(), s.steps);
  if (s.quick) return;  // the tiny model of --quick learns neither
  check(before * 3 < words && after * 10 >= words * 9,
        fmt::format("the slider shows the reordering forming: sentence 1's last layer points "
                    "{} of its {} aligned target words at their gold source word at step 0, {} "
                    "at step {}",
                    before, words, after, s.steps));
  check(bleu.front() < 5 && bleu.back() >= 95,
        fmt::format("the dev BLEU curve rises from {:.1f} at step 0 to {:.1f} at step {}",
                    bleu.front(), bleu.back(), s.steps));
}

// ---- Plumbing ----

std::vector<std::string> sources_of(std::span<const data::AlignedPair> pairs) {
  std::vector<std::string> out;
  for (const data::AlignedPair& p : pairs) out.push_back(data::join_words(p.source));
  return out;
}

std::vector<std::string> targets_of(std::span<const data::AlignedPair> pairs) {
  std::vector<std::string> out;
  for (const data::AlignedPair& p : pairs) out.push_back(data::join_words(p.target));
  return out;
}

// Adjacent target words aligned to adjacent source words in the opposite order: the marks of
// a mirrored noun phrase ("big red cat" -> "miru roso grano").
int64_t mirrored_neighbours(const data::AlignedPair& p) {
  int64_t count = 0;
  for (size_t i = 1; i < p.alignment.size(); ++i)
    if (p.alignment[i].second == p.alignment[i - 1].second + 1 &&
        p.alignment[i].first == p.alignment[i - 1].first - 1)
      ++count;
  return count;
}

// The (adjective, noun) source positions of held-out combinations ("red cat") in p: the
// adjective is one of the two words before the noun, in its singular or plural form.
std::vector<std::pair<int32_t, int32_t>> held_out_in(const data::AlignedPair& p,
                                                     const std::vector<std::string>& held_out) {
  std::vector<std::pair<int32_t, int32_t>> found;
  for (const std::string& combo : held_out) {
    const std::string adjective = combo.substr(0, combo.find(' '));
    const std::string noun = combo.substr(combo.find(' ') + 1);
    for (int32_t n = 0; n < static_cast<int32_t>(p.source.size()); ++n) {
      const std::string& w = p.source[static_cast<size_t>(n)];
      if (w != noun && w != noun + "s" && !(noun == "child" && w == "children")) continue;
      for (int32_t a = std::max(0, n - 2); a < n; ++a)
        if (p.source[static_cast<size_t>(a)] == adjective) found.emplace_back(a, n);
    }
  }
  return found;
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"Lesson 09: toy translation"};
  LessonFlags flags(app, "09_translation", "a tiny run in a few seconds",
                    "seed for the corpus and the weights");
  CLI11_PARSE(app, argc, argv);

  Checks check;
  const auto start = std::chrono::steady_clock::now();
  try {
    const Setup s = make_setup(flags.quick);
    const Corpora corpora = the_toy_language(s, flags.seed, check);
    const data::BpeTokenizer tokenizer = one_vocabulary(s, corpora.random, check);
    three_tokenizers(tokenizer, corpora.random, check);
    // [snippet: model]
    TransformerConfig config = s.model;  // full run: d_model 64, d_ff 256, 4 heads, 2 + 2 layers
    config.vocab_size = tokenizer.size();
    config.tied = true;  // §3.4: one matrix for both embeddings and the pre-softmax projection
    // [/snippet]
    tied_embeddings(config, check);
    RandomRun random =
        train_and_decode(s, config, tokenizer, corpora.random, flags.seed, flags.out(), check);
    where_attention_goes(*random.trained.model, tokenizer, corpora.random, flags.quick, flags.out(),
                         check);
    other_splits(s, corpora, random, flags.seed, flags.out(), check);
    the_runs_page(s, flags.seed, random, tokenizer, corpora.random, flags.out(), check);
  } catch (const std::exception& e) {
    fmt::print("\nlesson 09: stopped by an exception: {}\n", e.what());
    return 1;
  }
  fmt::print("\nlesson 09: {:.0f} s in all\n", seconds_since(start));
  return check.summary("lesson 09");
}
