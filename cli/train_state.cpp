#include "cli/train_state.h"

#include <fmt/format.h>
#include <signal.h>

#include <algorithm>
#include <cerrno>
#include <charconv>
#include <cstring>
#include <filesystem>
#include <functional>
#include <stdexcept>

#include "autograd/errors.h"
#include "cli/common.h"
#include "nn/checkpoint.h"
#include "nn/layers.h"

namespace gf::cli {

namespace {

constexpr const char* kFormat = "gradformer-train-state/1";
constexpr const char* kOptionPrefix = "option.";
constexpr const char* kDropoutPrefix = "rng.dropout.";
constexpr const char* kModelPrefix = "model.";

FormatError bad_state(const std::string& path, const std::string& problem) {
  return FormatError(fmt::format("training state: {}: {}", path, problem));
}

std::string rng_text(const Rng::State& state) {
  return fmt::format("{:016x} {:016x} {:016x} {:016x}", state[0], state[1], state[2], state[3]);
}

const std::string& find_text(const nn::Metadata& metadata, const std::string& key,
                             const std::string& path) {
  const auto it = metadata.find(key);
  if (it == metadata.end()) throw bad_state(path, fmt::format("metadata \"{}\" is missing", key));
  return it->second;
}

// "w0 w1 w2 w3": four words of exactly 16 hexadecimal digits, one space between them.
Rng::State parse_rng(const nn::Metadata& metadata, const std::string& key,
                     const std::string& path) {
  const std::string& text = find_text(metadata, key, path);
  constexpr size_t kWord = 16;
  Rng::State state{};
  bool ok = text.size() == state.size() * (kWord + 1) - 1;
  for (size_t i = 0; ok && i < state.size(); ++i) {
    const char* begin = text.data() + i * (kWord + 1);
    ok = (i == 0 || begin[-1] == ' ') &&
         std::from_chars(begin, begin + kWord, state[i], 16).ptr == begin + kWord;
  }
  if (!ok || state == Rng::State{})
    throw bad_state(path,
                    fmt::format("metadata \"{}\" is \"{}\", not a generator state", key, text));
  return state;
}

Tensor as_tensor(const std::vector<float>& values) {
  return Tensor::from({static_cast<int64_t>(values.size())}, values);
}

std::vector<float> as_values(const nn::NamedTensors& tensors, const std::string& name,
                             const std::string& path) {
  for (const auto& [key, tensor] : tensors)
    if (key == name) {
      if (tensor.rank() != 1) throw bad_state(path, fmt::format("\"{}\" is not a vector", name));
      return {tensor.data(), tensor.data() + tensor.numel()};
    }
  throw bad_state(path, fmt::format("tensor \"{}\" is missing", name));
}

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
      throw bad_state(path,
                      fmt::format("metadata \"{}{}\" is missing", kOptionPrefix, option.flag));
    if (options.given.contains(option.flag) && option.text(options) != it->second)
      throw std::invalid_argument(fmt::format(
          "--{} {} differs from the run being resumed, which used {}: a resumed run keeps its "
          "data, optimizer and schedule settings (leave the flag out, or start a new run with "
          "--init)",
          option.flag, option.text(options), it->second.empty() ? "none" : it->second));
    if (!option.parse(options, it->second))
      throw bad_state(path, fmt::format("metadata \"{}{}\" is \"{}\", not a value of --{}",
                                        kOptionPrefix, option.flag, it->second, option.flag));
  }
}

std::string train_state_path(const std::string& checkpoint) {
  return beside(checkpoint, ".train-state.safetensors");
}

std::string weights_digest(const nn::Module& model) {
  uint64_t hash = 0xcbf29ce484222325ull;
  const auto mix = [&hash](const void* bytes, size_t n) {
    const auto* p = static_cast<const unsigned char*>(bytes);
    for (size_t i = 0; i < n; ++i) hash = (hash ^ p[i]) * 0x100000001b3ull;
  };
  for (const auto& [name, tensor] : model.named_parameters()) {
    mix(name.data(), name.size() + 1);  // with the terminating zero, so names cannot run on
    for (const int64_t dim : tensor.shape()) mix(&dim, sizeof dim);
    mix(tensor.data(), static_cast<size_t>(tensor.numel()) * sizeof(float));
  }
  return fmt::format("{:016x}", hash);
}

int remove_stale_temporaries(const std::string& path) {
  namespace fs = std::filesystem;
  const fs::path target(path);
  const fs::path dir = target.parent_path().empty() ? fs::path(".") : target.parent_path();
  const std::string prefix = target.filename().string() + ".tmp-";
  std::error_code ec;
  int removed = 0;
  for (const fs::directory_entry& entry : fs::directory_iterator(dir, ec)) {
    const std::string name = entry.path().filename().string();
    if (!name.starts_with(prefix)) continue;
    const std::string rest = name.substr(prefix.size());  // "<pid>-<k>"
    pid_t pid = 0;
    const auto [stop, err] = std::from_chars(rest.data(), rest.data() + rest.size(), pid);
    if (err != std::errc{} || stop == rest.data() || *stop != '-' || pid <= 0) continue;
    // ESRCH: no such process. A live one (even one that only reuses the number) keeps its file.
    if (::kill(pid, 0) == 0 || errno != ESRCH) continue;
    removed += fs::remove(entry.path(), ec) ? 1 : 0;
  }
  return removed;
}

