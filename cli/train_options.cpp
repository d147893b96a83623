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
      kept(
          "clip", [](TrainOptions & o) -> auto& { return o.clip; }),
      kept(
          "seed", [](TrainOptions & o) -> auto& { return o.seed; }),
  };
  return table;
}

}  // namespace

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
