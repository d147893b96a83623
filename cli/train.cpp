// `transformer train`: teacher-forced training with label smoothing (§5.4), Adam and the
// warm-up schedule (§5.3), on a generated task, a file of id pairs, or sentence pairs (a file,
// or the generated toy language) through a tokenizer learned from them; then a check by
// greedy decoding (exact copies, or BLEU for text), the checkpoint (with the tokenizer, for
// text), and pictures of the loss and learning rate.
//
// A run keeps its work: beside the checkpoint goes the training state (cli/train_state.h), from
// which --resume continues exactly; Ctrl-C or SIGTERM stops after the current step and saves;
// and a loss or gradient that is not finite stops the run before the update it would spoil,
// saving the weights it had.
#include <fmt/format.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <csignal>
#include <filesystem>
#include <fstream>
#include <optional>
#include <stdexcept>

#include "autograd/errors.h"
#include "autograd/graph.h"
#include "autograd/kernels/parallel.h"
#include "autograd/ops.h"
#include "cli/commands.h"
#include "cli/common.h"
#include "cli/train_state.h"
#include "cli/translation.h"
#include "data/batch.h"
#include "data/pairs_file.h"
#include "data/parallel_corpus.h"
#include "data/tasks.h"
#include "data/toy_language.h"
#include "models/evaluation.h"
#include "nn/checkpoint.h"
#include "nn/optim.h"
#include "viz/line_plot.h"

