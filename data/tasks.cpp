#include "data/tasks.h"

#include <fmt/format.h>

#include <stdexcept>

#include "data/vocab.h"

namespace gf::data {

Task parse_task(std::string_view name) {
  if (name == "copy") return Task::Copy;
  if (name == "reverse") return Task::Reverse;
  throw std::invalid_argument(
      fmt::format("unknown task \"{}\" (valid tasks: copy, reverse)", name));
}

std::string task_name(Task task) {
  return task == Task::Copy ? "copy" : "reverse";
}

void validate(const TaskConfig& config) {
  if (config.vocab_size <= kNumSpecial)
    throw std::invalid_argument(fmt::format(
        "task config: vocab_size is {} but must be at least {} (ids 0..{} are special tokens, "
        "so content needs at least one more)",
        config.vocab_size, kNumSpecial + 1, kNumSpecial - 1));
  if (config.min_len < 1)
    throw std::invalid_argument(
        fmt::format("task config: min_len is {} but must be at least 1", config.min_len));
  if (config.max_len < config.min_len)
    throw std::invalid_argument(
        fmt::format("task config: max_len is {} but must be at least min_len ({})", config.max_len,
                    config.min_len));
}

// The content c1 .. cn shared by both tasks: n uniform in [min_len, max_len], then n tokens
// uniform in [kNumSpecial, vocab_size). The length is drawn even when min_len == max_len, so
// the random stream has the same structure whatever the configuration.
static std::vector<int32_t> draw_content(const TaskConfig& config, Rng& rng) {
  validate(config);
  const int64_t n = config.min_len + rng.below(config.max_len - config.min_len + 1);
  const int64_t symbols = config.vocab_size - kNumSpecial;
  std::vector<int32_t> content(static_cast<size_t>(n));
  for (int32_t& c : content) c = kNumSpecial + static_cast<int32_t>(rng.below(symbols));
  return content;
}

// src = content + [eos]; tgt = [bos] + content (in the given order) + [eos].
static Pair make_pair_from(const std::vector<int32_t>& content, bool reversed) {
  Pair pair;
  pair.src.reserve(content.size() + 1);
  pair.src.assign(content.begin(), content.end());
  pair.src.push_back(kEos);
  pair.tgt.reserve(content.size() + 2);
  pair.tgt.push_back(kBos);
  if (reversed)
    pair.tgt.insert(pair.tgt.end(), content.rbegin(), content.rend());
  else
    pair.tgt.insert(pair.tgt.end(), content.begin(), content.end());
  pair.tgt.push_back(kEos);
  return pair;
}

Pair copy_pair(const TaskConfig& config, Rng& rng) {
  return make_pair_from(draw_content(config, rng), /*reversed=*/false);
}

Pair reverse_pair(const TaskConfig& config, Rng& rng) {
  return make_pair_from(draw_content(config, rng), /*reversed=*/true);
}

Pair generate_pair(Task task, const TaskConfig& config, Rng& rng) {
  return task == Task::Copy ? copy_pair(config, rng) : reverse_pair(config, rng);
}

std::vector<Pair> generate(Task task, int64_t count, const TaskConfig& config, Rng& rng) {
  if (count < 0)
    throw std::invalid_argument(fmt::format("generate: count is {} but must be at least 0", count));
  validate(config);
  std::vector<Pair> pairs;
  pairs.reserve(static_cast<size_t>(count));
  for (int64_t i = 0; i < count; ++i) pairs.push_back(generate_pair(task, config, rng));
  return pairs;
}

}  // namespace gf::data
