// Lesson 12: real sentences, and the paper's Table 3 in miniature.
//
// What happens to the model of lessons 02-09 on real sentences that nobody made up: the
// English-German and English-Chinese message catalogs of Debian (docs/corpus.md), some twenty
// thousand short pairs each instead of the paper's 4.5 million? The program trains the recipe
// of training/recipe.h and one variation of it per row, each for the same time budget,
// scores every run on the same dev pairs (BLEU, chrF, perplexity), and prints them as a
// table like the paper's Table 3. It draws each run's learning curve and the cross-attention
// of a real sentence pair, and checks what the table shows clearly.
// README.md is the text that walks through this file. Every claim is checked; a failed check
// makes the program exit with 1.
//
// Shape legend: B batch, S source length, T target length, D d_model, H heads, V vocabulary.
#include <fmt/format.h>

#include <CLI/CLI.hpp>
#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <exception>
#include <filesystem>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "autograd/random.h"
#include "autograd/tensor.h"
#include "data/batch_source.h"
#include "data/parallel_corpus.h"
#include "data/sentence_pairs.h"
#include "data/tokenizer.h"
#include "data/vocab.h"
#include "lessons/lesson.h"
#include "models/transformer.h"
#include "nn/optim.h"
#include "training/budget.h"
#include "training/evaluate.h"
#include "training/loop.h"
#include "training/recipe.h"
#include "training/run_page.h"
#include "training/trainer.h"
#include "viz/heatmap.h"
#include "viz/line_plot.h"

using namespace gf;
using namespace gf::lessons;

