#include "training/run_options.h"

#include <fmt/format.h>

#include <algorithm>
#include <functional>
#include <optional>
#include <stdexcept>
#include <string>
#include <utility>

#include "autograd/parse_number.h"
#include "training/choices.h"

namespace gf::training {

namespace {

// Reads a value's text into the config; false when the text is not a value of the key.
using Read = std::function<bool(RunConfig&, const std::string&)>;

template <typename T>
Read number(std::optional<T> RunConfig::*setting) {
  return [setting](RunConfig& c, const std::string& text) {
    T value{};
    if (!parse_number(text, value)) return false;
    c.*setting = value;
    return true;
  };
}

template <typename Kind>
Read kind(std::optional<Kind> RunConfig::*setting, std::optional<Kind> (*named)(std::string_view)) {
  return [setting, named](RunConfig& c, const std::string& text) {
    const std::optional<Kind> value = named(text);
    if (value) c.*setting = *value;
    return value.has_value();
  };
}

// A choice between fixed names, each with its value.
template <typename T>
Read one_of(std::optional<T> RunConfig::*setting, std::vector<std::pair<std::string, T>> names) {
  return [setting, names](RunConfig& c, const std::string& text) {
    for (const auto& [name, value] : names)
      if (text == name) {
        c.*setting = value;
        return true;
      }
    return false;
  };
}

// eval-count, which RunConfig holds as a plain number rather than as one that may be unset.
Read eval_count() {
  return [](RunConfig& c, const std::string& text) {
    return parse_number(text, c.eval_count);
  };
}

const std::vector<std::pair<std::string, Read>>& readers() {
  using C = RunConfig;
  static const std::vector<std::pair<std::string, Read>> table = {
      {"task", kind(&C::task, task_named)},
      {"split", kind(&C::split, toy_split_named)},
      {"length", number(&C::length)},
      {"min-length", number(&C::min_length)},
      {"batch", number(&C::batch)},
      {"batch-tokens", number(&C::batch_tokens)},
      {"tokenizer", kind(&C::tokenizer, tokenizer_named)},
      {"vocab-size", number(&C::vocab_size)},
      {"layers", number(&C::layers)},
      {"d-model", number(&C::d_model)},
      {"d-ff", number(&C::d_ff)},
      {"heads", number(&C::heads)},
      {"max-len", number(&C::max_len)},
      {"dropout", number(&C::dropout)},
      {"tied", one_of<bool>(&C::tied, {{"true", true}, {"false", false}})},
      {"norm", one_of<NormPlacement>(
                   &C::norm, {{"post", NormPlacement::PostNorm}, {"pre", NormPlacement::PreNorm}})},
      {"positions", one_of<PositionKind>(&C::positions, {{"sinusoidal", PositionKind::Sinusoidal},
                                                         {"learned", PositionKind::Learned}})},
      {"optimizer", kind(&C::optimizer, optimizer_named)},
      {"schedule", kind(&C::schedule, schedule_named)},
      {"lr", number(&C::lr)},
      {"warmup", number(&C::warmup)},
      {"label-smoothing", number(&C::label_smoothing)},
      {"clip", number(&C::clip)},
      {"steps", number(&C::steps)},
      {"seed", number(&C::seed)},
      {"eval-every", number(&C::eval_every)},
      {"eval-count", eval_count()},
  };
  return table;
}

}  // namespace

RunConfig run_config_from_options(std::string_view options) {
  RunConfig config;
  while (!options.empty()) {
    const size_t end = std::min(options.find('&'), options.size());
    const std::string_view part = options.substr(0, end);
    options.remove_prefix(std::min(end + 1, options.size()));
    if (part.empty()) continue;
    const size_t equals = part.find('=');
    if (equals == std::string_view::npos)
      throw std::invalid_argument(fmt::format("options: \"{}\" is not KEY=VALUE", part));
    const std::string key(part.substr(0, equals)), value(part.substr(equals + 1));
    const auto* reader = [&]() -> const Read* {
      for (const auto& [name, read] : readers())
        if (name == key) return &read;
      return nullptr;
    }();
    if (!reader)
      throw std::invalid_argument(fmt::format("options: no setting \"{}\" (the settings: {})", key,
                                              fmt::join(run_option_keys(), ", ")));
    if (!(*reader)(config, value))
      throw std::invalid_argument(fmt::format(
          "options: \"{}\" is not a value of {} (as --{} of transformer train)", value, key, key));
  }
  return config;
}

std::vector<std::string> run_option_keys() {
  std::vector<std::string> keys;
  for (const auto& [name, read] : readers()) keys.push_back(name);
  return keys;
}

}  // namespace gf::training
