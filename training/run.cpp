#include "training/run.h"

#include <fmt/format.h>

#include <algorithm>
#include <chrono>
#include <filesystem>
#include <fstream>
#include <stdexcept>
#include <utility>

#include "autograd/kernels/gemm.h"
#include "autograd/kernels/parallel.h"
#include "data/pairs_file.h"
#include "data/parallel_corpus.h"
#include "data/tasks.h"
#include "nn/checkpoint.h"
#include "viz/line_plot.h"

namespace gf::training {

namespace {

using Clock = std::chrono::steady_clock;

double seconds_since(Clock::time_point start) {
  return std::chrono::duration<double>(Clock::now() - start).count();
}

// "runs/copy.safetensors", ".html" -> "runs/copy.html"
std::string beside(const std::string& path, const std::string& suffix) {
  return std::filesystem::path(path).replace_extension().string() + suffix;
}

// The training state of --resume, read before anything else, so that its settings are known.
TrainState read_state_to_resume(const RunConfig& asked) {
  if (!asked.init.empty())
    throw std::invalid_argument(
        "--resume continues a run and --init starts a new one from a model: give one of them");
  const std::string path = train_state_path(asked.resume);
  if (!std::filesystem::exists(path))
    throw std::invalid_argument(fmt::format(
        "--resume {}: there is no training state {} beside it, so the run cannot continue "
        "exactly (--init {} starts a new run from its weights)",
        asked.resume, path, asked.resume));
  return load_train_state(path);
}

// A resumed run goes on to settings.steps, which must lie beyond the saved step and, with the
// cosine, not past the step its rate reaches zero at.
void check_steps_to_resume(const RunSettings& s, const TrainState& state) {
  if (s.steps <= state.step)
    throw std::invalid_argument(fmt::format(
        "--resume {}: the run has done {} steps already; --steps is the total to reach, so give "
        "more than {}",
        s.resume, state.step, state.step));
  if (s.schedule == ScheduleKind::Cosine && s.steps > s.schedule_steps)
    throw std::invalid_argument(fmt::format(
        "--resume {}: the run's cosine schedule falls to zero at step {}, so --steps {} would "
        "train at a rate of zero; continue to at most {}, or start a new run from its weights "
        "with --init {}",
        s.resume, s.schedule_steps, s.steps, s.schedule_steps, s.resume));
}

// A checkpoint fixes the model's shape. A shape asked for with init or resume that differs
// would be silently replaced by the file's, so it is refused, naming both.
void refuse_other_shape(const RunConfig& asked, const TransformerConfig& saved,
                        const std::string& path) {
  const auto layers = [&saved](int64_t n) {
    return saved.decoder_only() ? fmt::format("{} decoder-only layers", n)
                                : fmt::format("{}+{} layers", n, n);
  };
  const auto tied = [](bool t) {
    return t ? "tied embeddings" : "untied embeddings";
  };
  const auto norm = [](bool pre) {
    return pre ? "pre-norm layers" : "post-norm layers";
  };
  const auto positions = [](bool learned) {
    return learned ? "learned positions" : "sinusoidal positions";
  };
  // The text of an asked setting, or nothing when it was not given.
  const auto shown = [](const auto& setting, const auto& text) -> std::optional<std::string> {
    if (!setting) return std::nullopt;
    return std::string(text(*setting));
  };
  struct Shape {
    const char* flag;
    std::optional<std::string> asked;
    std::string saved;
  };
  const Shape shapes[] = {
      {"d-model", shown(asked.d_model, [](int64_t d) { return fmt::format("d_model {}", d); }),
       fmt::format("d_model {}", saved.d_model)},
      {"d-ff", shown(asked.d_ff, [](int64_t d) { return fmt::format("d_ff {}", d); }),
       fmt::format("d_ff {}", saved.d_ff)},
      {"heads", shown(asked.heads, [](int64_t h) { return fmt::format("{} heads", h); }),
       fmt::format("{} heads", saved.heads)},
      {"layers", shown(asked.layers, layers),
       saved.decoder_only()
           ? layers(saved.decoder_layers)
           : fmt::format("{}+{} layers", saved.encoder_layers, saved.decoder_layers)},
      {"max-len", shown(asked.max_len, [](int64_t n) { return fmt::format("max_len {}", n); }),
       fmt::format("max_len {}", saved.max_len)},
      {"tied", shown(asked.tied, tied), tied(saved.tied)},
      {"norm-first",
       shown(asked.norm, [&](NormPlacement n) { return norm(n == NormPlacement::PreNorm); }),
       norm(saved.norm_first)},
      {"positions",
       shown(asked.positions,
             [&](PositionKind p) { return positions(p == PositionKind::Learned); }),
       positions(saved.learned_positions)}};
  for (const Shape& shape : shapes)
    if (shape.asked && *shape.asked != shape.saved)
      throw std::invalid_argument(fmt::format(
          "--{} asks for {}, but {} holds a model with {}: a checkpoint fixes the model's shape "
          "(leave the flag out, or train a new model without --init and --resume)",
          shape.flag, *shape.asked, path, shape.saved));
}

// The training batches: fresh pairs of a generated task, an id file's batches cycled in order,
// or epochs of text pairs batched by length. Throws when a sequence does not fit the model.
data::BatchSource make_batches(const RunSettings& s, const Transformer& model,
                               const data::Tokenizer* tokenizer, const RunText& text, Rng rng) {
  const TransformerConfig& config = model.config;
  if (s.task == Task::LanguageModel)  // windows of max_len tokens, each read after bos
    return data::BatchSource::windows(tokenizer->encode(text.train_text.text), config.max_len,
                                      s.batch, config.bos_id, rng);
  if (tokenizer) {
    std::vector<data::Pair> ids = data::encode_pairs(*tokenizer, text.train);
    for (size_t i = 0; i < ids.size(); ++i) {
      const size_t longest = std::max(ids[i].src.size(), ids[i].tgt.size() - 1);
      if (static_cast<int64_t>(longest) > config.max_len)
        throw std::invalid_argument(fmt::format(
            "{}:{}: the pair has {} tokens, more than --max-len {} (raise it, or leave the line "
            "out)",
            text.train.name, text.train.lines[i], longest, config.max_len));
    }
    return data::BatchSource::by_length(std::move(ids), s.batch_tokens, rng);
  }
  std::optional<data::BatchSource> batches;
  if (!s.pairs.empty()) {
    data::PairsFile file = data::read_pairs(s.pairs);
    data::check_ids(file, static_cast<int32_t>(config.vocab_size));
    batches = data::BatchSource::cycled(std::move(file.pairs), s.batch, rng);
  } else {
    const data::TaskConfig task = {.vocab_size = static_cast<int32_t>(config.vocab_size),
                                   .min_len = s.min_length > 0 ? s.min_length : s.length,
                                   .max_len = s.length};
    const data::Task kind = s.task == Task::Reverse ? data::Task::Reverse : data::Task::Copy;
    batches = data::BatchSource::generated(kind, task, s.batch, rng);
  }
  if (batches->longest() > config.max_len)
    throw std::invalid_argument(fmt::format("sequences of up to {} tokens do not fit --max-len {}",
                                            batches->longest(), config.max_len));
  return std::move(*batches);
}

// Lines "step<TAB>loss", the loss in the shortest text that reads back to the same float, so
// that two runs' logs are equal exactly when their losses are equal bit for bit.
void write_loss_log(const std::string& path, const std::vector<float>& losses) {
  std::ofstream out(path);
  for (size_t i = 0; i < losses.size(); ++i) out << fmt::format("{}\t{}\n", i + 1, losses[i]);
  if (!out) throw std::runtime_error(fmt::format("--log-losses: cannot write {}", path));
}

// The score of model with other weights in it for the call of score, and its own back after.
double scored_with(Transformer& model, const nn::NamedTensors& weights,
                   const std::function<double(Transformer&)>& score) {
  const nn::NamedTensors own = copy_weights(model);
  load_weights(model, weights);
  const double value = score(model);
  load_weights(model, own);
  return value;
}

}  // namespace

Schedule schedule_of(const RunSettings& s, int64_t d_model) {
  const float lr = schedule_rate(s);
  switch (s.schedule) {
    case ScheduleKind::Noam:
      return noam(d_model, s.warmup, lr);
    case ScheduleKind::Cosine:
      return cosine(s.warmup, s.schedule_steps, lr);
    case ScheduleKind::Constant:
      break;
  }
  return constant(lr);
}

// At the default rates: on the copy task, a noam factor of 0.5 let the loss spike back up two
// or three times after it had reached its floor (the 600-step run then copied 95% exactly);
// 0.3 copies all 100 fresh sequences for seeds 1 to 3 and its curve has no such spikes.
Trainer trainer_of(const RunSettings& s, const Transformer& model) {
  const float lr = schedule_rate(s);
  nn::NamedTensors parameters = model.named_parameters();
  nn::Optimizer optimizer = s.optimizer == OptimizerKind::Adam
                                ? nn::Optimizer(std::move(parameters), nn::AdamConfig{.lr = lr})
                                : nn::Optimizer(std::move(parameters), nn::SgdConfig{.lr = lr});
  return Trainer(std::move(optimizer), schedule_of(s, model.config.d_model),
                 {.clip = s.clip, .check_finite = true});
}

std::unique_ptr<data::Tokenizer> learn_tokenizer(TokenizerKind kind, int64_t vocab_size,
                                                 const data::SentencePairsFile& train) {
  std::vector<std::string> texts;
  texts.reserve(2 * train.pairs.size());
  for (const data::SentencePair& p : train.pairs) {
    texts.push_back(p.source);
    texts.push_back(p.target);
  }
  return learn_tokenizer(kind, vocab_size, texts);
}

std::unique_ptr<data::Tokenizer> learn_tokenizer(TokenizerKind kind, int64_t vocab_size,
                                                 std::span<const std::string> texts) {
  const auto size = static_cast<int32_t>(vocab_size > 0 ? vocab_size : 8000);
  switch (kind) {
    case TokenizerKind::Word:
      return std::make_unique<data::WordTokenizer>(
          data::WordTokenizer::learn(texts, {.max_size = size}));
    case TokenizerKind::Char:
      return std::make_unique<data::CharTokenizer>(data::CharTokenizer::learn(texts));
    case TokenizerKind::Bpe:
      break;
  }
  return std::make_unique<data::BpeTokenizer>(
      data::BpeTokenizer::learn(texts, {.vocab_size = size}));
}

Run::Run(const RunConfig& config) : asked_(config) {
  SettleContext context;
  std::optional<TrainState> resumed;
  if (!config.resume.empty()) {
    resumed = read_state_to_resume(config);
    context.saved = settings_from_metadata(resumed->options, train_state_path(config.resume));
  }
  settings_ = settle(config, context).settings;
  if (resumed) check_steps_to_resume(settings_, *resumed);
  text_ = read_run_text(settings_);
  if (settings_.task == Task::Translate && !resumed) {
    const CorpusFacts facts = corpus_facts(text_.train);
    context.recipe = text_recipe(facts);
    if (context.recipe) {
      const Settled settled = settle(config, context);
      settings_ = settled.settings;
      start_.recipe_line = fmt::format(
          "recipe for {} pairs of {} words ({} distinct), where no flag says otherwise: {}",
          facts.pairs, facts.words, facts.distinct_words, settled.recipe_choices);
    }
  }
  if (settings_.task == Task::LanguageModel && !resumed) {
    const TextFacts facts = text_facts(text_.train_text.text);
    context.recipe = lm_recipe(facts);
    const Settled settled = settle(config, context);
    settings_ = settled.settings;
    start_.recipe_line = fmt::format(
        "recipe for a text of {} characters ({} distinct) and {} words, where no flag says "
        "otherwise: {}",
        facts.characters, facts.distinct_characters, facts.words, settled.recipe_choices);
  }
  validate(settings_);
  if (settings_.threads > 0) kernels::set_num_threads(settings_.threads);
  use_precision();
  // The order of the random streams (run.h).
  Rng rng(settings_.seed);
  make_model(resumed, rng);
  Rng batch_rng(settings_.batch_seed ? *settings_.batch_seed : rng.next_u64());
  const Rng fresh(batch_rng.next_u64());
  batches_ = std::make_unique<data::BatchSource>(
      make_batches(settings_, model(), tokenizer(), text_, batch_rng));
  // The page's sequences are those the first fresh checks would draw, and a resumed run shows
  // the ones its first part showed (a state from before rng.page_sequences was kept draws them
  // from this run's stream, whose start depends on how the model was made).
  Rng page_stream = fresh;
  if (resumed && resumed->page_sequences) page_stream.set_state(*resumed->page_sequences);
  checks_ =
      std::make_unique<RunChecks>(settings_, text_, *batches_, tokenizer(), fresh, page_stream);
  const std::filesystem::path folder = std::filesystem::path(settings_.save).parent_path();
  if (!folder.empty()) std::filesystem::create_directories(folder);
  model().train();
  if (!resumed) plan_steps_for_minutes();
  trainer_ = std::make_unique<Trainer>(trainer_of(settings_, model()));
  kept_settings_ = to_metadata(settings_);
  names_ = token_names(tokenizer(), model().config);
  for (const std::string& path : {settings_.save, state_path()}) nn::remove_stale_temporaries(path);
  const std::vector<data::Pair> pairs = checks_->page_pairs();
  if (settings_.snapshots > 0 && !pairs.empty())
    recorder_.emplace(pairs.front(), names_, checks_->page_metric(), settings_.steps,
                      settings_.snapshots);
  if (resumed) continue_from(*resumed);
}

// A new model (and, for text, a tokenizer learned from the pairs), or the model of init or
// resume. A file fixes the architecture (and, for text, the tokenizer), but dropout is a
// training choice it does not store: the settings' dropout still applies, with masks drawn
// from the seed (or, resuming, from where the saved run left its mask streams).
void Run::make_model(const std::optional<TrainState>& resumed, Rng& rng) {
  const std::string& from = resumed ? settings_.resume : settings_.init;
  const bool text = is_tokenized(settings_.task);
  if (from.empty()) {
    TransformerConfig config = settings_.model;
    if (text) {
      const auto learning = Clock::now();
      model_.tokenizer =
          settings_.task == Task::LanguageModel
              ? learn_tokenizer(settings_.tokenizer, settings_.vocab_size,
                                std::span<const std::string>(&text_.train_text.text, 1))
              : learn_tokenizer(settings_.tokenizer, settings_.vocab_size, text_.train);
      start_.tokenizer_origin = fmt::format(" (learned in {:.2f}s)", seconds_since(learning));
      config.vocab_size = model_.tokenizer->size();
    } else if (settings_.vocab_size > 0) {
      config.vocab_size = settings_.vocab_size;
    }
    model_.model = std::make_unique<Transformer>(config, rng);
    return;
  }
  const float dropout = settings_.model.dropout;
  if (text) {
    model_ = load_translator(from, dropout, rng.next_u64());
    start_.tokenizer_origin = fmt::format(" (from {})", from);
  } else {
    model_.model = load_model(from, dropout, rng.next_u64());
  }
  if (model().config.decoder_only() != (settings_.task == Task::LanguageModel))
    throw std::invalid_argument(fmt::format(
        "{} holds {} model, and --task {} trains {}", from,
        model().config.decoder_only() ? "a decoder-only" : "an encoder-decoder",
        name_of(settings_.task),
        settings_.task == Task::LanguageModel ? "a decoder-only one" : "an encoder-decoder"));
  refuse_other_shape(asked_, model().config, from);
  settings_.model = model().config;  // the file's shape, which the checks and page read too
  start_.model_origin =
      resumed ? fmt::format("resuming {} at step {} of {} (its model and training settings)", from,
                            resumed->step, settings_.steps)
              : fmt::format(
                    "starting from {} (its configuration replaces the model flags except "
                    "--dropout)",
                    from);
}

// minutes: the steps that fit, from the speed of whole steps on the first batches (timed on a
// stand-in model, at a constant rate: the rate does not change the time); the run is then the
// one those steps give.
void Run::plan_steps_for_minutes() {
  if (settings_.minutes <= 0) return;
  RunSettings timing_settings = settings_;
  timing_settings.schedule = ScheduleKind::Constant;
  const StepTiming timing = time_steps(
      model().config, *batches_,
      [&](const Transformer& m) { return trainer_of(timing_settings, m); },
      [&](Transformer& m, const data::Batch& b) {
        return teacher_forced_loss(m, b, settings_.label_smoothing);
      });
  settings_.steps =
      steps_for_minutes(settings_.minutes, timing, settings_.recipe ? 2 : settings_.warmup + 1);
  fit_to_steps(settings_, asked_);
  start_.timing = timing;
}

void Run::continue_from(const TrainState& state) {
  const std::string in_checkpoint = weights_digest(model());
  if (in_checkpoint != state.weights && in_checkpoint != state.checkpoint_weights)
    start_.note = fmt::format(
        "note: {} holds other weights than its training state (a save stopped between the two "
        "files?); the run continues from the state's weights, of step {}",
        settings_.resume, state.step);
  restore(state, train_state_path(settings_.resume), model(), *trainer_, *batches_,
          checks_->fresh_stream());
  losses_ = state.losses;
  rates_ = state.rates;
  if (recorder_ && !state.page.empty())
    recorder_->history() = PageHistory::from_json(state.page, settings_.resume);
}

RunPosition Run::current_position() {
  return {batches_->position(), checks_->fresh_stream().state(), nn::random_states(model())};
}

void Run::use_precision() const {
  kernels::set_gemm_precision(settings_.bfloat16 ? kernels::GemmPrecision::BFloat16
                                                 : kernels::GemmPrecision::Float32);
}

StepReport Run::step() {
  use_precision();  // another Run of the program may have set its own since
  const auto start = Clock::now();
  const double checking_before = checking_seconds_;
  StepReport report;
  if (losses_.empty()) report.snapshot = take_snapshot(0);  // the initial weights' attention
  const RunPosition before = current_position();
  const data::Batch batch = batches_->next();
  StepResult result;
  try {
    result = trainer_->step(
        [&] { return teacher_forced_loss(model(), batch, settings_.label_smoothing); });
  } catch (const NonFiniteError& e) {
    fail(e, before);
  }
  losses_.push_back(result.loss);
  rates_.push_back(result.lr);
  target_tokens_ += batch.target_tokens;
  sequences_ += batch.src.shape()[0];
  report.step = result.step;
  report.loss = result.loss;
  report.lr = result.lr;
  const int64_t s = result.step, last = settings_.steps;
  if (settings_.eval_every > 0 && s % settings_.eval_every == 0 && s < last)
    report.check = check(s);
  if (averaged_at(s)) average_.add(model());
  report.snapshot = take_snapshot(s) || report.snapshot;
  training_seconds_ += seconds_since(start) - (checking_seconds_ - checking_before);
  report.target_tokens_per_second = static_cast<double>(target_tokens_) / training_seconds_;
  if (settings_.save_every > 0 && s % settings_.save_every == 0 && s < last) {
    save();
    report.saved = true;
  }
  return report;
}

// Text: BLEU on the check pairs, and the weights kept when it is the best so far. A generated
// task: exact copies of fresh sequences.
std::optional<std::string> Run::check(int64_t step) {
  const auto start = Clock::now();
  std::optional<std::string> line;
  if (settings_.task == Task::LanguageModel) {
    const double perplexity = checks_->check_perplexity(model());
    best_.offer(step, -perplexity, model());  // the lower the better
    line = fmt::format("step {}: perplexity {:.2f} on {}", step, perplexity, checks_->check_set());
  } else if (tokenizer()) {
    const double bleu = checks_->check_bleu(model());
    best_.offer(step, bleu, model());
    line = fmt::format("step {}: BLEU {:.1f} on {} (greedy)", step, bleu, checks_->check_set());
  } else if (const std::optional<double> exact = checks_->exact_on_fresh_sequences(model())) {
    line = fmt::format("step {}: {:.0f}% of {} fresh sequences decoded exactly", step, 100 * *exact,
                       settings_.eval_count);
  }
  checking_seconds_ += seconds_since(start);
  return line;
}

// average N: the steps N_steps, N_steps - every, ... (N of them) go into the average.
bool Run::averaged_at(int64_t step) const {
  if (settings_.average == 0) return false;
  const int64_t every = std::max<int64_t>(1, settings_.steps / 50),
                before_end = settings_.steps - step;
  return before_end >= 0 && before_end % every == 0 && before_end / every < settings_.average;
}

// A snapshot for the page, at the recorder's steps; its time counts as checking.
bool Run::take_snapshot(int64_t step) {
  if (!recorder_) return false;
  const auto start = Clock::now();
  const bool taken = recorder_->at_step(model(), step);
  if (taken) checking_seconds_ += seconds_since(start);
  return taken;
}

void Run::save() {
  save_at(current_position());
}

// The checkpoint (model's weights, or checkpoint_weights when given), then the training state
// of the steps done so far as they stood at `at`, which always continues from model's weights
// and notes the checkpoint's digest when it holds others.
void Run::save_at(const RunPosition& at, const nn::NamedTensors& checkpoint_weights) {
  std::string checkpoint_digest;
  if (checkpoint_weights.empty()) {
    save_model(settings_.save, model(), tokenizer());
  } else {
    save_model_with_weights(settings_.save, model(), checkpoint_weights, tokenizer());
    checkpoint_digest = weights_digest(checkpoint_weights);
  }
  TrainState state = capture(model(), *trainer_, at.batches, at.fresh, at.dropout, losses_, rates_,
                             kept_settings_);
  state.checkpoint_weights = checkpoint_digest;
  if (batches_->is_generated()) state.page_sequences = checks_->page_stream();
  state.page = page_history().to_json();
  save_train_state(state_path(), state);
  if (!settings_.log_losses.empty()) write_loss_log(settings_.log_losses, losses_);
}

// A loss, gradient or weight that is not finite: the run stops, and saves the weights of the
// step before when they are still untouched.
void Run::fail(const NonFiniteError& e, const RunPosition& before) {
  if (e.after_update)
    throw std::runtime_error(
        fmt::format("{}; training stopped without saving these weights{}", e.what(),
                    std::filesystem::exists(settings_.save)
                        ? fmt::format(" ({} holds the last ones saved)", settings_.save)
                        : ""));
  save_at(before);
  throw std::runtime_error(fmt::format(
      "{}; training stopped, and {} holds the weights before it (step {}): lower --lr, or use "
      "--clip",
      e.what(), settings_.save, e.step - 1));
}

WeightsChoice Run::choose_weights_and_save() {
  // The position before the final checks draw their sequences, so that a run continued from
  // here evaluates exactly as one that had been asked for more steps at the start.
  const RunPosition end = current_position();
  const auto choosing = Clock::now();
  WeightsChoice chosen;
  if (tokenizer() && (!best_.empty() || average_.count() >= 2)) {
    // Higher is better: BLEU, or a language model's perplexity negated (as best_ holds it).
    const bool language_model = settings_.task == Task::LanguageModel;
    const auto score = [this, language_model](Transformer& m) {
      return language_model ? -checks_->check_perplexity(m) : checks_->check_bleu(m);
    };
    std::vector<std::pair<WeightsChoice, double>> candidates = {
        {{fmt::format("the last step's weights ({})", settings_.steps), {}, ""}, score(model())}};
    if (!best_.empty() && best_.step() != settings_.steps)
      candidates.push_back(
          {{fmt::format("the best check's weights (step {})", best_.step()), best_.weights(), ""},
           best_.score()});
    if (average_.count() >= 2)
      candidates.push_back(
          {{fmt::format("the average of the last {} checkpoints", average_.count()),
            average_.mean(), ""},
           scored_with(model(), average_.mean(), score)});
    size_t best = 0;
    std::vector<std::string> scores;
    for (size_t i = 0; i < candidates.size(); ++i) {
      scores.push_back(fmt::format("{} {:.2f}", candidates[i].first.name,
                                   language_model ? -candidates[i].second : candidates[i].second));
      if (candidates[i].second > candidates[best].second) best = i;
    }
    chosen = candidates[best].first;
    chosen.scores =
        fmt::format("{} on {}{}: {}", language_model ? "perplexity" : "BLEU", checks_->check_set(),
                    language_model ? "" : " (greedy)", fmt::join(scores, ", "));
  }
  checking_seconds_ += seconds_since(choosing);
  save_at(end, chosen.weights);
  if (!chosen.weights.empty()) load_weights(model(), chosen.weights);
  return chosen;
}

std::pair<std::string, std::string> Run::write_curves() const {
  const std::string loss_png = beside(settings_.save, ".loss.png"),
                    lr_png = beside(settings_.save, ".lr.png");
  // Each step's loss, light, under its moving average (training/run_page.h), as on the page.
  const double span = smoothing_span(losses_.size());
  viz::write_png(
      viz::line_plot(
          {{.name = "each step", .ys = losses_, .colour = viz::Rgb{166, 189, 219}},
           {.name = fmt::format("moving average, ~{:.0f} steps", span),
            .ys = moving_average(losses_, span),
            .colour = viz::Rgb{8, 69, 148}}},
          {.title = "loss (label-smoothed cross-entropy)", .y_label = "loss", .log_y = true}),
      loss_png);
  viz::write_png(viz::line_plot({{.name = "learning rate", .ys = rates_}},
                                {.title = fmt::format("learning rate ({} schedule)",
                                                      name_of(settings_.schedule)),
                                 .y_label = "learning rate"}),
                 lr_png);
  return {loss_png, lr_png};
}

// The page's history with this part of the run's times and counts added.
PageHistory Run::page_history() const {
  PageHistory history = recorder_ ? recorder_->history() : PageHistory{};
  history.training_seconds += training_seconds_;
  history.checking_seconds += checking_seconds_;
  history.target_tokens += target_tokens_;
  history.sequences += sequences_;
  return history;
}

viz::RunPage Run::page() {
  viz::RunPage page =
      run_page(trained_run_header(settings_.save, kept_settings_, std::ssize(losses_)), model(),
               losses_, rates_, page_history());
  checks_->fill_page(page, model(), names_);
  return page;
}

std::string Run::write_page() {
  const std::string path = beside(settings_.save, ".html");
  viz::write_run_page(page(), path);
  return path;
}

}  // namespace gf::training
