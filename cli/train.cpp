// `transformer train`: teacher-forced training with label smoothing (§5.4), Adam and the
// warm-up schedule (§5.3), on a generated task, a file of id pairs, or sentence pairs (a file,
// or the generated toy language) through a tokenizer learned from them; then a check by
// greedy decoding (exact copies, or BLEU for text), the checkpoint (with the tokenizer, for
// text), and pictures of the loss and learning rate. The training itself is the library's
// (training/): this file turns flags into its parts and reports.
//
// A run keeps its work: beside the checkpoint goes the training state (training/resume.h), from
// which --resume continues exactly; Ctrl-C or SIGTERM stops after the current step and saves;
// and a loss or gradient that is not finite stops the run before the update it would spoil,
// saving the weights it had.
#include <fmt/format.h>

#include <algorithm>
#include <chrono>
#include <csignal>
#include <filesystem>
#include <fstream>
#include <optional>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

#include "autograd/errors.h"
#include "autograd/kernels/parallel.h"
#include "cli/commands.h"
#include "cli/common.h"
#include "cli/report.h"
#include "cli/train_options.h"
#include "data/batch_source.h"
#include "data/pairs_file.h"
#include "data/parallel_corpus.h"
#include "data/toy_language.h"
#include "training/averaging.h"
#include "training/budget.h"
#include "training/evaluate.h"
#include "training/loop.h"
#include "training/recipe.h"
#include "training/resume.h"
#include "training/run_page.h"
#include "training/trainer.h"
#include "viz/line_plot.h"
#include "viz/run_page.h"

