#include "cli/train_options.h"

#include <fmt/format.h>

#include <charconv>
#include <filesystem>
#include <functional>
#include <stdexcept>

#include "autograd/errors.h"

namespace gf::cli {

namespace {

// One option a resumed run keeps: its flag, and how to write and read its value as text.
struct KeptOption {
  std::string flag;
  std::function<std::string(TrainOptions&)> text;
  std::function<bool(TrainOptions&, const std::string&)> parse;  // false: not a value
  bool added_later = false;  // older training states lack it: they keep the default
};

bool parse_value(const std::string& text, std::string& out) {
  out = text;
  return true;
}

// Numbers are written by fmt's "{}", the shortest text that reads back to the same value.
template <typename Number>
bool parse_value(const std::string& text, Number& out) {
  const char* end = text.data() + text.size();
  const auto [stop, err] = std::from_chars(text.data(), end, out);
  return err == std::errc{} && stop == end;
}

template <typename Field>
KeptOption kept(std::string flag, Field field) {
  return {std::move(flag), [field](TrainOptions& o) { return fmt::format("{}", field(o)); },
          [field](TrainOptions& o, const std::string& text) {
            return parse_value(text, field(o));
          }};
}

KeptOption added_later(KeptOption option) {
  option.added_later = true;
  return option;
}

const std::vector<KeptOption>& kept_option_table() {
  static const std::vector<KeptOption> table = {
      kept(
          "task", [](TrainOptions & o) -> auto& { return o.task; }),
      kept(
          "pairs", [](TrainOptions & o) -> auto& { return o.pairs; }),
      kept(
          "data", [](TrainOptions & o) -> auto& { return o.data; }),
      kept(
          "dev", [](TrainOptions & o) -> auto& { return o.dev; }),
      kept(
          "split", [](TrainOptions & o) -> auto& { return o.split; }),
      kept(
          "tokenizer", [](TrainOptions & o) -> auto& { return o.tokenizer; }),
      kept(
          "vocab-size", [](TrainOptions & o) -> auto& { return o.vocab_size; }),
      kept(
          "batch-tokens", [](TrainOptions & o) -> auto& { return o.batch_tokens; }),
      kept(
          "length", [](TrainOptions & o) -> auto& { return o.length; }),
      kept(
          "min-length", [](TrainOptions & o) -> auto& { return o.min_length; }),
      kept(
          "batch", [](TrainOptions & o) -> auto& { return o.batch; }),
      kept(
          "dropout", [](TrainOptions & o) -> auto& { return o.model.dropout; }),
      kept(
          "label-smoothing", [](TrainOptions & o) -> auto& { return o.label_smoothing; }),
      kept(
          "optimizer", [](TrainOptions & o) -> auto& { return o.optimizer; }),
      kept(
          "schedule", [](TrainOptions & o) -> auto& { return o.schedule; }),
      kept(
          "lr", [](TrainOptions & o) -> auto& { return o.lr; }),
      kept(
          "warmup", [](TrainOptions & o) -> auto& { return o.warmup; }),
      added_later(kept(
          "schedule-steps", [](TrainOptions & o) -> auto& { return o.schedule_steps; })),
      added_later(kept(
          "average", [](TrainOptions & o) -> auto& { return o.average; })),
      kept(
          "clip", [](TrainOptions & o) -> auto& { return o.clip; }),
      kept(
          "seed", [](TrainOptions & o) -> auto& { return o.seed; }),
  };
  return table;
}

}  // namespace

std::string apply_recipe(const training::TextRecipe& recipe, TrainOptions& o) {
  std::vector<std::string> chosen;
  auto choose = [&](const char* flag, auto& field, const auto& value, const std::string& shown) {
    if (o.given.contains(flag)) return;
    field = value;
    chosen.push_back(shown);
  };
  const TransformerConfig& m = recipe.model;
  choose("vocab-size", o.vocab_size, recipe.vocab_size,
         fmt::format("BPE vocabulary {}", recipe.vocab_size));
  choose("d-model", o.model.d_model, m.d_model, fmt::format("d_model {}", m.d_model));
  choose("d-ff", o.model.d_ff, m.d_ff, fmt::format("d_ff {}", m.d_ff));
  choose("heads", o.model.heads, m.heads, fmt::format("heads {}", m.heads));
  if (!o.given.contains("layers")) {
    o.model.encoder_layers = m.encoder_layers;
    o.model.decoder_layers = m.decoder_layers;
    chosen.push_back(fmt::format("layers {}+{}", m.encoder_layers, m.decoder_layers));
  }
  choose("max-len", o.model.max_len, m.max_len, fmt::format("max-len {}", m.max_len));
  choose("positions", o.model.learned_positions, m.learned_positions,
         m.learned_positions ? "learned positions" : "sinusoidal positions");
  choose("norm-first", o.model.norm_first, m.norm_first, m.norm_first ? "pre-norm" : "post-norm");
  choose("dropout", o.model.dropout, m.dropout, fmt::format("dropout {}", m.dropout));
  choose("label-smoothing", o.label_smoothing, recipe.label_smoothing,
         fmt::format("label smoothing {}", recipe.label_smoothing));
  choose("schedule", o.schedule, recipe.schedule, fmt::format("{} schedule", recipe.schedule));
  const float peak = training::peak_lr_for(o.model.d_model);  // the width the run will have
  choose("lr", o.lr, peak, fmt::format("peak rate {:.3g}", peak));
  choose("warmup", o.warmup, recipe.warmup,
         fmt::format("warm-up {} steps (at most a tenth of the run)", recipe.warmup));
  choose("batch-tokens", o.batch_tokens, recipe.batch_tokens,
         fmt::format("{} tokens a batch", recipe.batch_tokens));
  choose("average", o.average, recipe.average,
         fmt::format("average of the last {} checkpoints", recipe.average));
  if (!o.given.contains("eval-every") && !o.dev.empty())
    chosen.push_back(fmt::format("{} checks on the dev set", recipe.checks));
  o.recipe = recipe;
  return fmt::format("{}", fmt::join(chosen, ", "));
}

bool is_text_task(const TrainOptions& o) {
  return o.task == "translate" || o.task == "toy-translation";
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
  require(o.schedule != "cosine" || o.minutes > 0 || o.warmup < o.steps,
          fmt::format("--schedule cosine needs more --steps than --warmup, got {} and {}", o.steps,
                      o.warmup));
  require(o.minutes >= 0, fmt::format("--minutes must not be negative, got {}", o.minutes));
  require(o.minutes == 0 || o.resume.empty(),
          "--minutes plans a new run; to continue one with --resume, give --steps, the total "
          "to reach");
  require(o.average >= 0, fmt::format("--average must not be negative, got {}", o.average));
  require(o.clip >= 0.0f, fmt::format("--clip must not be negative, got {}", o.clip));
  require(o.label_smoothing >= 0.0f && o.label_smoothing < 1.0f,
          fmt::format("--label-smoothing {} is outside [0, 1)", o.label_smoothing));
  require(o.optimizer == "adam" || o.optimizer == "sgd",
          fmt::format("--optimizer must be adam or sgd, got \"{}\"", o.optimizer));
  require(o.schedule == "noam" || o.schedule == "cosine" || o.schedule == "constant",
          fmt::format("--schedule must be noam, cosine or constant, got \"{}\"", o.schedule));
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

// --resume: reads the training state beside the checkpoint and takes its options.
training::TrainState read_resume(TrainOptions& o) {
  if (!o.init.empty())
    throw std::invalid_argument(
        "--resume continues a run and --init starts a new one from a model: give one of them");
  const std::string path = training::train_state_path(o.resume);
  if (!std::filesystem::exists(path))
    throw std::invalid_argument(fmt::format(
        "--resume {}: there is no training state {} beside it, so the run cannot continue "
        "exactly (--init {} starts a new run from its weights)",
        o.resume, path, o.resume));
  training::TrainState state = training::load_train_state(path);
  apply_kept_options(state.options, o, path);
  if (!o.given.contains("save")) o.save = o.resume;
  if (o.steps <= state.step)
    throw std::invalid_argument(fmt::format(
        "--resume {}: the run has done {} steps already; --steps is the total to reach, so give "
        "more than {}",
        o.resume, state.step, state.step));
  if (o.schedule == "cosine" && o.steps > o.schedule_steps)
    throw std::invalid_argument(fmt::format(
        "--resume {}: the run's cosine schedule falls to zero at step {}, so --steps {} would "
        "train at a rate of zero; continue to at most {}, or start a new run from its weights "
        "with --init {}",
        o.resume, o.schedule_steps, o.steps, o.schedule_steps, o.resume));
  return state;
}

nn::Metadata kept_options(const TrainOptions& options) {
  TrainOptions copy = options;  // the table's accessors are for reading and writing alike
  nn::Metadata kept;
  for (const KeptOption& option : kept_option_table()) kept[option.flag] = option.text(copy);
  return kept;
}

void apply_kept_options(const nn::Metadata& saved, TrainOptions& options, const std::string& path) {
  for (const KeptOption& option : kept_option_table()) {
    const auto it = saved.find(option.flag);
    if (it == saved.end() && option.added_later) continue;
    if (it == saved.end())
      throw FormatError(
          fmt::format("training state: {}: metadata \"option.{}\" is missing", path, option.flag));
    if (options.given.contains(option.flag) && option.text(options) != it->second)
      throw std::invalid_argument(fmt::format(
          "--{} {} differs from the run being resumed, which used {}: a resumed run keeps its "
          "data, optimizer and schedule settings (leave the flag out, or start a new run with "
          "--init)",
          option.flag, option.text(options), it->second.empty() ? "none" : it->second));
    if (!option.parse(options, it->second))
      throw FormatError(
          fmt::format("training state: {}: metadata \"option.{}\" is \"{}\", not a value of --{}",
                      path, option.flag, it->second, option.flag));
  }
}

}  // namespace gf::cli
