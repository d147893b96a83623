// Lesson 13: the decoder alone.
//
// The paper's Transformer reads a source with its encoder and writes a target with its
// decoder. Drop the encoder, and with it the cross-attention that read it, and what is left
// predicts the next token of one sequence: the architecture of GPT (Radford et al. 2018). This
// program shows what changes in the model, runs the checks a practitioner runs before trusting
// a language model (the loss at the start, one batch learned by heart, a bigram model to beat),
// samples text at several temperatures and measures what each does, finds the attention head
// that lets a two-layer model continue a sequence it has seen before (an induction head, Olsson
// et al. 2022), and trains the toy translation of lesson 09 both ways: the encoder-decoder, and
// the decoder alone reading "source, then target" as one sequence.
// README.md is the text that walks through this file. Every claim is checked; a failed check
// makes the program exit with 1.
//
// main(), at the end, is the table of contents: it calls the sections in the order of
// README.md, and they are defined above it in the same order.
//
// Shape legend: B batch, T sequence length, D d_model, H heads, V vocabulary.
#include <fmt/format.h>

#include <CLI/CLI.hpp>
#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdint>
#include <filesystem>
#include <functional>
#include <map>
#include <memory>
#include <numeric>
#include <set>
#include <string>
#include <vector>

#include "autograd/graph.h"
#include "autograd/ops.h"
#include "autograd/random.h"
#include "autograd/tensor.h"
#include "data/batch.h"
#include "data/batch_source.h"
#include "data/bleu.h"
#include "data/parallel_corpus.h"
#include "data/text_windows.h"
#include "data/tokenizer.h"
#include "data/toy_language.h"
#include "lessons/lesson.h"
#include "models/bigram.h"
#include "models/sample.h"
#include "models/transformer.h"
#include "nn/attention.h"
#include "nn/layers.h"
#include "nn/optim.h"
#include "training/evaluate.h"
#include "training/recipe.h"
#include "training/run.h"
#include "training/trainer.h"
#include "viz/heatmap.h"
#include "viz/line_plot.h"

using namespace gf;
using namespace gf::lessons;