namespace gf::cli {

namespace {

bool is_text_task(const TrainOptions& o) {
  return o.task == "translate" || o.task == "toy-translation";
}

// Sentence pairs for a text task: from --data and --dev, or generated (the toy language's
// train and dev parts, written to files by `transformer generate` for reading).
struct TextPairs {
  data::SentencePairsFile train, dev;  // dev.pairs is empty when there is no dev set
};

data::SentencePairsFile as_file(const std::vector<data::AlignedPair>& pairs,
                                const std::string& name) {
  data::SentencePairsFile file{.name = name, .pairs = {}, .lines = {}, .skipped = {}};
  for (const data::AlignedPair& p : pairs) {
    file.pairs.push_back({data::join_words(p.source), data::join_words(p.target),
                          data::alignment_text(p.alignment)});
    file.lines.push_back(static_cast<int64_t>(file.pairs.size()));
  }
  return file;
}

TextPairs read_text_pairs(const TrainOptions& o, uint64_t seed) {
  TextPairs text;
  if (o.task == "toy-translation") {
    Rng rng(seed);
    const data::ToyCorpus corpus =
        data::generate_toy_corpus({.split = data::parse_toy_split(o.split)}, rng);
    text.train = as_file(corpus.train, "toy-translation train");
    text.dev = as_file(corpus.dev, "toy-translation dev");
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

// The training batches: freshly generated pairs, the batches of an id file cycled in order,
// or, for text, epochs of batches of similar length.
class BatchSource {
 public:
  BatchSource(const TrainOptions& o, const TransformerConfig& config, uint64_t seed,
              std::vector<data::Pair> text_pairs = {})
      : rng_(seed),
        eval_rng_(rng_.next_u64()),
        epoch_start_(rng_.state()),
        batch_(o.batch),
        batch_tokens_(o.batch_tokens) {
    if (is_text_task(o)) {
      text_ = std::move(text_pairs);
    } else if (!o.pairs.empty()) {
      file_ = data::read_pairs(o.pairs);
      data::check_ids(*file_, static_cast<int32_t>(config.vocab_size));
      slices_ = data::batches_in_order(file_->pairs, o.batch);
    } else {
      task_ = data::parse_task(o.task);
      task_config_ = {.vocab_size = static_cast<int32_t>(config.vocab_size),
                      .min_len = o.min_length > 0 ? o.min_length : o.length,
                      .max_len = o.length};
      data::validate(task_config_);
    }
  }
  data::Batch next() {
    if (!text_.empty()) {
      if (next_slice_ == epoch_.size()) {
        epoch_start_ = rng_.state();
        epoch_ = data::batches_by_length(text_, batch_tokens_, rng_);
        next_slice_ = 0;
      }
      return data::make_batch(epoch_[next_slice_++]);
    }
    if (file_) return data::make_batch(slices_[next_slice_++ % slices_.size()]);
    const std::vector<data::Pair> pairs = data::generate(task_, batch_, task_config_, rng_);
    return data::make_batch(pairs);
  }
  bool generated() const { return !file_.has_value() && text_.empty(); }
  std::vector<data::Pair> fresh(int64_t count) {
    return data::generate(task_, count, task_config_, eval_rng_);
  }
  const std::vector<data::Pair>& file_pairs() const { return file_->pairs; }

  // Where the batches stand, and a return there. An epoch of text is not stored: it is drawn
  // again from the stream as it was before the epoch, which gives the same batches.
  BatchPosition position() const {
    return {.batches = rng_.state(),
            .eval = eval_rng_.state(),
            .epoch_start = epoch_start_,
            .next = static_cast<int64_t>(next_slice_),
            .in_epoch = !epoch_.empty()};
  }
  void restore(const BatchPosition& p, const std::string& path) {
    eval_rng_.set_state(p.eval);
    epoch_start_ = p.epoch_start;
    next_slice_ = static_cast<size_t>(p.next);
    if (text_.empty() || !p.in_epoch) {
      rng_.set_state(p.batches);
      return;
    }
    rng_.set_state(p.epoch_start);
    epoch_ = data::batches_by_length(text_, batch_tokens_, rng_);
    if (rng_.state() != p.batches || p.next < 0 || next_slice_ > epoch_.size())
      throw FormatError(fmt::format(
          "training state: {}: the training pairs differ from those of the run being resumed",
          path));
  }

  int64_t longest() const {
    if (generated()) return task_config_.max_len + 2;
    size_t longest = 0;
    for (const data::Pair& p : text_.empty() ? file_->pairs : text_)
      longest = std::max({longest, p.src.size(), p.tgt.size()});
    return static_cast<int64_t>(longest);
  }

 private:
  Rng rng_;                 // training batches
  Rng eval_rng_;            // evaluation sequences: drawing them must not change the training data
  Rng::State epoch_start_;  // text: rng_ before the current epoch was drawn
  int64_t batch_, batch_tokens_;
  data::Task task_ = data::Task::Copy;
  data::TaskConfig task_config_;
  std::optional<data::PairsFile> file_;
  std::vector<std::span<const data::Pair>> slices_;
  std::vector<data::Pair> text_;
  std::vector<std::vector<data::Pair>> epoch_;
  size_t next_slice_ = 0;
};

// Adam or SGD behind one face, with their buffers named after the parameters for the
// training state ("adam.m.encoder.layers.0.ffn.linear1.weight").
class Optimizer {
 public:
  Optimizer(const TrainOptions& o, nn::NamedTensors parameters, float lr)
      : parameters_(std::move(parameters)) {
    std::vector<Tensor> tensors;
    for (const auto& [name, p] : parameters_) tensors.push_back(p);
    if (o.optimizer == "adam")
      adam_.emplace(tensors, nn::AdamConfig{.lr = lr});
    else
      sgd_.emplace(tensors, nn::SgdConfig{.lr = lr});
  }
  void step(float lr) {
    if (adam_) {
      adam_->set_lr(lr);
      adam_->step();
    } else {
      sgd_->set_lr(lr);
      sgd_->step();
    }
  }
  int64_t steps() const { return adam_ ? adam_->steps() : 0; }
  nn::NamedTensors buffers() const {
    nn::NamedTensors named;
    if (adam_) {
      add(named, "adam.m.", adam_->first_moments());
      add(named, "adam.v.", adam_->second_moments());
    } else {
      add(named, "sgd.velocity.", sgd_->velocities());
    }
    return named;
  }
  void restore(const TrainState& state, const std::string& path) {
    if (state.optimizer.size() != (adam_ ? 2 : 1) * parameters_.size())
      throw FormatError(fmt::format(
          "training state: {}: holds {} optimizer buffers; {} for this model needs {}", path,
          state.optimizer.size(), adam_ ? "Adam" : "SGD", (adam_ ? 2 : 1) * parameters_.size()));
    if (adam_)
      adam_->restore(state.optimizer_step, find(state, "adam.m.", path),
                     find(state, "adam.v.", path));
    else
      sgd_->restore(find(state, "sgd.velocity.", path));
  }

 private:
  void add(nn::NamedTensors& named, const std::string& prefix,
           const std::vector<Tensor>& buffers) const {
    for (size_t i = 0; i < buffers.size(); ++i)
      named.emplace_back(prefix + parameters_[i].first, buffers[i]);
  }
  std::vector<Tensor> find(const TrainState& state, const std::string& prefix,
                           const std::string& path) const {
    std::vector<Tensor> found;
    for (const auto& [name, parameter] : parameters_) {
      const auto it = std::find_if(state.optimizer.begin(), state.optimizer.end(),
                                   [&](const auto& saved) { return saved.first == prefix + name; });
      if (it == state.optimizer.end())
        throw FormatError(fmt::format(
            "training state: {}: tensor \"{}{}\" is missing (the state is of another model or "
            "optimizer)",
            path, prefix, name));
      if (!(it->second.shape() == parameter.shape()))
        throw FormatError(
            fmt::format("training state: {}: tensor \"{}\" has shape {} but the parameter has {}",
                        path, it->first, it->second.shape(), parameter.shape()));
      found.push_back(it->second);
    }
    return found;
  }

  nn::NamedTensors parameters_;
  std::optional<nn::Adam> adam_;
  std::optional<nn::Sgd> sgd_;
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

// --resume: reads the training state beside the checkpoint and takes its options.
TrainState read_resume(TrainOptions& o) {
  if (!o.init.empty())
    throw std::invalid_argument(
        "--resume continues a run and --init starts a new one from a model: give one of them");
  const std::string path = train_state_path(o.resume);
  if (!std::filesystem::exists(path))
    throw std::invalid_argument(fmt::format(
        "--resume {}: there is no training state {} beside it, so the run cannot continue "
        "exactly (--init {} starts a new run from its weights)",
        o.resume, path, o.resume));
  TrainState state = load_train_state(path);
  apply_kept_options(state.options, o, path);
  if (!o.given.contains("save")) o.save = o.resume;
  if (o.steps <= state.step)
    throw std::invalid_argument(fmt::format(
        "--resume {}: the run has done {} steps already; --steps is the total to reach, so give "
        "more than {}",
        o.resume, state.step, state.step));
  return state;
}

void validate(const TrainOptions& o) {
  auto require = [](bool ok, const std::string& message) {
    if (!ok) throw std::invalid_argument(message);
  };
  require(o.steps > 0, fmt::format("--steps must be positive, got {}", o.steps));
  require(o.batch > 0, fmt::format("--batch must be positive, got {}", o.batch));
  require(o.lr >= 0.0f,
          fmt::format("--lr must not be negative, got {} (0: the schedule's default)", o.lr));
  require(o.warmup > 0, fmt::format("--warmup must be positive, got {}", o.warmup));
  require(o.clip >= 0.0f, fmt::format("--clip must not be negative, got {}", o.clip));
  require(o.label_smoothing >= 0.0f && o.label_smoothing < 1.0f,
          fmt::format("--label-smoothing {} is outside [0, 1)", o.label_smoothing));
  require(o.optimizer == "adam" || o.optimizer == "sgd",
          fmt::format("--optimizer must be adam or sgd, got \"{}\"", o.optimizer));
  require(o.schedule == "noam" || o.schedule == "constant",
          fmt::format("--schedule must be noam or constant, got \"{}\"", o.schedule));
  require(o.threads >= 0, fmt::format("--threads must not be negative, got {}", o.threads));
  require(o.eval_count > 0, fmt::format("--eval-count must be positive, got {}", o.eval_count));
  require(
      o.eval_every >= 0,
      fmt::format("--eval-every must not be negative, got {} (0: only at the end)", o.eval_every));
  require(o.save_every >= 0,
          fmt::format("--save-every must not be negative, got {}", o.save_every));
  require(o.batch_tokens > 0,
          fmt::format("--batch-tokens must be positive, got {}", o.batch_tokens));
  require(o.vocab_size >= 0,
          fmt::format("--vocab-size must not be negative, got {}", o.vocab_size));
  require(is_text_task(o) || o.data.empty(),
          fmt::format("--data is for --task translate; --task {} generates its data ({})", o.task,
                      "--pairs reads a file of ids"));
  require(o.task == "translate" || o.dev.empty(), "--dev is for --task translate");
  require(!is_text_task(o) || o.pairs.empty(),
          "--pairs holds token ids; sentence pairs for --task translate go in --data");
}

}  // namespace

int run_train(const TrainOptions& options) {
  TrainOptions o = options;
  std::optional<TrainState> resumed;
  if (!o.resume.empty()) resumed = read_resume(o);
  validate(o);
  if (o.threads > 0) gf::kernels::set_num_threads(o.threads);
  Rng rng(o.seed);
  const bool text = is_text_task(o);
  // Text tasks read (or generate) their pairs first: the tokenizer learned from them fixes the
  // vocabulary. The toy language is generated from --seed itself, so that `transformer generate`
  // with the same seed and sizes writes the same corpus, test part included.
  TextPairs pairs;
  if (text) pairs = read_text_pairs(o, o.seed);
  std::unique_ptr<data::Tokenizer> tokenizer;
  double tokenizer_seconds = -1.0;  // how long learning it took; -1: it came with the checkpoint
  std::unique_ptr<Transformer> model;
  const std::string& start_from = resumed ? o.resume : o.init;
  if (start_from.empty()) {
    TransformerConfig config = o.model;
    if (text) {
      const auto learning = std::chrono::steady_clock::now();
      tokenizer = learn_tokenizer(o, pairs.train);
      tokenizer_seconds =
          std::chrono::duration<double>(std::chrono::steady_clock::now() - learning).count();
      config.vocab_size = tokenizer->size();
    } else if (o.vocab_size > 0) {
      config.vocab_size = o.vocab_size;
    }
    model = std::make_unique<Transformer>(config, rng);
  } else {
    // The file fixes the architecture (and, for text, the tokenizer), but dropout is a
    // training choice it does not store: --dropout still applies, with masks drawn from --seed
    // (or, resuming, from where the saved run left its mask streams).
    if (text) {
      Translator translator = load_translator(start_from, o.model.dropout, rng.next_u64());
      model = std::move(translator.model);
      tokenizer = std::move(translator.tokenizer);
    } else {
      model = load_model(start_from, o.model.dropout, rng.next_u64());
    }
    if (resumed)
      fmt::print(stderr, "resuming {} at step {} of {} (its model and training settings)\n",
                 o.resume, resumed->step, o.steps);
    else
      fmt::print(stderr,
                 "starting from {} (its configuration replaces the model flags except "
                 "--dropout)\n",
                 o.init);
  }
  const TransformerConfig& config = model->config;
  std::vector<data::Pair> text_ids;
  if (text) {
    text_ids = data::encode_pairs(*tokenizer, pairs.train);
    for (size_t i = 0; i < text_ids.size(); ++i) {
      const size_t longest = std::max(text_ids[i].src.size(), text_ids[i].tgt.size() - 1);
      if (static_cast<int64_t>(longest) > config.max_len)
        throw std::invalid_argument(fmt::format(
            "{}:{}: the pair has {} tokens, more than --max-len {} (raise it, or leave the line "
            "out)",
            pairs.train.name, pairs.train.lines[i], longest, config.max_len));
    }
    fmt::print(stderr, "data: {} training pairs{}, {} tokenizer of {} tokens{}\n",
               pairs.train.pairs.size(),
               pairs.dev.pairs.empty() ? "" : fmt::format(", {} dev pairs", pairs.dev.pairs.size()),
               tokenizer->kind(), tokenizer->size(),
               tokenizer_seconds < 0 ? fmt::format(" (from {})", start_from)
                                     : fmt::format(" (learned in {:.2f}s)", tokenizer_seconds));
  }
  BatchSource source(o, config, rng.next_u64(), std::move(text_ids));
  if (!text && source.longest() > config.max_len)
    throw std::invalid_argument(fmt::format("sequences of up to {} tokens do not fit --max-len {}",
                                            source.longest(), config.max_len));
  // What the checks decode for text: the first --eval-count dev pairs, or training pairs when
  // there is no dev set (which only shows what the model memorised).
  const std::vector<data::SentencePair>& check_from =
      pairs.dev.pairs.empty() ? pairs.train.pairs : pairs.dev.pairs;
  const std::vector<data::SentencePair> check_pairs(
      check_from.begin(),
      check_from.begin() + std::min<std::ptrdiff_t>(o.eval_count, std::ssize(check_from)));
  const char* check_name = pairs.dev.pairs.empty() ? "training pairs" : "dev pairs";
  // The checkpoint's folder is made now, once the options have passed, so that a --save path
  // that cannot be written fails before the training run rather than after it.
  const std::filesystem::path save_dir = std::filesystem::path(o.save).parent_path();
  if (!save_dir.empty()) std::filesystem::create_directories(save_dir);
  model->train();
  fmt::print(
      stderr, "model: {} parameters (d_model {}, d_ff {}, heads {}, layers {}+{}, vocab {}{})\n",
      model->parameter_count(), config.d_model, config.d_ff, config.heads, config.encoder_layers,
      config.decoder_layers, config.vocab_size, config.tied ? ", tied" : "");

  const nn::NamedTensors parameters = model->named_parameters();
  std::vector<Tensor> parameter_tensors;
  for (const auto& [name, p] : parameters) parameter_tensors.push_back(p);
  // --lr 0 (the default) picks the schedule's own: a factor of 0.3 for noam, 1e-3 for a
  // constant rate. On the copy task, 0.5 let the loss spike back up two or three times after
  // it had reached its floor (the 600-step run then copied 95% exactly); 0.3 copies all 100
  // fresh sequences for seeds 1 to 3 and its curve has no such spikes.
  const float base_lr = o.lr > 0.0f ? o.lr : (o.schedule == "noam" ? 0.3f : 1e-3f);
  Optimizer optimizer(o, parameters, base_lr);
  auto learning_rate = [&](int64_t step) {
    return o.schedule == "noam" ? nn::noam_lr(step, config.d_model, o.warmup, base_lr) : base_lr;
  };

  std::vector<float> losses, rates;
  int64_t first_step = 1;
  if (resumed) {
    const std::string resumed_state = train_state_path(o.resume);
    if (weights_digest(*model) != resumed->weights)
      fmt::print(stderr,
                 "note: {} holds other weights than its training state (a save stopped between "
                 "the two files?); the run continues from the state's weights, of step {}\n",
                 o.resume, resumed->step);
    nn::load_checkpoint({.tensors = resumed->model, .metadata = {}}, resumed_state, *model);
    if (weights_digest(*model) != resumed->weights)
      throw FormatError(
          fmt::format("training state: {}: its weights do not match their digest", resumed_state));
    optimizer.restore(*resumed, resumed_state);
    restore_dropout_states(*model, resumed->dropout, resumed_state);
    source.restore(resumed->batches, resumed_state);
    losses = resumed->losses;
    rates = resumed->rates;
    first_step = resumed->step + 1;
  }

  // Saves the checkpoint and, beside it, the training state of a run that has done `done`
  // steps and whose batches and dropout masks continue from `position` and `dropout`.
  const nn::Metadata kept = kept_options(o);
  const std::string state_path = train_state_path(o.save);
  auto save_run = [&](int64_t done, const BatchPosition& position,
                      const std::vector<std::pair<std::string, Rng::State>>& dropout) {
    save_model(o.save, *model, tokenizer.get());
    save_train_state(state_path, {.step = done,
                                  .batches = position,
                                  .dropout = dropout,
                                  .optimizer_step = optimizer.steps(),
                                  .model = parameters,
                                  .optimizer = optimizer.buffers(),
                                  .losses = losses,
                                  .rates = rates,
                                  .weights = weights_digest(*model),
                                  .options = kept});
    if (!o.log_losses.empty()) write_loss_log(o.log_losses, losses);
  };
  auto save_now = [&](int64_t done) {
    save_run(done, source.position(), dropout_states(*model));
  };

  for (const std::string& path : {o.save, state_path}) remove_stale_temporaries(path);
  const StopOnSignals stop;
  Progress progress(o.steps);
  int64_t tokens = 0, sequences = 0;
  const auto start = std::chrono::steady_clock::now();
  double checking = 0.0;  // seconds spent in the checks, which the speeds leave out
  const auto training_seconds = [&] {
    return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count() -
           checking;
  };
  for (int64_t step = first_step; step <= o.steps; ++step) {
    // Where this step starts from: a step that goes bad is saved as not taken.
    const BatchPosition position = source.position();
    const auto dropout = dropout_states(*model);
    const data::Batch batch = source.next();
    // The last step's gradients go first, so that they do not sit in memory beside this
    // step's activations.
    model->zero_grad();
    const Tensor logits = model->forward(batch.src, batch.tgt_in);
    const Tensor loss =
        cross_entropy(logits, batch.tgt_out,
                      {.ignore_index = config.pad_id, .label_smoothing = o.label_smoothing});
    loss.backward();
    // Checked before the update, so that the weights are still those of the last good step.
    std::optional<std::string> bad;
    if (const float value = loss.item(); !std::isfinite(value))
      bad = fmt::format("the loss is {}", std::isnan(value) ? "nan" : "inf");
    else
      bad = nn::find_non_finite_gradient(parameters);
    if (bad) {
      progress.note(fmt::format("step {}: {}", step, *bad));
      save_run(step - 1, position, dropout);
      throw std::runtime_error(fmt::format(
          "step {}: {}; training stopped, and {} holds the weights before it (step {}): lower "
          "--lr, or use --clip",
          step, *bad, o.save, step - 1));
    }
    if (o.clip > 0.0f) nn::clip_grad_norm(parameter_tensors, o.clip);
    const float lr = learning_rate(step);
    optimizer.step(lr);
    if (const auto broken = nn::find_non_finite_value(parameters))
      throw std::runtime_error(fmt::format(
          "step {}: {} after the update; training stopped without saving these weights{}", step,
          *broken,
          std::filesystem::exists(o.save) ? fmt::format(" ({} holds the last ones saved)", o.save)
                                          : ""));
    losses.push_back(loss.item());
    rates.push_back(lr);
    tokens += batch.target_tokens;
    sequences += batch.src.shape()[0];
    progress.update(step, fmt::format("loss {:.4f} lr {:.2e} {:.0f} tok/s", losses.back(), lr,
                                      static_cast<double>(tokens) / training_seconds()));
    if (o.eval_every > 0 && step % o.eval_every == 0 && step < o.steps) {
      const auto check_start = std::chrono::steady_clock::now();
      if (text) {
        const double bleu = score_translations(*model, *tokenizer, check_pairs).bleu.score;
        progress.note(fmt::format("step {}: BLEU {:.1f} on {} {} (greedy)", step, bleu,
                                  check_pairs.size(), check_name));
      } else if (source.generated()) {
        const double accuracy = exact_match(*model, source.fresh(o.eval_count));
        progress.note(fmt::format("step {}: {:.0f}% of {} fresh sequences decoded exactly", step,
                                  100 * accuracy, o.eval_count));
      }
      model->train();
      checking +=
          std::chrono::duration<double>(std::chrono::steady_clock::now() - check_start).count();
    }
    if (stop.pending() != 0 && step < o.steps) {
      save_now(step);
      progress.note(fmt::format(
          "stopped by {} after step {} of {}: saved {} and its training state {}; continue "
          "with: transformer train --resume {} --steps {}{}",
          stop.pending() == SIGINT ? "SIGINT" : "SIGTERM", step, o.steps, o.save, state_path,
          o.save, o.steps, o.save_every > 0 ? fmt::format(" --save-every {}", o.save_every) : ""));
      // The shell's convention for a program ended by signal N, so that scripts see the stop.
      return 128 + stop.pending();
    }
    if (o.save_every > 0 && step % o.save_every == 0 && step < o.steps) save_now(step);
  }
  const double seconds = training_seconds();
  // Saved as it stands before the final check draws its sequences, so that a run continued
  // from here evaluates exactly as one that had been asked for more steps at the start.
  const BatchPosition end_position = source.position();
  progress.finish(fmt::format("final loss {:.4f}, {:.0f} target tokens/s, {:.0f} {}/s",
                              losses.back(), static_cast<double>(tokens) / seconds,
                              static_cast<double>(sequences) / seconds,
                              text ? "sentence pairs" : "sequences"));

  // Greedy decoding, never teacher forcing: the model must produce each token from its own.
  if (text) {
    const std::vector<data::SentencePair>& final_pairs =
        pairs.dev.pairs.empty() ? check_pairs : pairs.dev.pairs;
    const TranslationScores scores = score_translations(*model, *tokenizer, final_pairs);
    fmt::print("{} on {} {} (greedy), chrF = {:.2f}\n", scores.bleu.to_string(), final_pairs.size(),
               check_name, scores.chrf.score);
  } else {
    const double accuracy = source.generated() ? exact_match(*model, source.fresh(o.eval_count))
                                               : exact_match(*model, source.file_pairs());
    fmt::print("exact: {:.1f}% of {} {} decoded exactly (greedy)\n", 100 * accuracy,
               source.generated() ? o.eval_count : static_cast<int64_t>(source.file_pairs().size()),
               source.generated() ? "fresh sequences" : "training pairs");
  }

  save_run(o.steps, end_position, dropout_states(*model));
  const std::string loss_png = beside(o.save, ".loss.png"), lr_png = beside(o.save, ".lr.png");
  viz::write_png(
      viz::line_plot(
          {{.name = "training loss", .ys = losses}},
          {.title = "loss (label-smoothed cross-entropy)", .y_label = "loss", .log_y = true}),
      loss_png);
  viz::write_png(viz::line_plot({{.name = "learning rate", .ys = rates}},
                                {.title = fmt::format("learning rate ({} schedule)", o.schedule),
                                 .y_label = "learning rate"}),
                 lr_png);
  fmt::print("saved: {} (checkpoint), {} (training state, for --resume), {} and {} (curves)\n",
             o.save, state_path, loss_png, lr_png);
  return 0;
}

}  // namespace gf::cli