void save_train_state(const std::string& path, const TrainState& state) {
  nn::Metadata metadata;
  metadata["format"] = kFormat;
  nn::set_metadata_int(metadata, "step", state.step);
  nn::set_metadata_int(metadata, "optimizer_step", state.optimizer_step);
  metadata["weights"] = state.weights;
  metadata["rng.batches"] = rng_text(state.batches.batches);
  metadata["rng.eval"] = rng_text(state.batches.eval);
  metadata["rng.epoch_start"] = rng_text(state.batches.epoch_start);
  nn::set_metadata_int(metadata, "batches.next", state.batches.next);
  nn::set_metadata_bool(metadata, "batches.in_epoch", state.batches.in_epoch);
  for (const auto& [name, rng] : state.dropout) metadata[kDropoutPrefix + name] = rng_text(rng);
  for (const auto& [flag, value] : state.options) metadata[kOptionPrefix + flag] = value;

  nn::NamedTensors tensors;
  for (const auto& [name, tensor] : state.model) tensors.emplace_back(kModelPrefix + name, tensor);
  tensors.insert(tensors.end(), state.optimizer.begin(), state.optimizer.end());
  tensors.emplace_back("history.loss", as_tensor(state.losses));
  tensors.emplace_back("history.lr", as_tensor(state.rates));
  nn::save_safetensors(path, tensors, metadata);
}

TrainState load_train_state(const std::string& path) {
  nn::SafetensorsFile file = nn::load_safetensors(path);
  const nn::Metadata& metadata = file.metadata;
  const auto format = metadata.find("format");
  if (format == metadata.end() || format->second != kFormat)
    throw bad_state(path, fmt::format("not a training state of this version (format \"{}\", "
                                      "expected \"{}\")",
                                      format == metadata.end() ? "" : format->second, kFormat));
  TrainState state;
  state.step = nn::metadata_int(metadata, "step", path);
  state.optimizer_step = nn::metadata_int(metadata, "optimizer_step", path);
  state.weights = find_text(metadata, "weights", path);
  state.batches.batches = parse_rng(metadata, "rng.batches", path);
  state.batches.eval = parse_rng(metadata, "rng.eval", path);
  state.batches.epoch_start = parse_rng(metadata, "rng.epoch_start", path);
  state.batches.next = nn::metadata_int(metadata, "batches.next", path);
  state.batches.in_epoch = nn::metadata_bool(metadata, "batches.in_epoch", path);
  for (const auto& [key, value] : metadata) {
    if (key.starts_with(kDropoutPrefix))
      state.dropout.emplace_back(key.substr(std::strlen(kDropoutPrefix)),
                                 parse_rng(metadata, key, path));
    else if (key.starts_with(kOptionPrefix))
      state.options[key.substr(std::strlen(kOptionPrefix))] = value;
  }
  state.losses = as_values(file.tensors, "history.loss", path);
  state.rates = as_values(file.tensors, "history.lr", path);
  if (std::ssize(state.losses) != state.step || std::ssize(state.rates) != state.step)
    throw bad_state(path, fmt::format("the history holds {} losses and {} rates for {} steps",
                                      state.losses.size(), state.rates.size(), state.step));
  for (auto& [name, tensor] : file.tensors)
    if (name.starts_with(kModelPrefix))
      state.model.emplace_back(name.substr(std::strlen(kModelPrefix)), tensor);
    else if (!name.starts_with("history."))
      state.optimizer.emplace_back(name, tensor);
  return state;
}

std::vector<std::pair<std::string, Rng::State>> dropout_states(nn::Module& model) {
  std::vector<std::pair<std::string, Rng::State>> states;
  for (const auto& [name, module] : model.named_modules())
    if (auto* dropout = dynamic_cast<nn::Dropout*>(module))
      states.emplace_back(name, dropout->rng().state());
  return states;
}

void restore_dropout_states(nn::Module& model,
                            const std::vector<std::pair<std::string, Rng::State>>& states,
                            const std::string& path) {
  std::vector<std::pair<nn::Dropout*, Rng::State>> found;
  size_t layers = 0;
  for (const auto& [name, module] : model.named_modules()) {
    auto* dropout = dynamic_cast<nn::Dropout*>(module);
    if (!dropout) continue;
    ++layers;
    const auto it = std::find_if(states.begin(), states.end(),
                                 [&](const auto& saved) { return saved.first == name; });
    if (it == states.end()) throw bad_state(path, fmt::format("no dropout state for \"{}\"", name));
    found.emplace_back(dropout, it->second);
  }
  if (layers != states.size())
    throw bad_state(path, fmt::format("{} dropout states for a model with {} dropout layers",
                                      states.size(), layers));
  for (auto& [dropout, state] : found) dropout->rng().set_state(state);
}

}  // namespace gf::cli