namespace {

struct Setup {
  bool quick = false;
  std::string data_dir = "out";  // where scripts/corpus.py wrote fortunes/
  std::string out;               // <out>/13_decoder_only
  int64_t lm_steps = 600;        // the language model of sections 2 and 3
  int64_t induction_steps = 6000;
  float induction_lr = 3e-3f;
  int64_t translation_steps = 600;
  int64_t samples = 64;  // per sampling setting in section 3
  bool only_induction = false;
};

// ---- 1. What the decoder alone keeps ----

// The parameters of each part of a model, by the names of the checkpoint format.
struct PartCounts {
  int64_t embeddings = 0, encoder = 0, self_attention = 0, cross_attention = 0, ffn = 0, norms = 0;
  int64_t total() const {
    return embeddings + encoder + self_attention + cross_attention + ffn + norms;
  }
};

PartCounts count_parts(const Transformer& model) {
  PartCounts c;
  for (const auto& [name, tensor] : model.named_parameters()) {
    const int64_t n = tensor.numel();
    const auto has = [&name](const char* part) {
      return name.find(part) != std::string::npos;
    };
    if (name.starts_with("encoder."))
      c.encoder += n;
    else if (has("self_attn"))
      c.self_attention += n;
    else if (has("cross_attn"))
      c.cross_attention += n;
    else if (has("ffn"))
      c.ffn += n;
    else if (has("norm"))
      c.norms += n;
    else
      c.embeddings += n;
  }
  return c;
}

void print_parts(const char* name, const PartCounts& c) {
  fmt::print("  {:<22} {:>11L} {:>9L} {:>11L} {:>11L} {:>10L} {:>7L} {:>11L}\n", name, c.embeddings,
             c.encoder, c.self_attention, c.cross_attention, c.ffn, c.norms, c.total());
}

// [snippet: decoder-only-config]
// The paper's base model (Table 3), and the same decoder without its encoder: encoder_layers 0
// is the whole difference in the configuration.
TransformerConfig base_model(bool decoder_only) {
  TransformerConfig c{.vocab_size = 37000, .d_model = 512, .d_ff = 2048, .heads = 8};
  c.encoder_layers = decoder_only ? 0 : 6;
  c.decoder_layers = 6;
  return c;
}
// [/snippet]

void what_is_left(const Setup& s, Checks& check) {
  // Counted on models of the paper's shapes but a vocabulary of 8 (the counts of the rest do
  // not depend on it) and the table of 37,000 x d_model added by hand: the base model's 63
  // million weights would take a while to initialise for a table. With --quick, which the tests
  // also run under an emulator, at width 64 and d_ff 256: the same parts, 64 times fewer weights.
  const auto shaped = [&s](bool decoder_only) {
    TransformerConfig c = base_model(decoder_only);
    if (s.quick) c.d_model = 64, c.d_ff = 256;
    return c;
  };
  const auto counted = [&](bool decoder_only) {
    TransformerConfig c = shaped(decoder_only);
    c.vocab_size = 8;
    Rng rng(1);
    PartCounts parts = count_parts(Transformer(c, rng));
    parts.embeddings += (37000 - 8) * c.d_model;
    return parts;
  };
  const PartCounts both = counted(false), alone = counted(true);
  fmt::print("  {:<22} {:>11} {:>9} {:>11} {:>11} {:>10} {:>7} {:>11}\n", "", "embeddings",
             "encoder", "self-attn", "cross-attn", "FFN", "norms", "total");
  print_parts(s.quick ? "encoder-decoder (d 64)" : "encoder-decoder (base)", both);
  print_parts("decoder alone", alone);
  const int64_t d = shaped(false).d_model, attention = 4 * (d * d + d);
  check(both.total() - alone.total() == both.encoder + 6 * (attention + 2 * d),
        "the decoder alone is the encoder-decoder less its encoder and each decoder layer's "
        "cross-attention and the LayerNorm after it");
  check(alone.cross_attention == 0 && alone.encoder == 0,
        "it has no cross-attention and no encoder left");

  // The one mask left: the look-ahead mask (§3.2.3). Changing a later token changes nothing
  // before it.
  TransformerConfig tiny{.vocab_size = 20, .d_model = 16, .d_ff = 32, .heads = 2};
  tiny.encoder_layers = 0;
  tiny.decoder_layers = 2;
  tiny.dropout = 0.0f;
  Rng rng(2);
  Transformer model(tiny, rng);
  NoGrad no_grad;
  const Tensor a = model.forward(IndexTensor::from({1, 5}, {1, 5, 6, 7, 8}));
  const Tensor b = model.forward(IndexTensor::from({1, 5}, {1, 5, 6, 9, 8}));
  const int64_t v = tiny.vocab_size;
  const float before = max_abs_diff(std::span<const float>(a.data(), 3 * v),
                                    std::span<const float>(b.data(), 3 * v));
  const float after = max_abs_diff(std::span<const float>(a.data() + 3 * v, 2 * v),
                                   std::span<const float>(b.data() + 3 * v, 2 * v));
  fmt::print("\n  changing token 3 of 5: positions 0-2 move by {:.1g}, positions 3-4 by {:.2f}\n",
             before, after);
  check(before == 0.0f && after > 0.0f,
        "the look-ahead mask is the one mask left: no position reads a later token");
}

// ---- 2. Three checks before trusting a language model ----

struct Text {
  std::unique_ptr<data::Tokenizer> tokenizer;
  std::vector<int32_t> train, dev;  // token streams
  int64_t dev_characters = 0;
};

Text read_fortunes(const Setup& s) {
  const std::filesystem::path dir = std::filesystem::path(s.data_dir) / "fortunes";
  if (!std::filesystem::exists(dir / "train.txt"))
    throw std::invalid_argument(fmt::format(
        "no corpus in {}: make it first with `python3 scripts/corpus.py fortunes --out {}` "
        "(docs/corpus.md), or say where it is with --data",
        dir.string(), s.data_dir));
  std::string train = data::read_text_file(dir / "train.txt").text;
  std::string dev = data::read_text_file(dir / "dev.txt").text;
  if (s.quick) {  // whole fortunes, so that each part still ends with its "%" line
    train.resize(train.rfind("\n%\n", 30000) + 3);
    dev.resize(dev.rfind("\n%\n", 3000) + 3);
  }
  Text text;
  // Characters: the tokens a small model learns fastest from, and those on which a bigram
  // knows least (the README compares byte pairs).
  text.tokenizer = training::learn_tokenizer(training::TokenizerKind::Char, 0,
                                             std::span<const std::string>(&train, 1));
  text.train = text.tokenizer->encode(train);
  text.dev = text.tokenizer->encode(dev);
  text.dev_characters = training::text_facts(dev).characters;
  fmt::print(
      "  fortunes: {:L} training tokens, {:L} dev tokens ({:L} characters), a vocabulary "
      "of {:L} characters, bytes and specials\n",
      text.train.size(), text.dev.size(), text.dev_characters, text.tokenizer->size());
  return text;
}

TransformerConfig small_lm(int64_t vocab_size) {
  TransformerConfig c{.vocab_size = vocab_size, .d_model = 64, .d_ff = 256, .heads = 4};
  c.encoder_layers = 0;
  c.decoder_layers = 2;
  c.max_len = 64;
  c.dropout = 0.0f;
  c.norm_first = true;
  return c;
}

// Trains model on batches for `steps`, Adam with a cosine from peak; returns the losses.
std::vector<float> train_lm(Transformer& model, const std::function<data::Batch()>& next,
                            int64_t steps, float peak) {
  training::Trainer trainer(nn::Optimizer(model.named_parameters(), nn::AdamConfig{.lr = peak}),
                            training::cosine(std::max<int64_t>(1, steps / 10), steps, peak));
  std::vector<float> losses;
  for (int64_t s = 0; s < steps; ++s) {
    const data::Batch batch = next();
    losses.push_back(
        trainer.step([&] { return training::teacher_forced_loss(model, batch); }).loss);
  }
  return losses;
}

// The standard deviation of the logits over every position of the windows, before training.
double logit_spread(Transformer& model, std::span<const data::Pair> windows) {
  NoGrad no_grad;
  nn::EvalScope eval(model);
  double sum = 0.0, squares = 0.0;
  int64_t n = 0;
  for (const data::Pair& w : windows) {
    const auto t = static_cast<int64_t>(w.tgt.size()) - 1;
    const Tensor logits =
        model.forward(IndexTensor::from({1, t}, {w.tgt.begin(), w.tgt.end() - 1}));
    for (const float z : logits.to_vector()) {
      sum += z;
      squares += static_cast<double>(z) * z;
      ++n;
    }
  }
  const double mean = sum / static_cast<double>(n);
  return std::sqrt(squares / static_cast<double>(n) - mean * mean);
}

void three_checks(const Setup& s, const Text& text, Transformer& model, Checks& check) {
  const auto v = static_cast<double>(model.config.vocab_size);
  const std::vector<data::Pair> dev = data::consecutive_windows(text.dev, 64, 1);
  data::BatchSource windows = data::BatchSource::windows(text.train, 64, 32, 1, Rng(7));

  // (a) At the start the model should know nothing: every token about equally likely, so the
  // loss is the entropy of the uniform distribution, ln V. Logits spread with a standard
  // deviation sigma add about sigma^2 / 2 to it: for independent Gaussian logits z, the mean
  // of ln sum exp(z) is ln V + ln E[exp z] = ln V + sigma^2 / 2, and the target's own logit is
  // 0 on average.
  const double start = std::log(training::perplexity(model, dev));
  const double sigma = logit_spread(model, dev);
  fmt::print(
      "  (a) loss at the start {:.3f} nats; ln V = ln {:.0f} = {:.3f}; the logits' spread "
      "sigma = {:.3f}, so ln V + sigma^2/2 = {:.3f}\n",
      start, v, std::log(v), sigma, std::log(v) + sigma * sigma / 2);
  check(std::abs(start - (std::log(v) + sigma * sigma / 2)) < 0.03 * std::log(v),
        "the loss before training is ln V + sigma^2/2 within 3%: the first guesses are "
        "uniform, blurred by the logits' small spread");

  // (b) One batch, learned by heart: a model that cannot drive the loss of a batch it sees
  // again and again towards zero has a bug.
  Rng rng(3);
  Transformer copy(model.config, rng);
  const data::Batch one = windows.next();
  const std::vector<float> memorised = train_lm(
      copy, [&] { return one; }, s.quick ? 6 : 300, 3e-3f);
  fmt::print("  (b) one batch of 32 windows, {} steps on it alone: loss {:.3f} -> {:.3f}\n",
             memorised.size(), memorised.front(), memorised.back());
  check(memorised.back() < (s.quick ? 0.95f : 0.1f) * memorised.front(),
        s.quick ? "the loss of one batch seen again and again falls"
                : "the loss of one batch seen 300 times falls below a tenth of its start");

  // (c) The bigram model: the next token from the one before alone, by counting.
  const auto started = std::chrono::steady_clock::now();
  train_lm(
      model, [&] { return windows.next(); }, s.lm_steps, 2e-3f);
  const double seconds = seconds_since(started);
  const double ppl = training::perplexity(model, dev);
  const BigramModel bigram(text.train, model.config.vocab_size, 1);
  const BigramModel::Best best = bigram.best_perplexity(dev);
  const auto bits = [&](double p) {
    return training::bits_per_character(p, std::ssize(text.dev), text.dev_characters);
  };
  fmt::print(
      "  (c) {} steps of 32 windows of 64 tokens ({:.0f} s): dev perplexity {:.2f} ({:.3f} bits "
      "per character)\n      the bigram model, add-k with the best k ({}): {:.2f} ({:.3f} bits "
      "per character)\n",
      s.lm_steps, seconds, ppl, bits(ppl), best.k, best.perplexity, bits(best.perplexity));
  if (!s.quick)
    check(ppl < 0.9 * best.perplexity,
          fmt::format("the Transformer's dev perplexity is more than 10% below the bigram "
                      "model's: {:.0f}% below",
                      100 * (1 - ppl / best.perplexity)));
}

// ---- 3. Sampling: temperature, top-k, top-p ----

struct SamplingRow {
  std::string name;
  SampleOptions options;
  double entropy = 0.0;   // nats, of the distribution each token was drawn from
  double distinct = 0.0;  // distinct words over all words, in all the samples together
  std::string example{};
};

// How varied the words of some texts are: the number of different words over the number of
// words, all the texts together (words split at spaces, tabs and newlines). Text that keeps
// returning to the same few words scores low.
double distinct_words(std::span<const std::string> texts) {
  std::set<std::string> different;
  int64_t words = 0;
  for (const std::string& text : texts) {
    std::string word;
    for (const char c : text + " ") {
      if (c != ' ' && c != '\n' && c != '\t') {
        word += c;
      } else if (!word.empty()) {
        different.insert(word);
        ++words;
        word.clear();
      }
    }
  }
  return words == 0 ? 0.0 : static_cast<double>(different.size()) / static_cast<double>(words);
}

// The mean entropy of the distributions the tokens of samples were drawn from: each sample
// read again after bos and the prompt, its logits reshaped as sampling reshaped them.
double sampling_entropy(Transformer& model, std::span<const int32_t> prompt,
                        std::span<const TokenIds> samples, const SampleOptions& options) {
  NoGrad no_grad;
  nn::EvalScope eval(model);
  double nats = 0.0;
  int64_t draws = 0;
  const int64_t v = model.config.vocab_size;
  for (const TokenIds& sampled : samples) {
    std::vector<int32_t> read = {model.config.bos_id};
    read.insert(read.end(), prompt.begin(), prompt.end());
    read.insert(read.end(), sampled.begin(), sampled.end());
    read.pop_back();  // the last token is predicted, not read
    const auto t = std::min<int64_t>(std::ssize(read), model.config.max_len);
    const Tensor logits =
        model.forward(IndexTensor::from({1, t}, {read.begin(), read.begin() + t}));
    for (int64_t i = std::ssize(prompt); i < t; ++i) {
      const std::vector<float> p =
          sampling_distribution(std::span<const float>(logits.data() + i * v, v), options);
      for (const float q : p)
        if (q > 0.0f) nats -= static_cast<double>(q) * std::log(static_cast<double>(q));
      ++draws;
    }
  }
  return nats / static_cast<double>(draws);
}

void sampling(const Setup& s, Transformer& model, const data::Tokenizer& tokenizer, Checks& check) {
  // [snippet: sampling-rows]
  std::vector<SamplingRow> rows = {
      {"T = 0.5", {.temperature = 0.5f}}, {"T = 0.8", {.temperature = 0.8f}},
      {"T = 1", {.temperature = 1.0f}},   {"T = 1.5", {.temperature = 1.5f}},
      {"T = 1, top-k 5", {.top_k = 5}},   {"T = 1, top-p 0.9", {.top_p = 0.9f}}};
  // [/snippet]
  // Each sample starts a new fortune: the prompt is the end of one, "%" on its own line.
  const std::string prompt_text = "%\n";
  const std::vector<int32_t> prompt = tokenizer.encode(prompt_text);
  fmt::print(
      "  {} samples of 60 characters after \"%\\n\" for each setting; the mean entropy "
      "of the distribution each character was drawn from, and how varied the samples' words "
      "are: different words over all words\n\n",
      s.samples);
  fmt::print("  {:<18} {:>14} {:>16}   first sample\n", "", "entropy (nats)", "distinct words");
  for (SamplingRow& row : rows) {
    row.options.length = 60;
    row.options.stop_at_eos = false;
    Rng rng(11);  // every row from the same seed
    const std::vector<TokenIds> samples = sample(model, prompt, row.options, rng, s.samples);
    row.entropy = sampling_entropy(model, prompt, samples, row.options);
    std::vector<std::string> texts;
    for (const TokenIds& sampled : samples) texts.push_back(tokenizer.decode(sampled));
    row.distinct = distinct_words(texts);
    row.example = texts.front();
    std::string shown = row.example;
    for (char& c : shown)
      if (c == '\n' || c == '\t') c = ' ';
    fmt::print("  {:<18} {:>14.3f} {:>16.2f}   {}\n", row.name, row.entropy, row.distinct, shown);
  }
  check(rows[0].entropy < rows[1].entropy && rows[1].entropy < rows[2].entropy &&
            rows[2].entropy < rows[3].entropy,
        "the entropy rises with the temperature: 0.5 < 0.8 < 1 < 1.5");
  check(rows[4].entropy < rows[2].entropy && rows[5].entropy < rows[2].entropy,
        "top-k 5 and top-p 0.9 each draw from a narrower distribution than T = 1 alone");
  if (!s.quick)
    check(rows[0].distinct < rows[2].distinct && rows[2].distinct < rows[3].distinct,
          "the samples' words grow more varied with the temperature: 0.5 < 1 < 1.5");
  if (!s.quick)
    check(rows[5].distinct > rows[1].distinct && rows[4].distinct > rows[0].distinct,
          "top-p 0.9 keeps more varied words than T = 0.8, and top-k 5 than T = 0.5, at about "
          "the same entropy: cutting the tail keeps more of the head's variety than cooling the "
          "whole distribution");
}

// ---- 4. What attention learns: an induction head ----

// [snippet: attention-only]
// The smallest model in which an induction head can form (Elhage et al. 2021, Olsson et al.
// 2022): token embeddings plus the paper's sinusoidal positions (§3.5), two layers of causal
// multi-head attention each added to the residual stream, and an unembedding. No feed-forward
// network and no LayerNorm: whatever the model does, its attention does.
class AttentionOnly : public nn::Module {
 public:
  AttentionOnly(int64_t vocab, int64_t length, int64_t d_model, int64_t heads, Rng& rng)
      : embed(vocab, d_model, rng),
        positions(length, d_model),
        unembed(d_model, vocab, rng, /*bias=*/false),
        scale(std::sqrt(float(d_model))) {
    register_module("embed", embed);
    for (int64_t i = 0; i < 2; ++i) {
      layers.push_back(std::make_unique<nn::MultiHeadAttention>(
          nn::AttentionConfig{.d_model = d_model, .heads = heads}, rng));
      register_module(fmt::format("layers.{}", i), *layers.back());
    }
    register_module("unembed", unembed);
  }