namespace gf::cli {

namespace {

using Clock = std::chrono::steady_clock;

double seconds_since(Clock::time_point start) {
  return std::chrono::duration<double>(Clock::now() - start).count();
}

// Sentence pairs for a text task: from --data and --dev, or generated (the toy language's
// train and dev parts, written to files by `transformer generate` for reading). The toy
// language is generated from --seed itself, so that `transformer generate` with the same seed
// and sizes writes the same corpus, test part included.
struct TextPairs {
  data::SentencePairsFile train, dev;  // dev.pairs is empty when there is no dev set
};

TextPairs read_text_pairs(const TrainOptions& o) {
  TextPairs text;
  if (o.task == "toy-translation") {
    Rng rng(o.seed);
    const data::ToyCorpus corpus =
        data::generate_toy_corpus({.split = data::parse_toy_split(o.split)}, rng);
    text.train = data::sentence_pairs_of(corpus.train, "toy-translation train");
    text.dev = data::sentence_pairs_of(corpus.dev, "toy-translation dev");
    return text;
  }
  if (o.data.empty())
    throw std::invalid_argument(
        "--task translate needs --data TRAIN.tsv (lines SOURCE<TAB>TARGET)");
  text.train = data::read_sentence_pairs(o.data);
  if (!o.dev.empty()) text.dev = data::read_sentence_pairs(o.dev);
  return text;
}

// One vocabulary for both languages, learned from both sides of the training pairs (§5.1:
// "a shared source-target vocabulary"), so that the tied embedding matrix (§3.4) serves both.
std::unique_ptr<data::Tokenizer> learn_tokenizer(const TrainOptions& o,
                                                 const data::SentencePairsFile& train) {
  std::vector<std::string> texts;
  texts.reserve(2 * train.pairs.size());
  for (const data::SentencePair& p : train.pairs) {
    texts.push_back(p.source);
    texts.push_back(p.target);
  }
  const int64_t size = o.vocab_size > 0 ? o.vocab_size : 8000;
  if (o.tokenizer == "word")
    return std::make_unique<data::WordTokenizer>(
        data::WordTokenizer::learn(texts, {.max_size = static_cast<int32_t>(size)}));
  if (o.tokenizer == "char")
    return std::make_unique<data::CharTokenizer>(data::CharTokenizer::learn(texts));
  return std::make_unique<data::BpeTokenizer>(
      data::BpeTokenizer::learn(texts, {.vocab_size = static_cast<int32_t>(size)}));
}

// The model a run trains and, for text, its tokenizer.
struct Learner {
  std::unique_ptr<Transformer> model;
  std::unique_ptr<data::Tokenizer> tokenizer;  // text tasks only
  std::string tokenizer_origin;                // " (learned in 0.12s)" or " (from M)"
};

// A checkpoint fixes the model's shape. A shape flag given with --init or --resume and another
// value would be silently replaced by the file's, so it is refused, naming both.
void refuse_other_shape(const TrainOptions& o, const TransformerConfig& saved,
                        const std::string& path) {
  const auto describe = [](const TransformerConfig& c) {
    return std::vector<std::pair<std::string, std::string>>{
        {"d-model", fmt::format("d_model {}", c.d_model)},
        {"d-ff", fmt::format("d_ff {}", c.d_ff)},
        {"heads", fmt::format("{} heads", c.heads)},
        {"layers", fmt::format("{}+{} layers", c.encoder_layers, c.decoder_layers)},
        {"max-len", fmt::format("max_len {}", c.max_len)},
        {"tied", c.tied ? "tied embeddings" : "untied embeddings"},
        {"norm-first", c.norm_first ? "pre-norm layers" : "post-norm layers"},
        {"positions", c.learned_positions ? "learned positions" : "sinusoidal positions"}};
  };
  const auto asked = describe(o.model), has = describe(saved);
  for (size_t i = 0; i < asked.size(); ++i)
    if (o.given.contains(asked[i].first) && asked[i].second != has[i].second)
      throw std::invalid_argument(fmt::format(
          "--{} asks for {}, but {} holds a model with {}: a checkpoint fixes the model's shape "
          "(leave the flag out, or train a new model without --init and --resume)",
          asked[i].first, asked[i].second, path, has[i].second));
}

// A new model (and, for text, a tokenizer learned from the pairs), or the model of --init or
// --resume. A file fixes the architecture (and, for text, the tokenizer), but dropout is a
// training choice it does not store: --dropout still applies, with masks drawn from --seed
// (or, resuming, from where the saved run left its mask streams).
Learner make_model(const TrainOptions& o, const TextPairs& text,
                   const std::optional<training::TrainState>& resumed, Rng& rng) {
  const std::string& start_from = resumed ? o.resume : o.init;
  Learner learner;
  if (start_from.empty()) {
    TransformerConfig config = o.model;
    if (is_text_task(o)) {
      const auto learning = Clock::now();
      learner.tokenizer = learn_tokenizer(o, text.train);
      learner.tokenizer_origin = fmt::format(" (learned in {:.2f}s)", seconds_since(learning));
      config.vocab_size = learner.tokenizer->size();
    } else if (o.vocab_size > 0) {
      config.vocab_size = o.vocab_size;
    }
    learner.model = std::make_unique<Transformer>(config, rng);
    return learner;
  }
  if (is_text_task(o)) {
    Translator translator = load_translator(start_from, o.model.dropout, rng.next_u64());
    learner.model = std::move(translator.model);
    learner.tokenizer = std::move(translator.tokenizer);
    learner.tokenizer_origin = fmt::format(" (from {})", start_from);
  } else {
    learner.model = load_model(start_from, o.model.dropout, rng.next_u64());
  }
  refuse_other_shape(o, learner.model->config, start_from);
  if (resumed)
    fmt::print(stderr, "resuming {} at step {} of {} (its model and training settings)\n", o.resume,
               resumed->step, o.steps);
  else
    fmt::print(stderr,
               "starting from {} (its configuration replaces the model flags except --dropout)\n",
               o.init);
  return learner;
}

// The training batches: fresh pairs of a generated task, an id file's batches cycled in order,
// or epochs of text pairs batched by length. Throws when a sequence does not fit the model.
data::BatchSource make_batches(const TrainOptions& o, const Learner& learner, const TextPairs& text,
                               Rng rng) {
  const TransformerConfig& config = learner.model->config;
  if (is_text_task(o)) {
    std::vector<data::Pair> ids = data::encode_pairs(*learner.tokenizer, text.train);
    for (size_t i = 0; i < ids.size(); ++i) {
      const size_t longest = std::max(ids[i].src.size(), ids[i].tgt.size() - 1);
      if (static_cast<int64_t>(longest) > config.max_len)
        throw std::invalid_argument(fmt::format(
            "{}:{}: the pair has {} tokens, more than --max-len {} (raise it, or leave the line "
            "out)",
            text.train.name, text.train.lines[i], longest, config.max_len));
    }
    return data::BatchSource::by_length(std::move(ids), o.batch_tokens, rng);
  }
  std::optional<data::BatchSource> batches;
  if (!o.pairs.empty()) {
    data::PairsFile file = data::read_pairs(o.pairs);
    data::check_ids(file, static_cast<int32_t>(config.vocab_size));
    batches = data::BatchSource::cycled(std::move(file.pairs), o.batch, rng);
  } else {
    const data::TaskConfig task = {.vocab_size = static_cast<int32_t>(config.vocab_size),
                                   .min_len = o.min_length > 0 ? o.min_length : o.length,
                                   .max_len = o.length};
    batches = data::BatchSource::generated(data::parse_task(o.task), task, o.batch, rng);
  }
  if (batches->longest() > config.max_len)
    throw std::invalid_argument(fmt::format("sequences of up to {} tokens do not fit --max-len {}",
                                            batches->longest(), config.max_len));
  return std::move(*batches);
}

// Adam or SGD, at --lr 0 (the default) the schedule's own rate: a factor of 0.3 for noam,
// a peak of 1e-3 for cosine, 1e-3 for a constant rate. On the copy task, a noam factor of 0.5
// let the loss spike back up two or three times after it had reached its floor (the 600-step
// run then copied 95% exactly); 0.3 copies all 100 fresh sequences for seeds 1 to 3 and its
// curve has no such spikes. The cosine falls to zero at --steps, the run's planned length.
training::Trainer make_trainer(const TrainOptions& o, const Transformer& model) {
  const float lr = o.lr > 0.0f ? o.lr : (o.schedule == "noam" ? 0.3f : 1e-3f);
  nn::NamedTensors parameters = model.named_parameters();
  nn::Optimizer optimizer = o.optimizer == "adam"
                                ? nn::Optimizer(std::move(parameters), nn::AdamConfig{.lr = lr})
                                : nn::Optimizer(std::move(parameters), nn::SgdConfig{.lr = lr});
  training::Schedule schedule = o.schedule == "noam"
                                    ? training::noam(model.config.d_model, o.warmup, lr)
                                : o.schedule == "cosine" ? training::cosine(o.warmup, o.steps, lr)
                                                         : training::constant(lr);
  return training::Trainer(std::move(optimizer), std::move(schedule),
                           {.clip = o.clip, .check_finite = true});
}

// Greedy decoding, never teacher forcing: the model must produce each token from its own.
// Text: BLEU on --eval-count dev pairs spread over the set (training pairs when there is no dev set,
// which only shows what the model memorised), and on the whole dev set at the end. A generated
// task: exact copies of fresh sequences, drawn from a stream of their own so that checking
// does not change the training data. An id file: its own pairs, at the end.
class Checks {
 public:
  static constexpr size_t kPageSamples = 8;  // decodes shown beside their references