namespace {

const std::string kDir = "/12_real_sentences/";

// The two corpora of scripts/corpus.py, English on the source side of both.
struct Language {
  std::string code;  // the folder under --data: de/ or zh_CN/
  std::string name;
};
const std::vector<Language> kLanguages = {{"de", "English to German"},
                                          {"zh_CN", "English to Chinese"}};

// What a run is made of; --quick shrinks it.
struct Setup {
  bool quick = false;
  std::string data_dir;
  double seconds = 0.0;      // the training budget of every row (full run)
  int64_t quick_steps = 0;   // --quick: every row takes this many steps instead
  int64_t train_every = 1;   // keep every n-th training pair (--quick: fewer, so BPE is fast)
  int64_t dev_pairs = 0;     // spread over the dev set: BLEU, chrF and perplexity on them
  int64_t curve_points = 0;  // dev perplexity this many times during each run
  bool every_row = false;    // the second language trains every row too, not only the core ones
  uint64_t seed = 1;
};

Setup make_setup(bool quick, double seconds, const std::string& data_dir) {
  if (quick)
    return {.quick = true,
            .data_dir = data_dir,
            .quick_steps = 12,
            .train_every = 12,
            .dev_pairs = 24,
            .curve_points = 2};
  return {.data_dir = data_dir, .seconds = seconds, .dev_pairs = 500, .curve_points = 5};
}

// What one row changes: the model, the byte-pair vocabulary and the loss.
struct Variant {
  TransformerConfig model;
  int64_t vocab_size = 0;
  float label_smoothing = 0.0f;
};

// A row of the table: its name, the row of the paper's Table 3 it stands for, and its change
// to the recipe.
struct Row {
  std::string name;
  std::string table3;  // "(A)" ... "(E)", "base", or "" when the paper has no such row
  std::function<void(Variant&)> change;
  // The rows --quick trains, and the only ones the second language trains unless --every-row.
  bool core = false;
  // A change that costs no more arithmetic per step (the heads, dropout, the loss, positions,
  // where the norm goes): the row takes the base row's number of steps, and so sees the same
  // batches in the same order. The model sizes and the vocabularies are timed for steps of
  // their own.
  bool base_cost = false;
};

// The byte-pair vocabulary with `merges` times the recipe's merges: one token per character
// of the corpus (specials and bytes included) and then the merges, rounded up to a hundred.
int64_t vocab_with(const training::CorpusFacts& facts, int64_t recipe_vocab, double merges) {
  const int64_t base = data::kNumSpecial + 256 + facts.characters;
  const auto scaled =
      static_cast<int64_t>(std::lround(merges * static_cast<double>(recipe_vocab - base)));
  return (base + scaled + 99) / 100 * 100;
}

// [snippet: rows]
std::vector<Row> table_rows(const training::CorpusFacts& facts,
                            const training::TextRecipe& recipe) {
  const int64_t d = recipe.model.d_model;
  const auto heads = [d](int64_t h) {  // the heads split d_model: d_k = d_model / h
    return Row{.name = fmt::format("{} head{}, d_k = {}", h, h > 1 ? "s" : "", d / h),
               .table3 = "(A)",
               .change = [h](Variant& v) { v.model.heads = h; },
               .base_cost = true};  // the same multiply-adds, as the paper's rows (A) keep
  };

  const auto model_width = [](int64_t width) {
    return Row{fmt::format("d_model {}, d_ff {}", width, 4 * width), "(C)", [width](Variant& v) {
                 v.model.d_model = width;
                 v.model.d_ff = 4 * width;
               }};
  };
  const auto dropout = [](float p) {
    return Row{fmt::format("dropout {}", p), "(D)", [p](Variant& v) {
                 v.model.dropout = p;
               }};
  };
  const auto merges = [&facts, &recipe](double m, const std::string& name) {
    return Row{"BPE: " + name, "", [m, &facts, &recipe](Variant& v) {
                 v.vocab_size = vocab_with(facts, recipe.vocab_size, m);
               }};
  };
  const auto same_cost = [](Row row) {
    row.base_cost = true;
    return row;
  };
  std::vector<Row> rows = {{"base: the recipe", "base", [](Variant&) {}, true},
                           heads(1),
                           heads(8),
                           heads(16),
                           model_width(64),
                           model_width(256),
                           same_cost(dropout(0.0f)),
                           same_cost(dropout(0.3f)),
                           same_cost({"no label smoothing", "(D)",
                                      [](Variant& v) {
                                        v.label_smoothing = 0.0f;
                                      }}),
                           merges(0.25, "a quarter of the merges"),
                           merges(2.0, "twice the merges"),
                           same_cost({"learned positions", "(E)",
                                      [](Variant& v) { v.model.learned_positions = true; }, true}),
                           same_cost({"post-norm (the paper's)", "",
                                      [](Variant& v) { v.model.norm_first = false; }, true})};
  rows[1].core = true;          // 1 head
  rows[3].table3 = "(A), (B)";  // the smallest d_k
  return rows;
}
// [/snippet]

// A vocabulary and the pairs encoded with it; each row's vocabulary is learned once.
struct Encoded {
  std::unique_ptr<data::BpeTokenizer> tokenizer;
  std::vector<data::Pair> train, dev;
};

struct Corpus {
  Language language{};
  data::SentencePairsFile train{}, dev{};  // dev: the dev_pairs spread over the dev set
  training::CorpusFacts facts{};
  training::TextRecipe recipe{};
  std::map<int64_t, Encoded> encoded{};  // by vocabulary size
  int64_t base_steps = 0;                // the base row's, for the rows of the same cost

