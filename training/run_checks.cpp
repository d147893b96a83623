#include "training/run_checks.h"

#include <fmt/format.h>

#include <algorithm>
#include <limits>
#include <span>
#include <stdexcept>

#include "data/parallel_corpus.h"
#include "data/tasks.h"
#include "data/toy_language.h"
#include "data/utf8.h"
#include "models/sample.h"
#include "training/evaluate.h"

namespace gf::training {

namespace {

data::Task generated_task(const RunSettings& s) {
  return s.task == Task::Reverse ? data::Task::Reverse : data::Task::Copy;
}

// A language model's page: the attention of windows this long (a heatmap of 128 x 128 tokens
// cannot be read), and samples this long after a prompt of the first kPrompt tokens of a check
// window, drawn with one seed so that each snapshot's sample differs only by the model.
constexpr int64_t kPageWindow = 32, kPrompt = 16, kSampleLength = 64;

}  // namespace

RunText read_run_text(const RunSettings& s) {
  RunText text;
  if (s.task == Task::ToyTranslation) {
    Rng rng(s.seed);
    const data::ToyCorpus corpus = data::generate_toy_corpus({.split = s.split}, rng);
    text.train = data::sentence_pairs_of(corpus.train, "toy-translation train");
    text.dev = data::sentence_pairs_of(corpus.dev, "toy-translation dev");
    return text;
  }
  if (s.task == Task::LanguageModel) {
    if (s.data.empty()) throw std::invalid_argument("--task lm needs --data TEXT (UTF-8 text)");
    text.train_text = data::read_text_file(s.data);
    if (!s.dev.empty()) text.dev_text = data::read_text_file(s.dev);
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

RunChecks::RunChecks(const RunSettings& settings, const RunText& text,
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
  if (settings.task == Task::LanguageModel) {
    const std::string& dev = text.dev_text.text.empty() ? text.train_text.text : text.dev_text.text;
    const int32_t bos = settings.model.bos_id;
    dev_stream_ = tokenizer->encode(dev);
    check_windows_ =
        data::spread_windows(dev_stream_, settings.model.max_len, settings.eval_count, bos);
    bigram_.emplace(batches.stream(), tokenizer->size(), bos);
  }
  // Drawn from a stream of their own, so that the fresh stream does not move.
  if (batches.is_generated())
    page_sequences_ = data::generate(generated_task(settings), settings.eval_count,
                                     batches.task_config(), page_stream);
}

std::vector<data::Pair> RunChecks::page_pairs() const {
  if (settings_.task == Task::LanguageModel) {
    std::vector<data::Pair> pairs;
    for (const data::Pair& window : check_windows_) {
      const auto length = static_cast<std::ptrdiff_t>(std::min(
          {static_cast<int64_t>(window.tgt.size()), kPageWindow + 1, settings_.model.max_len + 1}));
      pairs.push_back({{}, {window.tgt.begin(), window.tgt.begin() + length}});
    }
    return pairs;
  }
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
  if (settings_.task == Task::LanguageModel)
    return {fmt::format("perplexity, {}", check_set()),
            [this](Transformer& model) { return check_perplexity(model); },
            [this](Transformer& model) {
              return sample_text(model);
            }};
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

double RunChecks::check_perplexity(Transformer& model) const {
  return perplexity(model, check_windows_);
}

std::string RunChecks::check_set() const {
  if (settings_.task == Task::LanguageModel)
    return fmt::format("{} windows of the {} text", check_windows_.size(),
                       text_.dev_text.text.empty() ? "training" : "dev");
  return fmt::format("{} {}", check_pairs_.size(), pairs_name());
}

std::optional<double> RunChecks::exact_on_fresh_sequences(Transformer& model) {
  if (!batches_.is_generated()) return std::nullopt;
  return exact_match(model, fresh_pairs());
}

std::string RunChecks::final_scores(Transformer& model) {
  if (settings_.task == Task::LanguageModel) return language_model_scores(model);
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
  if (settings_.task == Task::LanguageModel) {
    fill_language_model_page(page);
  } else if (tokenizer_) {
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
        {.label = settings_.task == Task::LanguageModel
                      ? tokenizer_->decode(pairs[i].tgt)
                      : (tokenizer_ ? check_pairs_[i].source : token_text(pairs[i].src, names)),
         .maps = attention_maps(model, pairs[i].src, pairs[i].tgt, names)});
}

// The whole dev text (every token once, in consecutive windows) against the bigram model's best.
std::string RunChecks::language_model_scores(Transformer& model) const {
  const std::vector<data::Pair> windows =
      data::consecutive_windows(dev_stream_, settings_.model.max_len, settings_.model.bos_id);
  const double model_perplexity = perplexity(model, windows);
  const BigramModel::Best bigram = bigram_->best_perplexity(windows);
  const std::string& text =
      text_.dev_text.text.empty() ? text_.train_text.text : text_.dev_text.text;
  return fmt::format(
      "perplexity {:.2f} ({:.3f} bits per character) on the {} text's {} tokens; the bigram "
      "model's {:.2f} (add-k, k = {})",
      model_perplexity,
      bits_per_character(model_perplexity, std::ssize(dev_stream_),
                         std::ssize(data::decode_utf8(text))),
      text_.dev_text.text.empty() ? "training" : "dev", dev_stream_.size(), bigram.perplexity,
      bigram.k);
}

// Sizes, the first check windows as examples, and the sample of each snapshot.
void RunChecks::fill_language_model_page(viz::RunPage& page) const {
  page.data.emplace_back(
      "training text",
      fmt::format("{} characters, {} tokens", data::decode_utf8(text_.train_text.text).size(),
                  batches_.stream().size()));
  if (!text_.dev_text.text.empty())
    page.data.emplace_back("dev text", fmt::format("{} tokens", dev_stream_.size()));
  page.data.emplace_back("vocabulary",
                         fmt::format("{} tokens ({})", tokenizer_->size(), tokenizer_->kind()));
  for (size_t i = 0; i < std::min<size_t>(2, check_windows_.size()); ++i)
    page.data_examples.emplace_back(fmt::format("window {}", i + 1),
                                    tokenizer_->decode(check_windows_[i].tgt));
  // Beside each snapshot's sample, the dev text its prompt came from, as far as the window
  // goes; a sample has no score.
  const std::string reference =
      check_windows_.empty()
          ? std::string()
          : tokenizer_->decode(std::span(check_windows_.front().tgt)
                                   .first(std::min<size_t>(check_windows_.front().tgt.size(),
                                                           kPrompt + kSampleLength + 1)));
  for (viz::Sample& sample : page.samples) {
    sample.reference = reference;
    sample.score = std::numeric_limits<double>::quiet_NaN();
  }
  page.sample_metric = "sampled, T = 1";
}

// kSampleLength tokens sampled after the first kPrompt tokens of the first check window, at
// temperature 1 with a fixed seed; the prompt, then the sample.
std::string RunChecks::sample_text(Transformer& model) const {
  if (check_windows_.empty()) return {};
  const std::vector<int32_t>& window = check_windows_.front().tgt;
  // At most half the context, so that the sample has room before the window slides.
  const int64_t length =
      std::min({kPrompt, settings_.model.max_len / 2, static_cast<int64_t>(window.size()) - 1});
  const std::vector<int32_t> prompt(window.begin() + 1,
                                    window.begin() + 1 + static_cast<std::ptrdiff_t>(length));
  Rng rng(1);
  const TokenIds sampled =
      sample(model, prompt, {.length = kSampleLength, .stop_at_eos = false}, rng).front();
  return tokenizer_->decode(prompt) + tokenizer_->decode(sampled);
}

const char* RunChecks::pairs_name() const {
  return text_.dev.pairs.empty() ? "training pairs" : "dev pairs";
}

std::vector<data::Pair> RunChecks::fresh_pairs() {
  return data::generate(generated_task(settings_), settings_.eval_count, batches_.task_config(),
                        fresh_);
}

}  // namespace gf::training