  Checks(const TrainOptions& o, const TextPairs& text, const data::BatchSource& batches, Rng fresh)
      : o_(o), text_(text), batches_(batches), fresh_(fresh) {
    // Spread evenly over the file, which may be sorted (the message catalogs' pairs are, by
    // their English side, so that their first hundred all start with punctuation).
    const auto& from = text.dev.pairs.empty() ? text.train.pairs : text.dev.pairs;
    const size_t count = std::min<size_t>(static_cast<size_t>(o.eval_count), from.size());
    for (size_t i = 0; i < count; ++i) some_.push_back(from[i * from.size() / count]);
    // The page's sequences of a generated task are the first fresh ones the checks would draw,
    // drawn from a copy of the stream: the same in every run of the seed, resumed or not, and
    // without moving the stream itself.
    if (batches.is_generated()) {
      Rng copy = fresh;
      page_sequences_ =
          data::generate(data::parse_task(o.task), o.eval_count, batches.task_config(), copy);
    }
  }
  Rng& fresh_stream() { return fresh_; }

  // What the run's page scores, samples and shows the attention of: the check pairs (text),
  // fixed fresh sequences (a generated task), or the id file's first pairs.
  std::vector<data::Pair> page_pairs(const data::Tokenizer* tokenizer) const {
    if (tokenizer) {
      std::vector<data::Pair> pairs;
      for (const data::SentencePair& p : some_)
        pairs.push_back(data::encode_pair(*tokenizer, p.source, p.target));
      return pairs;
    }
    if (batches_.is_generated()) return page_sequences_;
    const auto& all = batches_.pairs();
    return {all.begin(), all.begin() + std::min<std::ptrdiff_t>(o_.eval_count, std::ssize(all))};
  }

  training::PageRecorder::Metric page_metric(const data::Tokenizer* tokenizer) const {
    if (tokenizer)
      return {fmt::format("BLEU, greedy, {} {}", some_.size(), pairs_name()),
              [this, tokenizer](Transformer& model) {
                return training::score_translations(model, *tokenizer, some_).bleu.score;
              }};
    const std::vector<data::Pair> pairs = page_pairs(nullptr);
    return {fmt::format("% exact, greedy, {} {}", pairs.size(),
                        batches_.is_generated() ? "fixed fresh sequences" : "training pairs"),
            [pairs](Transformer& model) {
              return 100 * training::exact_match(model, pairs);
            }};
  }

