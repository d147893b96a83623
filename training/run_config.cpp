#include "training/run_config.h"

#include <fmt/format.h>

#include <algorithm>
#include <functional>
#include <stdexcept>
#include <vector>

#include "autograd/errors.h"
#include "autograd/parse_number.h"

namespace gf::training {

namespace {

// ---- The kept settings: their text in the training state ------------------------------------

template <typename Number>
requires std::is_arithmetic_v<Number> std::string text_of(Number value) {
  return fmt::format("{}", value);  // the shortest text that reads back to the same value
}
template <typename Kind>
requires std::is_enum_v<Kind> std::string text_of(Kind kind) {
  return std::string(name_of(kind));
}

template <typename Number>
requires std::is_arithmetic_v<Number>
bool parse_text(const std::string& text, Number& out) {
  return parse_number(text, out);
}
std::optional<Task> named(std::string_view name, Task*) {
  return task_named(name);
}
std::optional<data::ToySplit> named(std::string_view name, data::ToySplit*) {
  return toy_split_named(name);
}
std::optional<TokenizerKind> named(std::string_view name, TokenizerKind*) {
  return tokenizer_named(name);
}
std::optional<OptimizerKind> named(std::string_view name, OptimizerKind*) {
  return optimizer_named(name);
}
std::optional<ScheduleKind> named(std::string_view name, ScheduleKind*) {
  return schedule_named(name);
}
template <typename Kind>
requires std::is_enum_v<Kind>
bool parse_text(const std::string& text, Kind& out) {
  const std::optional<Kind> kind = named(text, static_cast<Kind*>(nullptr));
  if (kind) out = *kind;
  return kind.has_value();
}

// One setting a resumed run keeps: its key (the flag without dashes), its settled value's text,
// and the asked value (empty when not given), which a saved text can also be read into.
struct KeptSetting {
  std::string key;
  std::function<std::string(const RunSettings&)> settled_text;
  std::function<std::optional<std::string>(const RunConfig&)> asked_text;
  std::function<bool(RunConfig&, const std::string&)> read;  // false: not a value
  bool added_later = false;  // older training states lack it: it is then left not given
};

// A setting asked as std::optional<T> (given or not) or as a path ("" is not given).
template <typename T>
KeptSetting kept(std::string key, std::optional<T> RunConfig::*asked,
                 std::function<T(const RunSettings&)> settled) {
  return {std::move(key), [settled](const RunSettings& s) { return text_of(settled(s)); },
          [asked](const RunConfig& c) -> std::optional<std::string> {
            if (!(c.*asked)) return std::nullopt;
            return text_of(*(c.*asked));
          },
          [asked](RunConfig& c, const std::string& text) {
            T value{};
            if (!parse_text(text, value)) return false;
            c.*asked = value;
            return true;
          }};
}
KeptSetting kept_path(std::string key, std::string RunConfig::*asked,
                      std::string RunSettings::*settled) {
  return {std::move(key), [settled](const RunSettings& s) { return s.*settled; },
          [asked](const RunConfig& c) -> std::optional<std::string> {
            if ((c.*asked).empty()) return std::nullopt;
            return c.*asked;
          },
          [asked](RunConfig& c, const std::string& text) {
            c.*asked = text;
            return true;
          }};
}
KeptSetting added_later(KeptSetting setting) {
  setting.added_later = true;
  return setting;
}

// In the order of the training states written so far.
const std::vector<KeptSetting>& kept_settings() {
  using S = const RunSettings&;
  static const std::vector<KeptSetting> table = {
      kept<Task>("task", &RunConfig::task, [](S s) { return s.task; }),
      kept_path("pairs", &RunConfig::pairs, &RunSettings::pairs),
      kept_path("data", &RunConfig::data, &RunSettings::data),
      kept_path("dev", &RunConfig::dev, &RunSettings::dev),
      kept<data::ToySplit>("split", &RunConfig::split, [](S s) { return s.split; }),
      kept<TokenizerKind>("tokenizer", &RunConfig::tokenizer, [](S s) { return s.tokenizer; }),
      kept<int64_t>("vocab-size", &RunConfig::vocab_size, [](S s) { return s.vocab_size; }),
      kept<int64_t>("batch-tokens", &RunConfig::batch_tokens, [](S s) { return s.batch_tokens; }),
      kept<int64_t>("length", &RunConfig::length, [](S s) { return s.length; }),
      kept<int64_t>("min-length", &RunConfig::min_length, [](S s) { return s.min_length; }),
      kept<int64_t>("batch", &RunConfig::batch, [](S s) { return s.batch; }),
      kept<float>("dropout", &RunConfig::dropout, [](S s) { return s.model.dropout; }),
      kept<float>("label-smoothing", &RunConfig::label_smoothing,
                  [](S s) { return s.label_smoothing; }),
      kept<OptimizerKind>("optimizer", &RunConfig::optimizer, [](S s) { return s.optimizer; }),
      kept<ScheduleKind>("schedule", &RunConfig::schedule, [](S s) { return s.schedule; }),
      kept<float>("lr", &RunConfig::lr, [](S s) { return s.lr; }),
      kept<int64_t>("warmup", &RunConfig::warmup, [](S s) { return s.warmup; }),
      added_later(kept<int64_t>("schedule-steps", &RunConfig::schedule_steps,
                                [](S s) { return s.schedule_steps; })),
      added_later(kept<int64_t>("average", &RunConfig::average, [](S s) { return s.average; })),
      kept<float>("clip", &RunConfig::clip, [](S s) { return s.clip; }),
      kept<uint64_t>("seed", &RunConfig::seed, [](S s) { return s.seed; }),
  };
  return table;
}

// asked, with every kept setting it did not give taken from the saved run; a setting it gave
// with another value is refused.
RunConfig with_saved(RunConfig asked, const RunConfig& saved) {
  for (const KeptSetting& setting : kept_settings()) {
    const std::optional<std::string> mine = setting.asked_text(asked),
                                     theirs = setting.asked_text(saved);
    if (mine && mine != theirs)
      throw std::invalid_argument(fmt::format(
          "--{} {} differs from the run being resumed, which used {}: a resumed run keeps its "
          "data, optimizer and schedule settings (leave the flag out, or start a new run with "
          "--init)",
          setting.key, *mine, theirs.value_or("none")));
    if (theirs && !setting.read(asked, *theirs))
      throw std::logic_error("a saved setting that does not read back: " + setting.key);
  }
  return asked;
}

// ---- The recipe for real text ---------------------------------------------------------------

// asked, with every setting of the recipe that it did not give; the choices, for the user.
RunConfig with_recipe(RunConfig asked, const TextRecipe& recipe, std::string& choices) {
  std::vector<std::string> chosen;
  auto choose = [&chosen](auto& field, const auto& value, const std::string& shown) {
    if (field) return;
    field = value;
    if (!shown.empty()) chosen.push_back(shown);
  };
  const TransformerConfig& m = recipe.model;
  if (m.decoder_only()) choose(asked.tokenizer, recipe.tokenizer, std::string());
  if (!m.decoder_only() || *asked.tokenizer == TokenizerKind::Bpe)
    choose(asked.vocab_size, recipe.vocab_size,
           fmt::format("BPE vocabulary {}", recipe.vocab_size));
  choose(asked.d_model, m.d_model, fmt::format("d_model {}", m.d_model));
  choose(asked.d_ff, m.d_ff, fmt::format("d_ff {}", m.d_ff));
  choose(asked.heads, m.heads, fmt::format("heads {}", m.heads));
  choose(asked.layers, m.decoder_layers,
         m.decoder_only() ? fmt::format("{} layers (decoder-only)", m.decoder_layers)
                          : fmt::format("layers {}+{}", m.encoder_layers, m.decoder_layers));
  choose(asked.max_len, m.max_len,
         m.decoder_only() ? fmt::format("context (max-len) {}", m.max_len)
                          : fmt::format("max-len {}", m.max_len));
  choose(asked.positions, m.learned_positions ? PositionKind::Learned : PositionKind::Sinusoidal,
         m.learned_positions ? "learned positions" : "sinusoidal positions");
  choose(asked.norm, m.norm_first ? NormPlacement::PreNorm : NormPlacement::PostNorm,
         m.norm_first ? "pre-norm" : "post-norm");
  choose(asked.dropout, m.dropout, fmt::format("dropout {}", m.dropout));
  choose(asked.label_smoothing, recipe.label_smoothing,
         fmt::format("label smoothing {}", recipe.label_smoothing));
  choose(asked.schedule, recipe.schedule, fmt::format("{} schedule", name_of(recipe.schedule)));
  const float peak = peak_lr_for(*asked.d_model);  // the width the run will have
  choose(asked.lr, peak, fmt::format("peak rate {:.3g}", peak));
  choose(asked.warmup, recipe.warmup,
         fmt::format("warm-up {} steps (at most a tenth of the run)", recipe.warmup));
  if (recipe.batch > 0)
    choose(asked.batch, recipe.batch, fmt::format("{} windows a batch", recipe.batch));
  if (recipe.steps > 0 && asked.minutes == 0)
    choose(asked.steps, recipe.steps, fmt::format("{} steps", recipe.steps));
  else
    choose(asked.batch_tokens, recipe.batch_tokens,
           fmt::format("{} tokens a batch", recipe.batch_tokens));
  choose(asked.average, recipe.average,
         fmt::format("average of the last {} checkpoints", recipe.average));
  if (!asked.eval_every && (!asked.dev.empty() || m.decoder_only()))
    chosen.push_back(fmt::format("{} checks on the {} set", recipe.checks,
                                 asked.dev.empty() ? "training" : "dev"));
  choices = fmt::format("{}", fmt::join(chosen, ", "));
  return asked;
}

// ---- The defaults ---------------------------------------------------------------------------

TransformerConfig model_of(const RunConfig& c, TransformerConfig model) {
  model.d_model = c.d_model.value_or(model.d_model);
  model.d_ff = c.d_ff.value_or(model.d_ff);
  model.heads = c.heads.value_or(model.heads);
  model.encoder_layers = model.decoder_layers = c.layers.value_or(model.encoder_layers);
  model.max_len = c.max_len.value_or(model.max_len);
  model.tied = c.tied.value_or(model.tied);
  if (c.norm) model.norm_first = *c.norm == NormPlacement::PreNorm;
  if (c.positions) model.learned_positions = *c.positions == PositionKind::Learned;
  model.dropout = c.dropout.value_or(model.dropout);
  return model;
}

RunSettings with_defaults(const RunConfig& c) {
  RunSettings s;
  s.task = c.task.value_or(s.task);
  s.pairs = c.pairs;
  s.data = c.data;
  s.dev = c.dev;
  s.split = c.split.value_or(s.split);
  s.tokenizer = c.tokenizer.value_or(s.tokenizer);
  s.vocab_size = c.vocab_size.value_or(s.vocab_size);
  s.batch_tokens = c.batch_tokens.value_or(s.batch_tokens);
  s.length = c.length.value_or(s.length);
  s.min_length = c.min_length.value_or(s.min_length);
  s.batch = c.batch.value_or(s.batch);
  s.model = model_of(c, s.model);
  if (s.task == Task::LanguageModel) s.model.encoder_layers = 0;  // the decoder alone
  s.init = c.init;
  s.resume = c.resume;
  s.optimizer = c.optimizer.value_or(s.optimizer);
  s.schedule = c.schedule.value_or(s.schedule);
  s.lr = c.lr.value_or(s.lr);
  s.warmup = c.warmup.value_or(s.warmup);
  s.schedule_steps = c.schedule_steps.value_or(s.schedule_steps);
  s.label_smoothing = c.label_smoothing.value_or(s.label_smoothing);
  s.clip = c.clip.value_or(s.clip);
  s.steps = c.steps.value_or(s.steps);
  s.minutes = c.minutes;
  s.average = c.average.value_or(s.average);
  s.eval_every = c.eval_every.value_or(s.eval_every);
  s.eval_count = c.eval_count;
  s.snapshots = c.snapshots;
  s.seed = c.seed.value_or(s.seed);
  s.batch_seed = c.batch_seed;
  s.threads = c.threads;
  s.bfloat16 = c.bfloat16;
  s.save = c.save.value_or(c.resume.empty() ? s.save : c.resume);
  s.save_every = c.save_every;
  s.log_losses = c.log_losses;
  return s;
}

void require(bool ok, const std::string& message) {
  if (!ok) throw std::invalid_argument(message);
}

}  // namespace

nn::Metadata to_metadata(const RunSettings& settings) {
  nn::Metadata metadata;
  for (const KeptSetting& setting : kept_settings())
    metadata[setting.key] = setting.settled_text(settings);
  return metadata;
}

RunConfig settings_from_metadata(const nn::Metadata& metadata, const std::string& path) {
  RunConfig saved;
  for (const KeptSetting& setting : kept_settings()) {
    const auto it = metadata.find(setting.key);
    if (it == metadata.end() && setting.added_later) continue;
    if (it == metadata.end())
      throw FormatError(
          fmt::format("training state: {}: metadata \"option.{}\" is missing", path, setting.key));
    if (!setting.read(saved, it->second))
      throw FormatError(
          fmt::format("training state: {}: metadata \"option.{}\" is \"{}\", not a value of --{}",
                      path, setting.key, it->second, setting.key));
  }
  return saved;
}

Settled settle(const RunConfig& asked, const SettleContext& context) {
  Settled settled;
  RunConfig filled = asked;
  if (context.saved) filled = with_saved(filled, *context.saved);
  if (context.recipe) filled = with_recipe(filled, *context.recipe, settled.recipe_choices);
  settled.settings = with_defaults(filled);
  settled.settings.recipe = context.recipe;
  if (settled.settings.minutes == 0) fit_to_steps(settled.settings, asked);
  validate(settled.settings);
  return settled;
}

void fit_to_steps(RunSettings& s, const RunConfig& asked) {
  if (s.recipe) {
    if (!asked.warmup) s.warmup = std::clamp<int64_t>(s.steps / 10, 1, s.recipe->warmup);
    if (!asked.eval_every && (!s.dev.empty() || s.recipe->model.decoder_only()))
      s.eval_every = std::max<int64_t>(1, s.steps / s.recipe->checks);
  }
  if (s.schedule_steps == 0) s.schedule_steps = s.steps;
}

void validate(const RunSettings& s) {
  require(s.steps > 0, fmt::format("--steps must be positive, got {}", s.steps));
  require(s.model.decoder_layers > 0,
          fmt::format("--layers must be positive, got {}", s.model.decoder_layers));
  require(s.batch > 0, fmt::format("--batch must be positive, got {}", s.batch));
  require(s.lr >= 0.0f,
          fmt::format("--lr must not be negative, got {} (0: the schedule's default)", s.lr));
  require(s.warmup > 0, fmt::format("--warmup must be positive, got {}", s.warmup));
  require(s.schedule != ScheduleKind::Cosine || s.minutes > 0 || s.warmup < s.steps,
          fmt::format("--schedule cosine needs more --steps than --warmup, got {} and {}", s.steps,
                      s.warmup));
  require(s.minutes >= 0, fmt::format("--minutes must not be negative, got {}", s.minutes));
  require(s.minutes == 0 || s.resume.empty(),
          "--minutes plans a new run; to continue one with --resume, give --steps, the total "
          "to reach");
  require(s.average >= 0, fmt::format("--average must not be negative, got {}", s.average));
  require(s.clip >= 0.0f, fmt::format("--clip must not be negative, got {}", s.clip));
  require(s.label_smoothing >= 0.0f && s.label_smoothing < 1.0f,
          fmt::format("--label-smoothing {} is outside [0, 1)", s.label_smoothing));
  require(s.threads >= 0, fmt::format("--threads must not be negative, got {}", s.threads));
  require(s.eval_count > 0, fmt::format("--eval-count must be positive, got {}", s.eval_count));
  require(
      s.eval_every >= 0,
      fmt::format("--eval-every must not be negative, got {} (0: only at the end)", s.eval_every));
  require(s.save_every >= 0,
          fmt::format("--save-every must not be negative, got {}", s.save_every));
  require(s.batch_tokens > 0,
          fmt::format("--batch-tokens must be positive, got {}", s.batch_tokens));
  require(s.vocab_size >= 0,
          fmt::format("--vocab-size must not be negative, got {}", s.vocab_size));
  require(is_tokenized(s.task) || s.data.empty(),
          fmt::format("--data is for --task translate and lm; --task {} generates its data ({})",
                      name_of(s.task), "--pairs reads a file of ids"));
  require(s.task == Task::Translate || s.task == Task::LanguageModel || s.dev.empty(),
          "--dev is for --task translate and lm");
  require(!is_tokenized(s.task) || s.pairs.empty(),
          "--pairs holds token ids; sentence pairs for --task translate, or text for --task lm, "
          "go in --data");
}

float schedule_rate(const RunSettings& s) {
  if (s.lr > 0.0f) return s.lr;
  return s.schedule == ScheduleKind::Noam ? 0.3f : 1e-3f;
}

}  // namespace gf::training
