#include "training/resume.h"

#include <fmt/format.h>

#include <charconv>
#include <cstring>
#include <filesystem>
#include <stdexcept>
#include <utility>

#include "autograd/errors.h"
#include "nn/checkpoint.h"

namespace gf::training {

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

}  // namespace

std::string train_state_path(const std::string& checkpoint) {
  return std::filesystem::path(checkpoint).replace_extension().string() +
         ".train-state.safetensors";
}

std::string weights_digest(const nn::Module& model) {
  return weights_digest(model.named_parameters());
}

std::string weights_digest(const nn::NamedTensors& weights) {
  uint64_t hash = 0xcbf29ce484222325ull;
  const auto mix = [&hash](const void* bytes, size_t n) {
    const auto* p = static_cast<const unsigned char*>(bytes);
    for (size_t i = 0; i < n; ++i) hash = (hash ^ p[i]) * 0x100000001b3ull;
  };
  for (const auto& [name, tensor] : weights) {
    mix(name.data(), name.size() + 1);  // with the terminating zero, so names cannot run on
    for (const int64_t dim : tensor.shape()) mix(&dim, sizeof dim);
    mix(tensor.data(), static_cast<size_t>(tensor.numel()) * sizeof(float));
  }
  return fmt::format("{:016x}", hash);
}

TrainState capture(const nn::Module& model, const Trainer& trainer,
                   const data::BatchPosition& batches, const Rng::State& eval,
                   nn::RandomStates dropout, std::vector<float> losses, std::vector<float> rates,
                   nn::Metadata options) {
  return {.step = trainer.steps(),
          .batches = batches,
          .eval = eval,
          .dropout = std::move(dropout),
          .optimizer_step = trainer.optimizer().steps(),
          .model = model.named_parameters(),
          .optimizer = trainer.optimizer().buffers(),
          .losses = std::move(losses),
          .rates = std::move(rates),
          .weights = weights_digest(model),
          .options = std::move(options)};
}

void save_train_state(const std::string& path, const TrainState& state) {
  nn::Metadata metadata;
  metadata["format"] = kFormat;
  nn::set_metadata_int(metadata, "step", state.step);
  nn::set_metadata_int(metadata, "optimizer_step", state.optimizer_step);
  metadata["weights"] = state.weights;
  metadata["rng.batches"] = rng_text(state.batches.batches);
  metadata["rng.eval"] = rng_text(state.eval);
  if (state.page_sequences) metadata["rng.page_sequences"] = rng_text(*state.page_sequences);
  metadata["rng.epoch_start"] = rng_text(state.batches.epoch_start);
  nn::set_metadata_int(metadata, "batches.next", state.batches.next);
  nn::set_metadata_bool(metadata, "batches.in_epoch", state.batches.in_epoch);
  for (const auto& [name, rng] : state.dropout) metadata[kDropoutPrefix + name] = rng_text(rng);
  for (const auto& [flag, value] : state.options) metadata[kOptionPrefix + flag] = value;
  if (!state.page.empty()) metadata["history.page"] = state.page;
  if (!state.checkpoint_weights.empty()) metadata["checkpoint_weights"] = state.checkpoint_weights;

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
  if (const auto it = metadata.find("checkpoint_weights"); it != metadata.end())
    state.checkpoint_weights = it->second;
  state.batches.batches = parse_rng(metadata, "rng.batches", path);
  state.eval = parse_rng(metadata, "rng.eval", path);
  if (metadata.contains("rng.page_sequences"))
    state.page_sequences = parse_rng(metadata, "rng.page_sequences", path);
  state.batches.epoch_start = parse_rng(metadata, "rng.epoch_start", path);
  state.batches.next = nn::metadata_int(metadata, "batches.next", path);
  state.batches.in_epoch = nn::metadata_bool(metadata, "batches.in_epoch", path);
  for (const auto& [key, value] : metadata) {
    if (key.starts_with(kDropoutPrefix))
      state.dropout.emplace_back(key.substr(std::strlen(kDropoutPrefix)),
                                 parse_rng(metadata, key, path));
    else if (key.starts_with(kOptionPrefix))
      state.options[key.substr(std::strlen(kOptionPrefix))] = value;
    else if (key == "history.page")
      state.page = value;
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

void restore(const TrainState& state, const std::string& path, nn::Module& model, Trainer& trainer,
             data::BatchSource& batches, Rng& eval) {
  nn::load_checkpoint({.tensors = state.model, .metadata = {}}, path, model);
  if (weights_digest(model) != state.weights)
    throw bad_state(path, "its weights do not match their digest");
  try {
    trainer.optimizer().restore(state.optimizer_step, state.optimizer);
    nn::restore_random_states(model, state.dropout);
    batches.restore(state.batches);
  } catch (const std::invalid_argument& e) {
    throw bad_state(path, e.what());
  }
  eval.set_state(state.eval);
  trainer.set_steps(state.step);
}

}  // namespace gf::training