  // What only the run knows, for its page: the data's sizes and a few of its pairs, decodes of
  // the first page pairs beside their references, and the attention of the first three.
  void fill_page(viz::RunPage& page, Transformer& model, const data::Tokenizer* tokenizer,
                 const training::TokenNames& names) const {
    auto text_of = [&names](std::span<const int32_t> ids) {
      std::vector<std::string> words;
      for (int32_t id : ids) words.push_back(names(id));
      return fmt::format("{}", fmt::join(words, " "));
    };
    const std::vector<data::Pair> pairs = page_pairs(tokenizer);
    if (tokenizer) {
      page.data.emplace_back("training pairs", fmt::format("{}", text_.train.pairs.size()));
      page.data.emplace_back("dev pairs", fmt::format("{}", text_.dev.pairs.size()));
      page.data.emplace_back("vocabulary",
                             fmt::format("{} tokens ({})", tokenizer->size(), tokenizer->kind()));
      for (size_t i = 0; i < std::min<size_t>(3, text_.train.pairs.size()); ++i)
        page.data_examples.emplace_back(text_.train.pairs[i].source, text_.train.pairs[i].target);
      const auto shown = std::span(some_).first(std::min<size_t>(kPageSamples, some_.size()));
      page.samples = training::translation_samples(model, *tokenizer, shown);
      page.sample_metric = "chrF";
    } else {
      page.data.emplace_back(batches_.is_generated() ? "fresh sequences" : "training pairs",
                             batches_.is_generated() ? fmt::format("{} a step", o_.batch)
                                                     : fmt::format("{}", batches_.pairs().size()));
      for (size_t i = 0; i < std::min<size_t>(3, pairs.size()); ++i)
        page.data_examples.emplace_back(text_of(pairs[i].src), text_of(pairs[i].tgt));
      const auto shown = std::span(pairs).first(std::min<size_t>(kPageSamples, pairs.size()));
      page.samples = training::sequence_samples(model, shown, names);
      page.sample_metric = "exact (1: every token right)";
    }
    for (size_t i = 0; i < std::min<size_t>(3, pairs.size()); ++i)
      page.attention.push_back(
          {.label = tokenizer ? some_[i].source : text_of(pairs[i].src),
           .maps = training::attention_maps(model, pairs[i].src, pairs[i].tgt, names)});
  }

  // BLEU of greedy decodes of --eval-count dev pairs spread over the set (training pairs
  // without a dev set): the score the run's checks compare checkpoints by.
  double check_bleu(Transformer& model, const data::Tokenizer& tokenizer) const {
    return training::score_translations(model, tokenizer, some_).bleu.score;
  }
  std::string check_set() const { return fmt::format("{} {}", some_.size(), pairs_name()); }

  // A line for the progress display of a generated task, or nothing for an id file.
  std::optional<std::string> during(int64_t step, Transformer& model) {
    if (!batches_.is_generated()) return std::nullopt;
    return fmt::format("step {}: {:.0f}% of {} fresh sequences decoded exactly", step,
                       100 * training::exact_match(model, fresh_pairs()), o_.eval_count);
  }

  void print_final(Transformer& model, const data::Tokenizer* tokenizer) {
    if (tokenizer) {
      const auto& pairs = text_.dev.pairs.empty() ? some_ : text_.dev.pairs;
      const training::TranslationScores scores =
          training::score_translations(model, *tokenizer, pairs);
      fmt::print("{} on {} {} (greedy), chrF = {:.2f}\n", scores.bleu.to_string(), pairs.size(),
                 pairs_name(), scores.chrf.score);
    } else if (batches_.is_generated()) {
      fmt::print("exact: {:.1f}% of {} fresh sequences decoded exactly (greedy)\n",
                 100 * training::exact_match(model, fresh_pairs()), o_.eval_count);
    } else {
      fmt::print("exact: {:.1f}% of {} training pairs decoded exactly (greedy)\n",
                 100 * training::exact_match(model, batches_.pairs()), batches_.pairs().size());
    }
  }

 private:
  const char* pairs_name() const {
    return text_.dev.pairs.empty() ? "training pairs" : "dev pairs";
  }
  std::vector<data::Pair> fresh_pairs() {
    return data::generate(data::parse_task(o_.task), o_.eval_count, batches_.task_config(), fresh_);
  }

  const TrainOptions& o_;
  const TextPairs& text_;
  const data::BatchSource& batches_;
  Rng fresh_;
  std::vector<data::SentencePair> some_;
  std::vector<data::Pair> page_sequences_;
};

// SIGINT (Ctrl-C) and SIGTERM ask training to stop after the current step, which then saves
// and exits. The handler only records the signal: saving is not async-signal-safe. A second
// signal while the first is pending stops the program at once, in the default way.
volatile std::sig_atomic_t stop_signal = 0;

extern "C" void request_stop(int signal_number) {
  if (stop_signal != 0) {
    std::signal(signal_number, SIG_DFL);
    std::raise(signal_number);
  }
  stop_signal = signal_number;
}

class StopOnSignals {
 public:
  StopOnSignals() {
    stop_signal = 0;
    struct sigaction action = {};
    action.sa_handler = request_stop;
    sigemptyset(&action.sa_mask);
    sigaction(SIGINT, &action, &previous_int_);
    sigaction(SIGTERM, &action, &previous_term_);
  }
  ~StopOnSignals() {
    sigaction(SIGINT, &previous_int_, nullptr);
    sigaction(SIGTERM, &previous_term_, nullptr);
  }
  StopOnSignals(const StopOnSignals&) = delete;
  StopOnSignals& operator=(const StopOnSignals&) = delete;
  int pending() const { return stop_signal; }