  const Encoded& with_vocab(int64_t vocab_size) {
    auto [at, is_new] = encoded.try_emplace(vocab_size);
    if (!is_new) return at->second;
    // One vocabulary for both languages (§5.1), learned from both sides of the training pairs.
    std::vector<std::string> texts;
    for (const data::SentencePair& p : train.pairs) {
      texts.push_back(p.source);
      texts.push_back(p.target);
    }
    Encoded& e = at->second;
    e.tokenizer = std::make_unique<data::BpeTokenizer>(
        data::BpeTokenizer::learn(texts, {.vocab_size = static_cast<int32_t>(vocab_size)}));
    e.train = data::encode_pairs(*e.tokenizer, train);
    e.dev = data::encode_pairs(*e.tokenizer, dev);
    return e;
  }
};

// Every n-th pair of the file, and `count` pairs spread evenly over it (the catalogs are
// sorted by their English side, so the first pairs all start alike).
data::SentencePairsFile every(const data::SentencePairsFile& file, size_t n) {
  data::SentencePairsFile kept;
  kept.name = file.name;
  for (size_t i = 0; i < file.pairs.size(); i += n) kept.pairs.push_back(file.pairs[i]);
  return kept;
}
data::SentencePairsFile spread(const data::SentencePairsFile& file, size_t count) {
  data::SentencePairsFile kept;
  kept.name = file.name;
  count = std::min(count, file.pairs.size());
  for (size_t i = 0; i < count; ++i)
    kept.pairs.push_back(file.pairs[i * file.pairs.size() / count]);
  return kept;
}

Corpus read_corpus(const Setup& s, const Language& language) {
  const std::filesystem::path dir = std::filesystem::path(s.data_dir) / language.code;
  if (!std::filesystem::exists(dir / "train.tsv"))
    throw std::invalid_argument(fmt::format(
        "no corpus in {}: make it first with `python3 scripts/corpus.py de zh_CN --out {}` "
        "(docs/corpus.md), or say where it is with --data",
        dir.string(), s.data_dir));
  Corpus c{.language = language};
  const data::SentencePairsFile all = data::read_sentence_pairs(dir / "train.tsv");
  c.train = every(all, static_cast<size_t>(s.train_every));
  c.dev = spread(data::read_sentence_pairs(dir / "dev.tsv"), static_cast<size_t>(s.dev_pairs));
  // The recipe is the one `transformer train` picks for the whole corpus.
  c.facts = training::corpus_facts(all);
  c.recipe = training::text_recipe(c.facts).value();
  if (s.quick) {  // a small model on the kept pairs, in seconds
    c.recipe.model = {.d_model = 32,
                      .d_ff = 64,
                      .heads = 4,
                      .encoder_layers = 1,
                      .decoder_layers = 1,
                      .max_len = 256,
                      .dropout = 0.1f,
                      .norm_first = true};
    c.recipe.vocab_size = vocab_with(training::corpus_facts(c.train), 0, 0.0) + 200;
    c.recipe.batch_tokens = 300;
  }
  return c;
}

// ---- One row: train for the budget, then score ------------------------------------------

struct CurvePoint {
  double seconds = 0.0;  // of training steps, checks not counted
  double perplexity = 0.0;
};

struct RowResult {
  std::string name{}, table3{};
  Variant variant{};
  int64_t parameters = 0, steps = 0;
  double seconds = 0.0;  // training steps only
  double epochs = 0.0;   // passes over the training pairs
  double perplexity = 0.0, bleu = 0.0, chrf = 0.0;
  double entropy = 0.0;          // of the next-token predictions on the dev pairs, in nats
  bool timed = false;            // its steps came from timing its own model, not from the base row
  std::string bleu_signature{};  // "BLEU = ... tok:zh" names the tokenizer
  std::vector<CurvePoint> curve{};
  std::unique_ptr<Transformer> model{};  // kept for the base row only
};

// [snippet: trainer]
training::Trainer make_trainer(const Transformer& model, int64_t warmup, int64_t steps) {
  // The recipe's rate: a peak of 2e-3 at d_model 128 that falls as 1/sqrt(d_model), warmed up
  // and then brought down to zero at the run's last step along half a cosine.
  const float peak = training::peak_lr_for(model.config.d_model);
  return training::Trainer(nn::Optimizer(model.named_parameters(), nn::AdamConfig{.lr = peak}),
                           training::cosine(warmup, steps, peak), {.check_finite = true});
}
// [/snippet]

// The steps that fit the budget, timed on a stand-in of the same configuration (training/
// budget.h), or --quick's fixed number, so that its output is the same on every machine.
int64_t planned_steps(const Setup& s, const TransformerConfig& config, data::BatchSource& batches,
                      float label_smoothing) {
  if (s.quick) return s.quick_steps;
  // The fastest of three timings: a machine busy with something else for a moment slows one
  // of them, not all three.
  double seconds_per_step = 1e30;
  for (int timing_run = 0; timing_run < 3; ++timing_run) {
    const training::StepTiming timing = training::time_steps(
        config, batches, [](const Transformer& m) { return make_trainer(m, 1, 1000); },
        [label_smoothing](Transformer& m, const data::Batch& b) {
          return training::teacher_forced_loss(m, b, label_smoothing);
        },
        8, 16);
    seconds_per_step = std::min(seconds_per_step, timing.seconds_per_step);
  }
  return training::steps_for_minutes(s.seconds / 60.0,
                                     {.seconds_per_step = seconds_per_step, .timed = 48}, 20);
}

RowResult train_row(const Setup& s, Corpus& corpus, const Row& row) {
  Variant v{.model = corpus.recipe.model,
            .vocab_size = corpus.recipe.vocab_size,
            .label_smoothing = corpus.recipe.label_smoothing};
  row.change(v);
  const Encoded& e = corpus.with_vocab(v.vocab_size);
  v.model.vocab_size = e.tokenizer->size();
  Rng rng(s.seed);
  auto model = std::make_unique<Transformer>(v.model, rng);
  // The batches have a generator of their own: a model that draws more initial values (a
  // learned position table, a wider model) must not change the order its batches come in.
  data::BatchSource batches =
      data::BatchSource::by_length(e.train, corpus.recipe.batch_tokens, Rng(s.seed + 1));
  RowResult r{
      .name = row.name, .table3 = row.table3, .variant = v, .parameters = model->parameter_count()};
  r.timed = !(row.base_cost && corpus.base_steps > 0);
  r.steps = r.timed ? planned_steps(s, v.model, batches, v.label_smoothing) : corpus.base_steps;
  if (row.table3 == "base") corpus.base_steps = r.steps;
  const int64_t warmup = std::clamp<int64_t>(r.steps / 10, 1, corpus.recipe.warmup);
  training::Trainer trainer = make_trainer(*model, warmup, r.steps);
  std::vector<int64_t> check_steps;  // k/points of the way through the run, k = 1 .. points
  for (int64_t k = 1; k <= s.curve_points; ++k) check_steps.push_back(k * r.steps / s.curve_points);
  training::run(
      trainer, [&] { return batches.next(); },
      [&](const data::Batch& b) {
        return training::teacher_forced_loss(*model, b, v.label_smoothing);
      },
      r.steps,
      {.after_step =
           [&](const training::StepRecord& step) {
             r.seconds += step.seconds;
             r.epochs += static_cast<double>(step.sequences) / static_cast<double>(e.train.size());
           },
       .evaluate =
           [&](int64_t step) {
             if (std::ranges::find(check_steps, step) != check_steps.end())
               r.curve.push_back({r.seconds, training::perplexity(*model, e.dev)});
           }});
  r.perplexity = r.curve.back().perplexity;
  r.entropy = training::prediction_entropy(*model, e.dev);
  const training::TranslationScores scores =
      training::score_translations(*model, *e.tokenizer, corpus.dev.pairs);
  r.bleu = scores.bleu.score;
  r.chrf = scores.chrf.score;
  r.bleu_signature = scores.bleu.to_string();
  r.model = std::move(model);
  return r;
}

// ---- The table --------------------------------------------------------------------------

void print_recipe(const Setup& s, const Corpus& c) {
  const TransformerConfig& m = c.recipe.model;
  fmt::print(
      "  {}: {} training pairs ({} words, {} distinct, {} characters), {} dev pairs "
      "scored\n",
      c.language.name, c.facts.pairs, c.facts.words, c.facts.distinct_words, c.facts.characters,
      c.dev.pairs.size());
  if (s.quick)
    fmt::print("  (--quick: every {}th training pair, {} steps per row, a model of d_model {})\n",
               s.train_every, s.quick_steps, m.d_model);
  fmt::print(
      "  the recipe: BPE vocabulary {}, d_model {}, d_ff {}, {} heads, {}+{} layers, "
      "{}, dropout {}, label smoothing {}, {} tokens a batch\n\n",
      c.recipe.vocab_size, m.d_model, m.d_ff, m.heads, m.encoder_layers, m.decoder_layers,
      m.norm_first ? "pre-norm" : "post-norm", m.dropout, c.recipe.label_smoothing,
      c.recipe.batch_tokens);
}

void print_table(const std::vector<RowResult>& results) {
  fmt::print("  {:<8} {:<30} {:>6} {:>7} {:>6} {:>6} {:>7} {:>7} {:>6} {:>6}\n", "paper", "row",
             "vocab", "params", "steps", "epochs", "train", "PPL", "BLEU", "chrF");
  for (const RowResult& r : results)
    fmt::print(
        "  {:<8} {:<30} {:>6} {:>6.2f}M {:>6} {:>6.1f} {:>6.1f}s {:>7.2f} {:>6.2f} {:>6.2f}\n",
        r.table3 == "base" ? "" : r.table3, r.name, r.variant.model.vocab_size,
        static_cast<double>(r.parameters) / 1e6, r.steps, r.epochs, r.seconds, r.perplexity, r.bleu,
        r.chrf);
  fmt::print("\n");
}

std::vector<RowResult> measure_rows(const Setup& s, Corpus& corpus, bool first_language) {
  std::vector<RowResult> results;
  const std::vector<Row> rows = table_rows(corpus.facts, corpus.recipe);
  for (size_t i = 0; i < rows.size(); ++i) {
    if (!rows[i].core && (s.quick || (!first_language && !s.every_row))) continue;
    const auto start = std::chrono::steady_clock::now();
    results.push_back(train_row(s, corpus, rows[i]));
    if (i > 0) results.back().model.reset();  // only the base model is drawn
    fmt::print("  {:<30} {:>5} steps, BLEU {:5.2f}  ({:.0f} s with its checks)\n", rows[i].name,
               results.back().steps, results.back().bleu, seconds_since(start));
    std::fflush(stdout);  // a row takes a minute or more: show it when it is done
  }
  fmt::print("\n");
  return results;
}

const RowResult& row_named(const std::vector<RowResult>& results, const std::string& prefix) {
  for (const RowResult& r : results)
    if (r.name.starts_with(prefix)) return r;
  throw std::logic_error("no row " + prefix);
}

// ---- Pictures ---------------------------------------------------------------------------

// The learning curves, one panel per group of rows that the perplexity compares (the
// vocabulary rows count other tokens, so their perplexities are left out).
void draw_curves(const Setup& s, const Corpus& c, const std::vector<RowResult>& results,
                 const std::string& out_dir) {
  const std::vector<std::pair<std::string, std::vector<std::string>>> groups = {
      {"(A) heads and d_k", {"base", "1 head", "8 heads", "16 heads"}},
      {"(C) model size", {"base", "d_model 64", "d_model 256"}},
      {"(D) dropout and label smoothing", {"base", "dropout 0", "dropout 0.3", "no label"}},
      {"(E) positions, and where the norm goes", {"base", "learned", "post-norm"}}};
  std::vector<viz::Image> panels;
  for (const auto& [title, names] : groups) {
    std::vector<viz::Series> series;
    for (const std::string& name : names) {
      const auto found = std::find_if(results.begin(), results.end(),
                                      [&](const RowResult& r) { return r.name.starts_with(name); });
      if (found == results.end()) continue;  // not trained on this language
      viz::Series line{.name = found->name};
      for (const CurvePoint& p : found->curve) {
        line.xs.push_back(static_cast<float>(p.seconds));
        line.ys.push_back(static_cast<float>(p.perplexity));
      }
      series.push_back(std::move(line));
    }
    if (series.size() < 2) continue;  // a row this language did not train
    panels.push_back(viz::line_plot(series, {.title = title,
                                             .x_label = "seconds of training",
                                             .y_label = "dev perplexity",
                                             .log_y = true,
                                             .width = 520,
                                             .height = 380}));
  }
  const std::string path = out_dir + kDir + c.language.code + "_curves.png";
  save_png(viz::grid(panels, 2,
                     fmt::format("{}: dev perplexity while training, {} each", c.language.name,
                                 s.quick ? fmt::format("{} steps", s.quick_steps)
                                         : fmt::format("{:.0f} s", s.seconds))),
           path);
}

// The dev pair the base model translates best (chrF) among those of 6 to 10 English words.
size_t pair_to_draw(Transformer& model, const Corpus& c, const Encoded& e) {
  size_t best = 0;
  double best_chrf = -1.0;
  for (size_t i = 0; i < c.dev.pairs.size(); ++i) {
    const data::SentencePair& p = c.dev.pairs[i];
    const auto words = std::ranges::count(p.source, ' ') + 1;
    if (words < 6 || words > 10) continue;
    const training::TranslationScores one =
        training::score_translations(model, *e.tokenizer, std::span(&p, 1));
    if (one.chrf.score > best_chrf) {
      best_chrf = one.chrf.score;
      best = i;
    }
  }
  return best;
}

void draw_cross_attention(Corpus& c, const RowResult& base, const std::string& out_dir) {
  Transformer& model = *base.model;
  const Encoded& e = c.with_vocab(base.variant.vocab_size);
  const size_t i = pair_to_draw(model, c, e);
  const data::SentencePair& p = c.dev.pairs[i];
  const std::vector<std::string> output =
      training::translate_texts(model, *e.tokenizer, std::span(&p.source, 1));
  fmt::print("  dev pair: {}\n  reference: {}\n  base model: {}\n\n", p.source, p.target,
             output[0]);
  const viz::AttentionMaps maps = training::attention_maps(
      model, e.dev[i].src, e.dev[i].tgt, training::token_names(e.tokenizer.get(), model.config));
  const auto& last = maps.cross.back();  // [head] -> T x S values, the last decoder layer
  std::vector<viz::Image> panels;
  for (size_t h = 0; h < last.size(); ++h)
    panels.push_back(viz::heatmap(last[h], std::ssize(maps.target_next),
                                  std::ssize(maps.source_tokens),
                                  {.title = fmt::format("head {}", h + 1),
                                   .row_labels = maps.target_next,
                                   .col_labels = maps.source_tokens,
                                   .row_axis = "target (the token it predicts)",
                                   .col_axis = "source",
                                   .colour_bar = h + 1 == last.size()}));
  save_png(viz::grid(panels, 2,
                     fmt::format("{}: cross-attention of the base model's last decoder layer",
                                 c.language.name)),
           out_dir + kDir + c.language.code + "_cross_attention.png");
}

// ---- What the rows show -----------------------------------------------------------------

// Claims that hold in --quick as in the full run: what each row changes.
void check_costs(const Corpus& c, const std::vector<RowResult>& results, Checks& check) {
  const RowResult& base = row_named(results, "base");
  const RowResult& one_head = row_named(results, "1 head");
  const RowResult& learned = row_named(results, "learned");
  check(one_head.parameters == base.parameters,
        fmt::format("{}: 1 head of d_k = {} has the parameters of {} heads of {} ({}): the heads "
                    "split d_model, they do not add to it",
                    c.language.code, base.variant.model.d_model, base.variant.model.heads,
                    base.variant.model.d_model / base.variant.model.heads, base.parameters));
  const int64_t table = base.variant.model.max_len * base.variant.model.d_model;
  check(learned.parameters - base.parameters == table,
        fmt::format("{}: learned positions add one table of max_len x d_model = {} parameters",
                    c.language.code, table));
  bool learned_something = true;
  for (const RowResult& r : results)
    learned_something = learned_something && std::isfinite(r.perplexity) &&
                        r.perplexity < static_cast<double>(r.variant.model.vocab_size);
  check(learned_something,
        fmt::format("{}: every row ends with a dev perplexity below its vocabulary size (a "
                    "uniform guess)",
                    c.language.code));
  const bool chinese = c.language.code == "zh_CN";
  const std::string tokenize = chinese ? "tok:zh" : "tok:13a";
  check(base.bleu_signature.ends_with(tokenize),
        fmt::format("{}: BLEU is counted {} ({})", c.language.code,
                    chinese ? "on characters for Chinese" : "on words for German", tokenize));
}

std::vector<RowResult> one_language(const Setup& s, int section, const Language& language,
                                    const std::string& out_dir, Checks& check) {
  banner(fmt::format("{}. {}", section, language.name).c_str());
  Corpus corpus = read_corpus(s, language);
  print_recipe(s, corpus);
  std::vector<RowResult> results = measure_rows(s, corpus, section == 1);
  print_table(results);
  check_costs(corpus, results, check);
  draw_curves(s, corpus, results, out_dir);
  draw_cross_attention(corpus, results.front(), out_dir);
  return results;
}

// The conclusions, from the full run only: --quick's rows have not learned enough to differ.
// Each compares perplexities on the same dev pairs and the same tokens (the vocabulary rows
// are compared by chrF, which counts characters), and names the steps each row could afford.
void budget_and_size(const Setup& s, const std::vector<RowResult>& de, Checks& check) {
  // The rows that take the base row's steps take whatever those steps cost them (without
  // dropout masks a step is cheaper); the timed ones are what the timing is checked on.
  bool on_budget = true;
  for (const RowResult& r : de)
    if (r.timed)
      on_budget = on_budget && r.seconds > 0.7 * s.seconds && r.seconds < 1.3 * s.seconds;
  check.timing(on_budget, fmt::format("every row timed for steps of its own (the base, the sizes, "
                                      "the vocabularies) trained for {:.0f} s, give or take 30%",
                                      s.seconds));
  const RowResult &base = row_named(de, "base"), &small = row_named(de, "d_model 64"),
                  &big = row_named(de, "d_model 256");
  check(big.perplexity > base.perplexity && base.perplexity > small.perplexity,
        fmt::format("(C) on the same budget the smaller model is ahead: perplexity {:.1f} at "
                    "d_model 64 ({} steps), {:.1f} at 128 ({} steps), {:.1f} at 256 ({} steps). "
                    "The paper's bigger-is-better holds for models trained to the end",
                    small.perplexity, small.steps, base.perplexity, base.steps, big.perplexity,
                    big.steps));
}

void regularisation(const std::vector<RowResult>& de, Checks& check) {
  const RowResult &base = row_named(de, "base"), &none = row_named(de, "dropout 0"),
                  &more = row_named(de, "dropout 0.3"), &sharp = row_named(de, "no label");
  check(none.perplexity < base.perplexity && base.perplexity < more.perplexity,
        fmt::format("(D) in a run this short, dropout only costs: perplexity {:.1f} with dropout "
                    "0, {:.1f} with 0.1, {:.1f} with 0.3, after {:.1f} passes over the training "
                    "pairs",
                    none.perplexity, base.perplexity, more.perplexity, base.epochs));
  // The paper: label smoothing "hurts perplexity, as the model learns to be more unsure". The
  // second half is what it does to every prediction, so that is what is checked; the perplexity
  // is the net of that and of a better fit, and in a run this short goes either way.
  check(base.entropy > sharp.entropy,
        fmt::format("(D) label smoothing makes the model more unsure (§5.4): its predictions' "
                    "mean entropy is {:.2f} nats with it, {:.2f} without (perplexity {:.1f} with "
                    "it, {:.1f} without)",
                    base.entropy, sharp.entropy, base.perplexity, sharp.perplexity));
}

void both_languages(const std::vector<RowResult>& de, const std::vector<RowResult>& zh,
                    Checks& check) {
  for (const std::vector<RowResult>* results : {&de, &zh}) {
    const std::string language = results == &de ? "German" : "Chinese";
    const RowResult &base = row_named(*results, "base"), &post = row_named(*results, "post-norm");
    // The heads: in the runs made for this lesson, one head ended behind four in some and ahead
    // in others, as the timing gave the base a few more or fewer steps. What held in every run
    // is that they end close, so that is what is checked.
    double farthest = 0.0;
    std::string heads;
    for (const RowResult& r : *results) {
      if (!r.table3.starts_with("(A)")) continue;
      farthest = std::max(farthest, std::abs(r.perplexity / base.perplexity - 1.0));
      heads += fmt::format("{}{} {:.1f}", heads.empty() ? "" : ", ",
                           r.name.substr(0, r.name.find(',')), r.perplexity);
    }
    check(farthest < 0.25,
          fmt::format("(A) {}: at the same cost the number of heads moves the perplexity by less "
                      "than a quarter: {} against {:.1f} with {}",
                      language, heads, base.perplexity, base.variant.model.heads));
    const RowResult& learned = row_named(*results, "learned");
    check(learned.perplexity < base.perplexity,
          fmt::format("(E) {}: learned positions are ahead of the sinusoids at this budget "
                      "(perplexity {:.1f} against {:.1f}); the paper, after 100,000 steps, found "
                      "them nearly identical",
                      language, learned.perplexity, base.perplexity));
    check(post.perplexity > base.perplexity,
          fmt::format("{}: at the recipe's rate, post-norm (the paper's) is behind pre-norm "
                      "(perplexity {:.1f} against {:.1f})",
                      language, post.perplexity, base.perplexity));
  }
}

void vocabulary(const std::vector<RowResult>& de, Checks& check) {
  const RowResult &base = row_named(de, "base"), &fewer = row_named(de, "BPE: a quarter");
  check(fewer.chrf > base.chrf,
        fmt::format("a smaller vocabulary learns faster: chrF {:.1f} with {} tokens ({} steps), "
                    "{:.1f} with {} ({} steps)",
                    fewer.chrf, fewer.variant.model.vocab_size, fewer.steps, base.chrf,
                    base.variant.model.vocab_size, base.steps));
}

void conclusions(const Setup& s, const std::vector<RowResult>& de, const std::vector<RowResult>& zh,
                 Checks& check) {
  banner("3. What the table shows");
  budget_and_size(s, de, check);
  regularisation(de, check);
  vocabulary(de, check);
  both_languages(de, zh, check);
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"Lesson 12: real sentences, the paper's Table 3 in miniature"};
  bool quick = false;
  double seconds = 80.0;
  bool every_row = false;
  std::string out_dir = "out", data_dir = "out";
  uint64_t seed = 1;
  app.add_flag("--quick", quick, "a few rows of a few steps on a small model (the tests use it)");
  app.add_option("--seconds", seconds, "the training budget of every row, in seconds")
      ->check(CLI::PositiveNumber)
      ->capture_default_str();
  app.add_option("--data", data_dir,
                 "where scripts/corpus.py wrote the corpora: <data>/de/ and <data>/zh_CN/")
      ->capture_default_str();
  app.add_flag("--every-row", every_row,
               "train every row on Chinese too, not only the base and three others (about 15 "
               "minutes more)");
  app.add_option("--seed", seed, "seed for the weights and the batches")->capture_default_str();
  app.add_option("--out", out_dir, "pictures go to <out>/12_real_sentences/")
      ->capture_default_str();
  CLI11_PARSE(app, argc, argv);

  Checks check;
  check.timings_checked = timings_checkable(quick);
  const auto start = std::chrono::steady_clock::now();
  try {
    Setup s = make_setup(quick, seconds, data_dir);
    s.seed = seed;
    s.every_row = every_row;
    std::filesystem::create_directories(out_dir + kDir);
    const std::vector<RowResult> de = one_language(s, 1, kLanguages[0], out_dir, check);
    const std::vector<RowResult> zh = one_language(s, 2, kLanguages[1], out_dir, check);
    if (!quick) conclusions(s, de, zh, check);
  } catch (const std::exception& e) {
    fmt::print("\nlesson 12: stopped by an exception: {}\n", e.what());
    return 1;
  }
  fmt::print("\n  total time {:.1f} s\n", seconds_since(start));
  return check.summary("lesson 12");
}