  // ids [B, T] -> logits [B, T, V]
  Tensor forward(const IndexTensor& ids) {
    const int64_t t = ids.shape()[1];
    Tensor x = embed.forward(ids) * scale + positions.rows(0, t);  // as the paper's (§3.4)
    const Tensor causal = nn::look_ahead_mask(t);
    for (auto& attention : layers) x = x + attention->forward(x, x, causal);
    return unembed.forward(x);
  }

  nn::Embedding embed;
  nn::PositionalEncoding positions;
  std::vector<std::unique_ptr<nn::MultiHeadAttention>> layers;
  nn::Linear unembed;
  float scale;
};
// [/snippet]

// [snippet: repeated-sequences]
// Sequences of `length` random tokens whose last 2m are a segment of m and the same segment
// again, m drawn from [min_m, max_m] for each row: the random tokens before it and the first
// copy cannot be predicted; the second copy can, by a model that finds the earlier occurrence
// of the current token and copies what followed it. Since m varies, no fixed offset finds it.
struct Repeated {
  IndexTensor ids;               // [B, length]
  std::vector<int64_t> segment;  // m of each row
};
Repeated repeated_sequences(int64_t batch, int64_t length, int64_t vocab, Rng& rng) {
  const int64_t min_m = length / 5, max_m = length / 2;
  Repeated r;
  std::vector<int32_t> ids;
  for (int64_t b = 0; b < batch; ++b) {
    const int64_t m = min_m + rng.below(max_m - min_m + 1);
    std::vector<int32_t> row;
    for (int64_t i = 0; i < length - m; ++i) row.push_back(static_cast<int32_t>(rng.below(vocab)));
    row.insert(row.end(), row.end() - m, row.end());  // the last m again
    ids.insert(ids.end(), row.begin(), row.end());
    r.segment.push_back(m);
  }
  r.ids = IndexTensor::from({batch, length}, ids);
  return r;
}
// [/snippet]

// Rows [first, last) of each sequence of ids [B, T] shifted: the model reads ids[:, :-1] and
// predicts ids[:, 1:].
IndexTensor shifted(const IndexTensor& ids, int64_t from) {
  const int64_t batch = ids.shape()[0], t = ids.shape()[1];
  std::vector<int32_t> v;
  for (int64_t b = 0; b < batch; ++b)
    v.insert(v.end(), ids.data() + b * t + from, ids.data() + b * t + from + t - 1);
  return IndexTensor::from({batch, t - 1}, v);
}

// Over a batch: the mean next-token loss of the predictions of the second copy's tokens (from
// its second token on) and of the tokens before it, and for each head the mean attention that
// every query gives to the key one before it (the previous token), and that the queries in the
// second copy give to the key m - 1 before them (the token after the earlier occurrence of
// their own).
struct InductionMeasures {
  double loss_repeated = 0.0, loss_before = 0.0;
  std::vector<double> previous, induction;  // [layer * H + head]
};
InductionMeasures measure(const Tensor& logits, const Repeated& r,
                          const std::vector<Tensor>& attention) {
  const int64_t batch = r.ids.shape()[0], t = r.ids.shape()[1] - 1, v = logits.shape()[2];
  InductionMeasures m;
  int64_t repeated = 0, before = 0;
  for (int64_t b = 0; b < batch; ++b) {
    const int64_t second = t + 1 - r.segment[static_cast<size_t>(b)];  // the second copy's start
    for (int64_t i = 0; i < t; ++i) {
      const float* row = logits.data() + (b * t + i) * v;
      const float top = *std::max_element(row, row + v);
      double z = 0.0;
      for (int64_t j = 0; j < v; ++j) z += std::exp(static_cast<double>(row[j] - top));
      const double nats = std::log(z) + top - row[r.ids.data()[b * (t + 1) + i + 1]];
      if (i + 1 > second) {
        m.loss_repeated += nats;
        ++repeated;
      } else {
        m.loss_before += nats;
        ++before;
      }
    }
  }
  m.loss_repeated /= static_cast<double>(repeated);
  m.loss_before /= static_cast<double>(before);
  for (const Tensor& a : attention) {  // [B, H, T, T] per layer
    const int64_t heads = a.dim(1);
    for (int64_t h = 0; h < heads; ++h) {
      double previous = 0.0, induction = 0.0;
      int64_t in_second = 0;
      for (int64_t b = 0; b < batch; ++b) {
        const int64_t seg = r.segment[static_cast<size_t>(b)], second = t + 1 - seg;
        for (int64_t q = 1; q < t; ++q) {
          const float* row = a.data() + ((b * heads + h) * t + q) * t;
          previous += row[q - 1];
          if (q >= second) {
            induction += row[q - seg + 1];
            ++in_second;
          }
        }
      }
      m.previous.push_back(previous / static_cast<double>(batch * (t - 1)));
      m.induction.push_back(induction / static_cast<double>(in_second));
    }
  }
  return m;
}

void induction_head(const Setup& s, uint64_t seed, Checks& check) {
  const int64_t vocab = 64, length = 33, d_model = 64, heads = 4;
  Rng rng(seed);
  AttentionOnly model(vocab, length - 1, d_model, heads, rng);
  training::Trainer trainer(
      nn::Optimizer(model.named_parameters(), nn::AdamConfig{.lr = s.induction_lr}),
      training::cosine(std::max<int64_t>(1, s.induction_steps / 10), s.induction_steps,
                       s.induction_lr));
  Rng data(seed + 100);
  const auto started = std::chrono::steady_clock::now();
  for (int64_t step = 0; step < s.induction_steps; ++step) {
    const Repeated batch = repeated_sequences(32, length, vocab, data);
    trainer.step(
        [&] { return cross_entropy(model.forward(shifted(batch.ids, 0)), shifted(batch.ids, 1)); });
  }
  // Held-out sequences: the loss before and in the second copy, and every head's attention.
  Rng held_out(seed + 200);
  const Repeated test = repeated_sequences(128, length, vocab, held_out);
  NoGrad no_grad;
  for (auto& layer : model.layers) layer->record_attention = true;
  const Tensor logits = model.forward(shifted(test.ids, 0));
  const InductionMeasures m =
      measure(logits, test, {model.layers[0]->last_attention, model.layers[1]->last_attention});
  fmt::print(
      "  {} steps ({:.0f} s); held-out loss before the second copy {:.3f} nats (ln {} = "
      "{:.3f}), in it {:.3f}\n\n",
      s.induction_steps, seconds_since(started), m.loss_before, vocab, std::log(double(vocab)),
      m.loss_repeated);
  fmt::print("  {:<8} {:>6} {:>15} {:>11}\n", "layer", "head", "previous token", "induction");
  size_t best = heads;
  for (size_t i = 0; i < m.previous.size(); ++i) {
    fmt::print("  {:<8} {:>6} {:>15.3f} {:>11.3f}\n", i / heads + 1, i % heads + 1, m.previous[i],
               m.induction[i]);
    if (i >= static_cast<size_t>(heads) && m.induction[i] > m.induction[best]) best = i;
  }
  // The picture: the induction head's attention on one held-out sequence.
  const Tensor& a = model.layers[1]->last_attention;
  const int64_t t = length - 1, head = static_cast<int64_t>(best) - heads;
  std::vector<float> one(a.data() + head * t * t, a.data() + (head + 1) * t * t);
  std::vector<std::string> labels;
  for (int64_t i = 0; i < t; ++i) labels.push_back(std::to_string(test.ids.data()[i]));
  save_png(viz::heatmap(one, t, t,
                        {.title = fmt::format("layer 2, head {}: an induction head (segment of {})",
                                              head + 1, test.segment.front()),
                         .row_labels = labels,
                         .col_labels = labels,
                         .value_label = "attention weight"}),
           s.out + "/induction_head.png");
  if (s.quick) return;
  check(m.loss_repeated < 0.1 * m.loss_before,
        "the second copy's loss is below a tenth of the loss before it: the model copies");
  check(m.induction[best] > 0.5,
        fmt::format("head {} of layer 2 puts {:.2f} of its attention, on average, on the token "
                    "after the earlier occurrence of the current one: an induction head",
                    head + 1, m.induction[best]));
}

// ---- 5. The same task both ways ----

struct ToyData {
  std::unique_ptr<data::Tokenizer> tokenizer;
  std::vector<data::Pair> train, dev;
  std::vector<std::string> dev_targets;
};

ToyData toy_data(uint64_t seed, int64_t dev_count) {
  Rng rng(seed);
  const data::ToyCorpus corpus = data::generate_toy_corpus({}, rng);
  const data::SentencePairsFile train = data::sentence_pairs_of(corpus.train, "toy train");
  data::SentencePairsFile dev = data::sentence_pairs_of(corpus.dev, "toy dev");
  dev.pairs.resize(static_cast<size_t>(dev_count));
  ToyData toy;
  // As `transformer train --task toy-translation` does: one byte-pair vocabulary for both sides.
  toy.tokenizer = training::learn_tokenizer(training::TokenizerKind::Bpe, 0, train);
  toy.train = data::encode_pairs(*toy.tokenizer, train);
  toy.dev = data::encode_pairs(*toy.tokenizer, dev);
  for (const data::SentencePair& p : dev.pairs) toy.dev_targets.push_back(p.target);
  return toy;
}

// [snippet: one-sequence]
// A pair as one sequence for the decoder alone: bos, the source (which ends with eos, here the
// separator), then the target's tokens and its eos. The model is scored only on the target:
// the positions that predict the source or the separator are padding to the loss.
data::Pair as_one_sequence(const data::Pair& pair) {
  data::Pair joined;
  joined.tgt = {pair.tgt.front()};  // bos
  joined.tgt.insert(joined.tgt.end(), pair.src.begin(), pair.src.end());
  joined.tgt.insert(joined.tgt.end(), pair.tgt.begin() + 1, pair.tgt.end());
  return joined;
}

data::Batch one_sequence_batch(std::span<const data::Pair> pairs) {
  std::vector<data::Pair> joined;
  for (const data::Pair& p : pairs) joined.push_back(as_one_sequence(p));
  data::Batch batch = data::make_batch(joined);
  const int64_t t = batch.tgt_out.shape()[1];
  for (size_t b = 0; b < pairs.size(); ++b)
    for (size_t i = 0; i < pairs[b].src.size(); ++i)  // the source and the separator
      batch.tgt_out.data()[static_cast<int64_t>(b) * t + static_cast<int64_t>(i)] = data::kPad;
  batch.target_tokens = 0;
  for (int64_t i = 0; i < batch.tgt_out.numel(); ++i)
    batch.target_tokens += batch.tgt_out.data()[i] != data::kPad;
  return batch;
}
// [/snippet]

// Greedy translations by the decoder alone: each source (with its eos) is the prompt, and the
// model continues it until it writes eos.
std::vector<std::string> translate_one_sequence(Transformer& model,
                                                const data::Tokenizer& tokenizer,
                                                std::span<const data::Pair> pairs) {
  std::vector<std::string> out;
  for (const data::Pair& p : pairs) {
    Rng unused(1);  // top-k 1 draws nothing at random
    const TokenIds ids =
        sample(model, p.src, {.length = 48, .top_k = 1, .stop_at_eos = true}, unused).front();
    out.push_back(tokenizer.decode(ids));
  }
  return out;
}

double bleu_of(std::span<const std::string> hypotheses, std::span<const std::string> references) {
  return data::corpus_bleu(hypotheses, references).score;
}

// The share of attention that the target's positions give to the source's (bos, the source and
// the separator), teacher forced, averaged over the dev pairs: per layer and head, and what a
// head that spread its attention evenly over the positions before it would give.
struct SourceShare {
  std::vector<std::vector<double>> by_head;  // [layer][head]
  double even = 0.0;
  std::pair<double, double> head_range() const {
    double low = 1.0, high = 0.0;
    for (const auto& heads : by_head)
      for (const double x : heads) low = std::min(low, x), high = std::max(high, x);
    return {low, high};
  }
  std::vector<double> by_layer() const {
    std::vector<double> mean;
    for (const auto& heads : by_head)
      mean.push_back(std::accumulate(heads.begin(), heads.end(), 0.0) /
                     static_cast<double>(heads.size()));
    return mean;
  }
};

SourceShare attention_on_source(Transformer& model, std::span<const data::Pair> pairs) {
  nn::EvalScope eval(model);
  nn::RecordingAttention recording(model.attention_modules());
  NoGrad no_grad;
  const auto layers = model.decoder.layers.size();
  const auto heads = static_cast<size_t>(model.config.heads);
  SourceShare share{.by_head = std::vector(layers, std::vector<double>(heads, 0.0))};
  int64_t queries = 0;
  for (const data::Pair& p : pairs) {
    const data::Pair joined = as_one_sequence(p);
    const auto t = static_cast<int64_t>(joined.tgt.size()) - 1;
    model.forward(IndexTensor::from({1, t}, {joined.tgt.begin(), joined.tgt.end() - 1}));
    const auto source_end = static_cast<int64_t>(p.src.size()) + 1;  // bos and the source
    const std::vector<Tensor> maps = model.attention(AttentionKind::DecoderSelf);
    for (size_t layer = 0; layer < layers; ++layer)
      for (size_t h = 0; h < heads; ++h)
        for (int64_t q = source_end; q < t; ++q)
          for (int64_t k = 0; k < source_end; ++k)
            share.by_head[layer][h] +=
                maps[layer].data()[(static_cast<int64_t>(h) * t + q) * t + k];
    for (int64_t q = source_end; q < t; ++q)
      share.even += static_cast<double>(source_end) / static_cast<double>(q + 1);
    queries += t - source_end;
  }
  for (auto& layer : share.by_head)
    for (double& x : layer) x /= static_cast<double>(queries);
  share.even /= static_cast<double>(queries);
  return share;
}

// One dev pair read by the decoder alone: the attention of one head, with the source, the
// separator and the target along both axes.
void draw_across_separator(const Setup& s, Transformer& model, const data::Tokenizer& tokenizer,
                           const data::Pair& pair, int64_t layer, int64_t head) {
  const data::Pair joined = as_one_sequence(pair);
  const auto t = static_cast<int64_t>(joined.tgt.size()) - 1;
  nn::EvalScope eval(model);
  nn::RecordingAttention recording(model.attention_modules());
  NoGrad no_grad;
  model.forward(IndexTensor::from({1, t}, {joined.tgt.begin(), joined.tgt.end() - 1}));
  const Tensor a = model.attention(AttentionKind::DecoderSelf)[static_cast<size_t>(layer)];
  const std::vector<float> one(a.data() + head * t * t, a.data() + (head + 1) * t * t);
  std::vector<std::string> read, next;
  for (int64_t i = 0; i < t; ++i) {
    read.push_back(tokenizer.label(joined.tgt[static_cast<size_t>(i)]));
    next.push_back(tokenizer.label(joined.tgt[static_cast<size_t>(i + 1)]));
  }
  save_png(viz::heatmap(
               one, t, t,
               {.title = fmt::format("the decoder alone, layer {}, head {}", layer + 1, head + 1),
                .row_labels = next,
                .col_labels = read,
                .row_axis = "predicts",
                .col_axis = "reads",
                .value_label = "attention weight"}),
           s.out + "/across_the_separator.png");
}

// The number of decoder-alone layers that brings the model closest to `target` parameters.
int64_t layers_closest_in_size(const TransformerConfig& alone, int64_t target) {
  const auto gap = [&](int64_t layers) {
    TransformerConfig c = alone;
    c.decoder_layers = layers;
    Rng r(1);
    return std::abs(Transformer(c, r).parameter_count() - target);
  };
  int64_t closest = 1;
  for (int64_t n = 2; n <= 8; ++n)
    if (gap(n) < gap(closest)) closest = n;
  return closest;
}

struct BothCurves {
  viz::Series pair{.name = "encoder-decoder"}, alone{.name = "decoder alone"};
  double pair_seconds = 0.0, alone_seconds = 0.0;
};

// Trains both models on the same batches, and measures both models' dev BLEU six times (once,
// at the end, with --quick).
BothCurves train_both(const Setup& s, const ToyData& toy, uint64_t seed, Transformer& pair,
                      Transformer& alone) {
  const float peak = 2e-3f;
  const auto trainer_for = [&](Transformer& m) {
    return training::Trainer(nn::Optimizer(m.named_parameters(), nn::AdamConfig{.lr = peak}),
                             training::cosine(std::max<int64_t>(1, s.translation_steps / 10),
                                              s.translation_steps, peak));
  };
  training::Trainer pair_trainer = trainer_for(pair), alone_trainer = trainer_for(alone);
  Rng batches(seed + 300);
  const int64_t every = s.quick ? s.translation_steps : s.translation_steps / 6;
  BothCurves curves;
  for (int64_t step = 1; step <= s.translation_steps; ++step) {
    std::vector<data::Pair> drawn;  // the same 32 pairs for both
    for (int i = 0; i < 32; ++i)
      drawn.push_back(toy.train[static_cast<size_t>(batches.below(std::ssize(toy.train)))]);
    const data::Batch both = data::make_batch(drawn), one = one_sequence_batch(drawn);
    auto started = std::chrono::steady_clock::now();
    pair_trainer.step([&] { return training::teacher_forced_loss(pair, both); });
    curves.pair_seconds += seconds_since(started);
    started = std::chrono::steady_clock::now();
    alone_trainer.step([&] { return training::teacher_forced_loss(alone, one); });
    curves.alone_seconds += seconds_since(started);
    if (step % every == 0 || step == s.translation_steps) {
      std::vector<std::vector<int32_t>> sources;
      for (const data::Pair& p : toy.dev) sources.push_back(p.src);
      std::vector<std::string> pair_out;
      for (const TokenIds& ids : training::decode_corpus(pair, sources))
        pair_out.push_back(toy.tokenizer->decode(ids));
      const auto alone_out = translate_one_sequence(alone, *toy.tokenizer, toy.dev);
      curves.pair.xs.push_back(static_cast<float>(step));
      curves.pair.ys.push_back(static_cast<float>(bleu_of(pair_out, toy.dev_targets)));
      curves.alone.xs.push_back(static_cast<float>(step));
      curves.alone.ys.push_back(static_cast<float>(bleu_of(alone_out, toy.dev_targets)));
    }
  }
  return curves;
}

void print_curves(const BothCurves& curves, size_t dev_pairs) {
  fmt::print("\n  dev BLEU (greedy, {} dev pairs) after each {} steps:\n", dev_pairs,
             static_cast<int64_t>(curves.pair.xs.front()));
  fmt::print("  {:<18}", "step");
  for (const float x : curves.pair.xs) fmt::print(" {:>6.0f}", x);
  fmt::print("\n");
  for (const viz::Series* c : {&curves.pair, &curves.alone}) {
    fmt::print("  {:<18}", c->name);
    for (const float y : c->ys) fmt::print(" {:>6.1f}", y);
    fmt::print("\n");
  }
  fmt::print("  training time: encoder-decoder {:.1f} s, decoder alone {:.1f} s\n",
             curves.pair_seconds, curves.alone_seconds);
}

// Prints the share of attention on the source by layer and head; returns the layer and head
// that look at the source most.
std::pair<int64_t, int64_t> print_source_share(const SourceShare& share, int64_t heads) {
  const std::vector<double> by_layer = share.by_layer();
  fmt::print(
      "\n  the decoder alone: the share of the target positions' attention on the source "
      "(an even spread over the positions before each would give {:.2f})\n",
      share.even);
  fmt::print("  {:<8} {:>7}   heads 1 to {}\n", "layer", "mean", heads);
  for (size_t l = 0; l < share.by_head.size(); ++l) {
    fmt::print("  {:<8} {:>7.2f}  ", l + 1, by_layer[l]);
    for (const double x : share.by_head[l]) fmt::print(" {:.2f}", x);
    fmt::print("\n");
  }
  int64_t best_layer = 0, best_head = 0;
  for (size_t l = 0; l < share.by_head.size(); ++l)
    for (size_t h = 0; h < share.by_head[l].size(); ++h)
      if (share.by_head[l][h] >
          share.by_head[static_cast<size_t>(best_layer)][static_cast<size_t>(best_head)]) {
        best_layer = static_cast<int64_t>(l);
        best_head = static_cast<int64_t>(h);
      }
  return {best_layer, best_head};
}

void both_ways(const Setup& s, uint64_t seed, Checks& check) {
  const ToyData toy = toy_data(seed, s.quick ? 8 : 100);
  const auto v = static_cast<int64_t>(toy.tokenizer->size());
  TransformerConfig pair_config{.vocab_size = v, .d_model = 64, .d_ff = 256, .heads = 4};
  pair_config.encoder_layers = pair_config.decoder_layers = 2;
  pair_config.max_len = 96;
  pair_config.dropout = 0.0f;
  Rng rng(seed);
  Transformer pair(pair_config, rng);
  TransformerConfig alone_config = pair_config;
  alone_config.encoder_layers = 0;
  alone_config.decoder_layers = layers_closest_in_size(alone_config, pair.parameter_count());
  Transformer alone(alone_config, rng);
  fmt::print(
      "  the encoder-decoder, 2+2 layers: {:L} parameters; the decoder alone, {} layers: "
      "{:L}\n",
      pair.parameter_count(), alone_config.decoder_layers, alone.parameter_count());
  check(std::abs(alone.parameter_count() - pair.parameter_count()) < pair.parameter_count() / 10,
        "the two models' sizes are within 10% of each other");

  const SourceShare untrained = attention_on_source(alone, toy.dev);
  const BothCurves curves = train_both(s, toy, seed, pair, alone);
  print_curves(curves, toy.dev.size());
  save_png(viz::line_plot(
               {curves.pair, curves.alone},
               {.title = "the toy translation both ways: dev BLEU (greedy)", .y_label = "BLEU"}),
           s.out + "/both_ways.png");

  const SourceShare share = attention_on_source(alone, toy.dev);
  const auto [best_layer, best_head] = print_source_share(share, alone.config.heads);
  const auto [low, high] = share.head_range();
  const auto [untrained_low, untrained_high] = untrained.head_range();
  fmt::print("  over the heads, from {:.2f} to {:.2f}; before training, from {:.2f} to {:.2f}\n",
             low, high, untrained_low, untrained_high);
  draw_across_separator(s, alone, *toy.tokenizer, toy.dev.front(), best_layer, best_head);
  if (s.quick) return;
  const float pair_bleu = curves.pair.ys.back(), alone_bleu = curves.alone.ys.back();
  check(pair_bleu > 80 && alone_bleu > 80,
        fmt::format("both translate the toy language: dev BLEU {:.1f} and {:.1f} after {} steps",
                    pair_bleu, alone_bleu, s.translation_steps));
  check(high - low > 2 * (untrained_high - untrained_low),
        "training spreads the heads apart: some look at the source more than an even spread "
        "would, others at the target written so far, over more than twice the range they had "
        "before training");
}
}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"Lesson 13: the decoder alone"};
  LessonFlags flags(app, "13_decoder_only", "small models for a few steps",
                    "seed of the models' initial weights");
  Setup s;
  app.add_option("--data", s.data_dir, "where scripts/corpus.py wrote the corpus: <data>/fortunes/")
      ->capture_default_str();
  app.add_option("--induction-steps", s.induction_steps, "training steps of section 4's model")
      ->capture_default_str();
  app.add_option("--induction-lr", s.induction_lr, "its peak learning rate")->capture_default_str();
  app.add_flag("--only-induction", s.only_induction, "run section 4 alone");
  CLI11_PARSE(app, argc, argv);
  s.quick = flags.quick;
  s.out = flags.out();
  if (s.quick) {
    s.lm_steps = 4;
    s.induction_steps = 10;
    s.translation_steps = 4;
    s.samples = 2;
  }

  Checks check;
  const auto start = std::chrono::steady_clock::now();
  try {
    std::filesystem::create_directories(s.out);
    if (s.only_induction) {
      banner("4. What attention learns: an induction head");
      induction_head(s, flags.seed, check);
      return check.summary("lesson 13");
    }
    banner("1. What the decoder alone keeps");
    what_is_left(s, check);

    banner("2. Three checks before trusting a language model");
    const Text text = read_fortunes(s);
    Rng rng(flags.seed);
    Transformer lm(small_lm(text.tokenizer->size()), rng);
    three_checks(s, text, lm, check);

    banner("3. Sampling: temperature, top-k, top-p");
    sampling(s, lm, *text.tokenizer, check);

    banner("4. What attention learns: an induction head");
    induction_head(s, flags.seed, check);

    banner("5. The same task both ways");
    both_ways(s, flags.seed, check);
  } catch (const std::exception& e) {
    fmt::print("\nlesson 13: stopped by an exception: {}\n", e.what());
    return 1;
  }
  fmt::print("\n  total time {:.1f} s\n", seconds_since(start));
  return check.summary("lesson 13");
}