 private:
  struct sigaction previous_int_ = {};
  struct sigaction previous_term_ = {};
};

// Lines "step<TAB>loss", the loss in the shortest text that reads back to the same float, so
// that two runs' logs are equal exactly when their losses are equal bit for bit.
void write_loss_log(const std::string& path, const std::vector<float>& losses) {
  std::ofstream out(path);
  for (size_t i = 0; i < losses.size(); ++i) out << fmt::format("{}\t{}\n", i + 1, losses[i]);
  if (!out) throw std::runtime_error(fmt::format("--log-losses: cannot write {}", path));
}

// Prints what the run trains on: its data and tokenizer (text), and its model.
void describe(const TrainOptions& o, const TextPairs& text, const Learner& learner) {
  const TransformerConfig& config = learner.model->config;
  if (is_text_task(o))
    fmt::print(stderr, "data: {} training pairs{}, {} tokenizer of {} tokens{}\n",
               text.train.pairs.size(),
               text.dev.pairs.empty() ? "" : fmt::format(", {} dev pairs", text.dev.pairs.size()),
               learner.tokenizer->kind(), learner.tokenizer->size(), learner.tokenizer_origin);
  fmt::print(
      stderr, "model: {} parameters (d_model {}, d_ff {}, heads {}, layers {}+{}, vocab {}{})\n",
      learner.model->parameter_count(), config.d_model, config.d_ff, config.heads,
      config.encoder_layers, config.decoder_layers, config.vocab_size, config.tied ? ", tied" : "");
}

// Where a run stands before a step: a step that goes bad is saved as not taken.
struct Snapshot {
  data::BatchPosition batches;
  Rng::State fresh{};
  nn::RandomStates dropout;
};

// One `transformer train` run around the library's loop: the hooks that report progress,
// check, stop on a signal and save, and what is saved: the checkpoint, its training state
// beside it, and the loss log.
class TrainRun {
 public:
  TrainRun(const TrainOptions& o, Learner& learner, training::Trainer& trainer,
           data::BatchSource& batches, Checks& checks)
      : o_(o),
        learner_(learner),
        model_(*learner.model),
        trainer_(trainer),
        batches_(batches),
        checks_(checks),
        state_path_(training::train_state_path(o.save)),
        kept_(kept_options(o)),
        progress_(o.steps),
        names_(training::token_names(learner.tokenizer.get(), model_.config)) {
    for (const std::string& path : {o.save, state_path_}) nn::remove_stale_temporaries(path);
    const std::vector<data::Pair> pairs = checks.page_pairs(learner.tokenizer.get());
    if (o.snapshots > 0 && !pairs.empty())
      recorder_.emplace(pairs.front(), names_, checks.page_metric(learner.tokenizer.get()), o.steps,
                        o.snapshots);
  }

  void resume(const training::TrainState& state) {
    const std::string in_checkpoint = training::weights_digest(model_);
    if (in_checkpoint != state.weights && in_checkpoint != state.checkpoint_weights)
      fmt::print(stderr,
                 "note: {} holds other weights than its training state (a save stopped between "
                 "the two files?); the run continues from the state's weights, of step {}\n",
                 o_.resume, state.step);
    training::restore(state, training::train_state_path(o_.resume), model_, trainer_, batches_,
                      checks_.fresh_stream());
    losses_ = state.losses;
    rates_ = state.rates;
    if (recorder_ && !state.page.empty())
      recorder_->history() = training::PageHistory::from_json(state.page, o_.resume);
  }

  data::Batch next_batch() {
    before_ = now();
    return batches_.next();
  }

  // The run's clock starts here.
  training::Hooks hooks(const StopOnSignals& stop, int& exit_code) {
    start_ = Clock::now();
    if (losses_.empty()) record(0);  // the attention of the initial weights
    return {.after_step = [this](const training::StepRecord& r) { after_step(r); },
            .evaluate =
                [this](int64_t step) {
                  if (o_.eval_every > 0 && step % o_.eval_every == 0 && step < o_.steps)
                    check(step);
                  if (averaged_at(step)) average_.add(model_);
                  record(step);
                },
            .stop =
                [this, &stop, &exit_code](int64_t step) {
                  if (stop.pending() == 0) return false;
                  exit_code = stopped(step, stop.pending());
                  return true;
                },
            .save =
                [this](int64_t step) {
                  if (o_.save_every > 0 && step % o_.save_every == 0 && step < o_.steps)
                    save(now());
                }};
  }

