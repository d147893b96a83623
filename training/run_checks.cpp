#include "training/run_checks.h"

#include <fmt/format.h>

#include <algorithm>
#include <span>
#include <stdexcept>

#include "data/parallel_corpus.h"
#include "data/tasks.h"
#include "data/toy_language.h"
#include "training/evaluate.h"

namespace gf::training {

namespace {

data::Task generated_task(const RunSettings& s) {
  return s.task == Task::Reverse ? data::Task::Reverse : data::Task::Copy;
}

}  // namespace

TextPairs read_text_pairs(const RunSettings& s) {
  TextPairs text;
  if (s.task == Task::ToyTranslation) {
    Rng rng(s.seed);
    const data::ToyCorpus corpus = data::generate_toy_corpus({.split = s.split}, rng);
    text.train = data::sentence_pairs_of(corpus.train, "toy-translation train");
    text.dev = data::sentence_pairs_of(corpus.dev, "toy-translation dev");
    return text;
  }
  if (s.task != Task::Translate) return text;
  if (s.data.empty())
    throw std::invalid_argument(
        "--task translate needs --data TRAIN.tsv (lines SOURCE<TAB>TARGET)");
  text.train = data::read_sentence_pairs(s.data);
  if (!s.dev.empty()) text.dev = data::read_sentence_pairs(s.dev);
  return text;
}

RunChecks::RunChecks(const RunSettings& settings, const TextPairs& text,
                     const data::BatchSource& batches, const data::Tokenizer* tokenizer, Rng fresh,
                     Rng page_stream)
    : settings_(settings),
      text_(text),
      batches_(batches),
      tokenizer_(tokenizer),
      fresh_(fresh),
      page_stream_(page_stream.state()) {
  // Spread evenly over the file, which may be sorted (the message catalogs' pairs are, by
  // their English side, so that their first hundred all start with punctuation).
  const auto& from = text.dev.pairs.empty() ? text.train.pairs : text.dev.pairs;
  const size_t count = std::min<size_t>(static_cast<size_t>(settings.eval_count), from.size());
  for (size_t i = 0; i < count; ++i) check_pairs_.push_back(from[i * from.size() / count]);
  // Drawn from a stream of their own, so that the fresh stream does not move.
  if (batches.is_generated())
    page_sequences_ = data::generate(generated_task(settings), settings.eval_count,
                                     batches.task_config(), page_stream);
}

std::vector<data::Pair> RunChecks::page_pairs() const {
  if (tokenizer_) {
    std::vector<data::Pair> pairs;
    for (const data::SentencePair& p : check_pairs_)
      pairs.push_back(data::encode_pair(*tokenizer_, p.source, p.target));
    return pairs;
  }
  if (batches_.is_generated()) return page_sequences_;
  const auto all = batches_.pairs();
  const int64_t count = std::min(settings_.eval_count, static_cast<int64_t>(all.size()));
  return {all.begin(), all.begin() + static_cast<std::ptrdiff_t>(count)};
}

PageRecorder::Metric RunChecks::page_metric() const {
  if (tokenizer_)
    return {fmt::format("BLEU, greedy, {} {}", check_pairs_.size(), pairs_name()),
            [this](Transformer& model) {
              return check_bleu(model);
            }};
  const std::vector<data::Pair> pairs = page_pairs();
  return {fmt::format("% exact, greedy, {} {}", pairs.size(),
                      batches_.is_generated() ? "fixed fresh sequences" : "training pairs"),
          [pairs](Transformer& model) {
            return 100 * exact_match(model, pairs);
          }};
}

double RunChecks::check_bleu(Transformer& model) const {
  return score_translations(model, *tokenizer_, check_pairs_).bleu.score;
}

std::string RunChecks::check_set() const {
  return fmt::format("{} {}", check_pairs_.size(), pairs_name());
}

std::optional<double> RunChecks::exact_on_fresh_sequences(Transformer& model) {
  if (!batches_.is_generated()) return std::nullopt;
  return exact_match(model, fresh_pairs());
}

std::string RunChecks::final_scores(Transformer& model) {
  if (tokenizer_) {
    const auto& pairs = text_.dev.pairs.empty() ? check_pairs_ : text_.dev.pairs;
    const TranslationScores scores = score_translations(model, *tokenizer_, pairs);
    return fmt::format("{} on {} {} (greedy), chrF = {:.2f}", scores.bleu.to_string(), pairs.size(),
                       pairs_name(), scores.chrf.score);
  }
  if (batches_.is_generated())
    return fmt::format("exact: {:.1f}% of {} fresh sequences decoded exactly (greedy)",
                       100 * exact_match(model, fresh_pairs()), settings_.eval_count);
  return fmt::format("exact: {:.1f}% of {} training pairs decoded exactly (greedy)",
                     100 * exact_match(model, batches_.pairs()), batches_.pairs().size());
}

void RunChecks::fill_page(viz::RunPage& page, Transformer& model, const TokenNames& names) const {
  const std::vector<data::Pair> pairs = page_pairs();
  if (tokenizer_) {
    page.data.emplace_back("training pairs", fmt::format("{}", text_.train.pairs.size()));
    page.data.emplace_back("dev pairs", fmt::format("{}", text_.dev.pairs.size()));
    page.data.emplace_back("vocabulary",
                           fmt::format("{} tokens ({})", tokenizer_->size(), tokenizer_->kind()));
    for (size_t i = 0; i < std::min<size_t>(3, text_.train.pairs.size()); ++i)
      page.data_examples.emplace_back(text_.train.pairs[i].source, text_.train.pairs[i].target);
    const auto shown =
        std::span(check_pairs_).first(std::min<size_t>(kPageSamples, check_pairs_.size()));
    page.samples = translation_samples(model, *tokenizer_, shown);
    page.sample_metric = "chrF";
  } else {
    page.data.emplace_back(batches_.is_generated() ? "fresh sequences" : "training pairs",
                           batches_.is_generated() ? fmt::format("{} a step", settings_.batch)
                                                   : fmt::format("{}", batches_.pairs().size()));
    for (size_t i = 0; i < std::min<size_t>(3, pairs.size()); ++i)
      page.data_examples.emplace_back(token_text(pairs[i].src, names),
                                      token_text(pairs[i].tgt, names));
    const auto shown = std::span(pairs).first(std::min<size_t>(kPageSamples, pairs.size()));
    page.samples = sequence_samples(model, shown, names);
    page.sample_metric = "exact (1: every token right)";
  }
  for (size_t i = 0; i < std::min<size_t>(3, pairs.size()); ++i)
    page.attention.push_back(
        {.label = tokenizer_ ? check_pairs_[i].source : token_text(pairs[i].src, names),
         .maps = attention_maps(model, pairs[i].src, pairs[i].tgt, names)});
}

const char* RunChecks::pairs_name() const {
  return text_.dev.pairs.empty() ? "training pairs" : "dev pairs";
}

std::vector<data::Pair> RunChecks::fresh_pairs() {
  return data::generate(generated_task(settings_), settings_.eval_count, batches_.task_config(),
                        fresh_);
}

}  // namespace gf::training