  // A loss, gradient or weight that is not finite: the run stops, and saves the weights of the
  // step before when they are still untouched.
  [[noreturn]] void fail(const training::NonFiniteError& e) {
    if (e.after_update)
      throw std::runtime_error(fmt::format(
          "{}; training stopped without saving these weights{}", e.what(),
          std::filesystem::exists(o_.save) ? fmt::format(" ({} holds the last ones saved)", o_.save)
                                           : ""));
    progress_.note(e.what());
    save(before_);
    throw std::runtime_error(fmt::format(
        "{}; training stopped, and {} holds the weights before it (step {}): lower --lr, or use "
        "--clip",
        e.what(), o_.save, e.step - 1));
  }

  void finish() {
    const double seconds = training_seconds();
    // Saved as it stands before the final check draws its sequences, so that a run continued
    // from here evaluates exactly as one that had been asked for more steps at the start.
    const Snapshot end = now();
    progress_.finish(fmt::format("final loss {:.4f}, {:.0f} target tokens/s, {:.0f} {}/s",
                                 losses_.back(), static_cast<double>(tokens_) / seconds,
                                 static_cast<double>(sequences_) / seconds,
                                 learner_.tokenizer ? "sentence pairs" : "sequences"));
    const auto choosing = Clock::now();
    const Choice chosen = choose_weights();
    checking_ += seconds_since(choosing);
    save(end, chosen.weights);
    if (!chosen.weights.empty()) {
      training::load_weights(model_, chosen.weights);
      fmt::print("the checkpoint holds {}\n", chosen.name);
    }
    checks_.print_final(model_, learner_.tokenizer.get());
    draw_curves();
    write_page();
  }

 private:
  Snapshot now() {
    return {batches_.position(), checks_.fresh_stream().state(), nn::random_states(model_)};
  }

  double training_seconds() const { return seconds_since(start_) - checking_; }

  void after_step(const training::StepRecord& r) {
    losses_.push_back(r.result.loss);
    rates_.push_back(r.result.lr);
    tokens_ += r.target_tokens;
    sequences_ += r.sequences;
    progress_.update(r.result.step,
                     fmt::format("loss {:.4f} lr {:.2e} {:.0f} tok/s", r.result.loss, r.result.lr,
                                 static_cast<double>(tokens_) / training_seconds()));
  }

  // A snapshot for the page, at the recorder's steps; its time counts as checking.
  void record(int64_t step) {
    if (!recorder_) return;
    const auto start = Clock::now();
    if (recorder_->at_step(model_, step)) checking_ += seconds_since(start);
  }

  // The page's history with this part of the run's times and counts added.
  training::PageHistory page_history() const {
    training::PageHistory history = recorder_ ? recorder_->history() : training::PageHistory{};
    history.training_seconds += training_seconds();
    history.checking_seconds += checking_;
    history.target_tokens += tokens_;
    history.sequences += sequences_;
    return history;
  }

  void write_page() const {
    viz::RunPage page = run_page_of(o_.save, model_, kept_, losses_, rates_, page_history());
    checks_.fill_page(page, model_, learner_.tokenizer.get(), names_);
    const std::string path = beside(o_.save, ".html");
    viz::write_run_page(page, path);
    fmt::print("saved: {} (the run's page, {:.0f} kB: open it in a browser)\n", path,
               static_cast<double>(std::filesystem::file_size(path)) / 1000.0);
  }

  // Text: BLEU on the check pairs, and the weights kept when it is the best so far.
  void check(int64_t step) {
    const auto start = Clock::now();
    if (learner_.tokenizer) {
      const double bleu = checks_.check_bleu(model_, *learner_.tokenizer);
      best_.offer(step, bleu, model_);
      progress_.note(
          fmt::format("step {}: BLEU {:.1f} on {} (greedy)", step, bleu, checks_.check_set()));
    } else if (const auto line = checks_.during(step, model_)) {
      progress_.note(*line);
    }
    checking_ += seconds_since(start);
  }

  // --average N: the steps o.steps, o.steps - every, ... (N of them) go into the average.
  bool averaged_at(int64_t step) const {
    if (o_.average == 0) return false;
    const int64_t every = std::max<int64_t>(1, o_.steps / 50), before_end = o_.steps - step;
    return before_end >= 0 && before_end % every == 0 && before_end / every < o_.average;
  }

  // The weights the checkpoint gets: the last step's, the best check's, or the average of the
  // last checkpoints, whichever has the highest BLEU on the check pairs (the last on a tie).
  // model_ keeps the last step's weights, which the training state continues from. The best
  // check and the average are held in memory, not in the training state: a resumed run chooses
  // among those taken after it resumed.
  struct Choice {
    std::string name = "the last step's weights";
    nn::NamedTensors weights;  // empty: the last step's
  };
  Choice choose_weights() {
    if (!learner_.tokenizer || (best_.empty() && average_.count() < 2)) return {};
    const nn::NamedTensors last = training::copy_weights(model_);
    std::vector<std::pair<Choice, double>> candidates = {
        {{fmt::format("the last step's weights ({})", o_.steps), {}},
         checks_.check_bleu(model_, *learner_.tokenizer)}};
    if (!best_.empty() && best_.step() != o_.steps)
      candidates.push_back(
          {{fmt::format("the best check's weights (step {})", best_.step()), best_.weights()},
           best_.score()});
    if (average_.count() >= 2) {
      training::load_weights(model_, average_.mean());
      candidates.push_back(
          {{fmt::format("the average of the last {} checkpoints", average_.count()),
            average_.mean()},
           checks_.check_bleu(model_, *learner_.tokenizer)});
      training::load_weights(model_, last);
    }
    size_t chosen = 0;
    std::vector<std::string> scores;
    for (size_t i = 0; i < candidates.size(); ++i) {
      scores.push_back(fmt::format("{} {:.2f}", candidates[i].first.name, candidates[i].second));
      if (candidates[i].second > candidates[chosen].second) chosen = i;
    }
    fmt::print("BLEU on {} (greedy): {}\n", checks_.check_set(), fmt::join(scores, ", "));
    return candidates[chosen].first;
  }

  // Ctrl-C or SIGTERM: saves, says how to go on, and returns the shell's exit status for a
  // program ended by the signal, so that scripts see the stop.
  int stopped(int64_t step, int signal_number) {
    save(now());
    write_page();
    progress_.note(fmt::format(
        "stopped by {} after step {} of {}: saved {} and its training state {}; continue with: "
        "transformer train --resume {} --steps {}{}",
        signal_number == SIGINT ? "SIGINT" : "SIGTERM", step, o_.steps, o_.save, state_path_,
        o_.save, o_.steps,
        o_.save_every > 0 ? fmt::format(" --save-every {}", o_.save_every) : ""));
    return 128 + signal_number;
  }

  // The checkpoint, then the training state of the steps done so far, as they stood at `at`.
  // The checkpoint may hold other weights than model_'s (chosen_weights: the best check's or
  // an average); the state always continues from model_'s and notes the checkpoint's digest.
  void save(const Snapshot& at, const nn::NamedTensors& chosen_weights = {}) {
    std::string chosen_digest;
    if (chosen_weights.empty()) {
      save_model(o_.save, model_, learner_.tokenizer.get());
    } else {
      const nn::NamedTensors last = training::copy_weights(model_);
      training::load_weights(model_, chosen_weights);
      save_model(o_.save, model_, learner_.tokenizer.get());
      chosen_digest = training::weights_digest(model_);
      training::load_weights(model_, last);
    }
    training::TrainState state = training::capture(model_, trainer_, at.batches, at.fresh,
                                                   at.dropout, losses_, rates_, kept_);
    state.checkpoint_weights = chosen_digest;
    state.page = page_history().to_json();
    training::save_train_state(state_path_, state);
    if (!o_.log_losses.empty()) write_loss_log(o_.log_losses, losses_);
  }

  void draw_curves() const {
    const std::string loss_png = beside(o_.save, ".loss.png"), lr_png = beside(o_.save, ".lr.png");
    viz::write_png(
        viz::line_plot(
            {{.name = "training loss", .ys = losses_}},
            {.title = "loss (label-smoothed cross-entropy)", .y_label = "loss", .log_y = true}),
        loss_png);
    viz::write_png(viz::line_plot({{.name = "learning rate", .ys = rates_}},
                                  {.title = fmt::format("learning rate ({} schedule)", o_.schedule),
                                   .y_label = "learning rate"}),
                   lr_png);
    fmt::print("saved: {} (checkpoint), {} (training state, for --resume), {} and {} (curves)\n",
               o_.save, state_path_, loss_png, lr_png);
  }

  const TrainOptions& o_;
  Learner& learner_;
  Transformer& model_;
  training::Trainer& trainer_;
  data::BatchSource& batches_;
  Checks& checks_;
  const std::string state_path_;
  const nn::Metadata kept_;
  Progress progress_;
  std::vector<float> losses_, rates_;
  int64_t tokens_ = 0, sequences_ = 0;
  Clock::time_point start_;
  double checking_ = 0.0;  // seconds spent in the checks, which the speeds leave out
  Snapshot before_;
  training::TokenNames names_;
  std::optional<training::PageRecorder> recorder_;  // none with --snapshots 0
  training::BestWeights best_;                      // text: of the checks during the run
  training::WeightAverage average_;                 // --average: of the last checkpoints
};

// What the recipe's settings become once the steps are known: its warm-up takes at most a
// tenth of the run, and its checks of the dev set are spread evenly over it.
void fit_recipe_to_steps(TrainOptions& o) {
  if (!o.recipe) return;
  if (!o.given.contains("warmup"))
    o.warmup = std::clamp<int64_t>(o.steps / 10, 1, o.recipe->warmup);
  if (!o.given.contains("eval-every") && !o.dev.empty())
    o.eval_every = std::max<int64_t>(1, o.steps / o.recipe->checks);
}

// --task translate on real text: the recipe's settings for every flag not given, printed.
void choose_recipe(TrainOptions& o, const TextPairs& text) {
  const training::CorpusFacts facts = training::corpus_facts(text.train);
  const std::optional<training::TextRecipe> recipe = training::text_recipe(facts);
  if (!recipe) return;
  fmt::print(stderr,
             "recipe for {} pairs of {} words ({} distinct), where no flag says otherwise: {}\n",
             facts.pairs, facts.words, facts.distinct_words, apply_recipe(*recipe, o));
  if (o.minutes == 0) fit_recipe_to_steps(o);  // --minutes does once it knows the steps
}

// --minutes: the steps that fit, from the speed of whole steps on the first batches (timed on
// a stand-in model, at a constant rate: the rate does not change the time); the run is then the
// one --steps gives.
void plan_steps(TrainOptions& o, data::BatchSource& batches, const TransformerConfig& config) {
  if (o.minutes > 0) {
    TrainOptions timing_options = o;
    timing_options.schedule = "constant";
    const training::StepTiming timing = training::time_steps(
        config, batches, [&](const Transformer& m) { return make_trainer(timing_options, m); },
        [&](Transformer& m, const data::Batch& b) {
          return training::teacher_forced_loss(m, b, o.label_smoothing);
        });
    o.steps = training::steps_for_minutes(o.minutes, timing, o.recipe ? 2 : o.warmup + 1);
    fit_recipe_to_steps(o);
    fmt::print(stderr,
               "--minutes {}: {:.3f} s a step ({} steps timed), so {} steps, {} of them "
               "warm-up; --steps {} repeats this run exactly\n",
               o.minutes, timing.seconds_per_step, timing.timed, o.steps, o.warmup, o.steps);
  }
  if (o.schedule_steps == 0) o.schedule_steps = o.steps;
}

}  // namespace

int run_train(const TrainOptions& options) {
  TrainOptions o = options;
  std::optional<training::TrainState> resumed;
  if (!o.resume.empty()) resumed = read_resume(o);
  const TextPairs text = is_text_task(o) ? read_text_pairs(o) : TextPairs{};
  if (o.task == "translate" && !resumed) choose_recipe(o, text);
  validate(o);
  if (o.threads > 0) gf::kernels::set_num_threads(o.threads);
  // Every random draw of the run follows from --seed, in this order: the model's weights and
  // dropout streams, then the batches' stream, and from it the checks' fresh sequences.
  Rng rng(o.seed);
  Learner learner = make_model(o, text, resumed, rng);
  Transformer& model = *learner.model;
  Rng batch_rng(rng.next_u64());
  const Rng fresh(batch_rng.next_u64());
  data::BatchSource batches = make_batches(o, learner, text, batch_rng);
  Checks checks(o, text, batches, fresh);
  describe(o, text, learner);
  // The checkpoint's folder is made now, once the options have passed, so that a --save path
  // that cannot be written fails before the training run rather than after it.
  const std::filesystem::path save_dir = std::filesystem::path(o.save).parent_path();
  if (!save_dir.empty()) std::filesystem::create_directories(save_dir);
  model.train();
  if (!resumed) plan_steps(o, batches, model.config);

  training::Trainer trainer = make_trainer(o, model);
  TrainRun run(o, learner, trainer, batches, checks);
  if (resumed) run.resume(*resumed);
  const StopOnSignals stop;
  int exit_code = 0;
  try {
    training::run(
        trainer, [&] { return run.next_batch(); },
        [&](const data::Batch& batch) {
          return training::teacher_forced_loss(model, batch, o.label_smoothing);
        },
        o.steps, run.hooks(stop, exit_code));
  } catch (const training::NonFiniteError& e) {
    run.fail(e);
  }
  if (exit_code != 0) return exit_code;
  run.finish();
  return 0;
}

}  // namespace gf::cli
