#include "models/sample.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <numeric>
#include <stdexcept>

#include "autograd/errors.h"
#include "autograd/graph.h"
#include "autograd/ops.h"

namespace gf {

void SampleOptions::validate() const {
  if (length < 0) throw std::invalid_argument(fmt::format("sample: --length {} < 0", length));
  if (!(temperature > 0.0f) || !std::isfinite(temperature))
    throw std::invalid_argument(fmt::format(
        "sample: --temperature must be positive and finite, got {} (for the most probable "
        "token at every step, give a small one such as 0.01)",
        temperature));
  if (top_k < 0) throw std::invalid_argument(fmt::format("sample: --top-k {} < 0", top_k));
  if (!(top_p > 0.0f && top_p <= 1.0f))
    throw std::invalid_argument(fmt::format("sample: --top-p must be in (0, 1], got {}", top_p));
}

std::vector<float> sampling_distribution(std::span<const float> logits,
                                         const SampleOptions& options) {
  const size_t n = logits.size();
  // Softmax at the temperature, shifted by the largest logit so that exp cannot overflow.
  const float largest = *std::max_element(logits.begin(), logits.end());
  std::vector<float> p(n);
  double sum = 0.0;
  for (size_t v = 0; v < n; ++v) {
    p[v] = std::exp((logits[v] - largest) / options.temperature);
    sum += p[v];
  }
  for (float& x : p) x = static_cast<float>(x / sum);
  // The tokens from most to least probable (the lower id first on a tie): both cuts keep a
  // prefix of this order.
  std::vector<size_t> order(n);
  std::iota(order.begin(), order.end(), size_t{0});
  std::stable_sort(order.begin(), order.end(), [&](size_t a, size_t b) { return p[a] > p[b]; });
  size_t kept = options.top_k > 0 ? std::min(static_cast<size_t>(options.top_k), n) : n;
  const auto mass_of_first = [&](size_t count) {
    double mass = 0.0;
    for (size_t i = 0; i < count; ++i) mass += p[order[i]];
    return mass;
  };
  if (options.top_p < 1.0f) {  // on top-k's distribution, renormalised
    const double top_k_mass = mass_of_first(kept);
    double running = 0.0;
    size_t nucleus = 0;
    while (nucleus < kept && running < options.top_p * top_k_mass) running += p[order[nucleus++]];
    kept = std::max<size_t>(nucleus, 1);
  }
  const double kept_sum = mass_of_first(kept);
  std::vector<float> q(n, 0.0f);
  for (size_t i = 0; i < kept; ++i) q[order[i]] = static_cast<float>(p[order[i]] / kept_sum);
  return q;
}

int32_t draw_token(std::span<const float> probabilities, Rng& rng) {
  const float u = rng.uniform();
  float running = 0.0f;
  int32_t last_possible = 0;
  for (size_t v = 0; v < probabilities.size(); ++v) {
    if (probabilities[v] <= 0.0f) continue;
    running += probabilities[v];
    last_possible = static_cast<int32_t>(v);
    if (u < running) return last_possible;
  }
  return last_possible;  // rounding left the sum a hair below u
}

namespace {

void check_prompt(const Transformer& model, std::span<const int32_t> prompt) {
  if (!model.config.decoder_only())
    throw std::logic_error(
        "sample: the model has an encoder; sampling continues a decoder-only "
        "model's text (greedy_decode and beam_search translate)");
  if (static_cast<int64_t>(prompt.size()) + 1 > model.config.max_len)
    throw std::invalid_argument(
        fmt::format("sample: the prompt has {} tokens; with bos that is more than the model's "
                    "max_len {}",
                    prompt.size(), model.config.max_len));
  for (const int32_t id : prompt)
    if (id < 0 || id >= model.config.vocab_size)
      throw IndexError(
          fmt::format("sample: token id {} is out of range [0, {})", id, model.config.vocab_size));
}

// Runs rows (each bos then the same number of tokens) through the model into an empty cache;
// returns the last position's logits [B, 1, V].
Tensor prime(Transformer& model, const std::vector<TokenIds>& rows,
             std::vector<DecoderLayerCache>& cache) {
  cache.clear();
  const auto batch = static_cast<int64_t>(rows.size()),
             length = static_cast<int64_t>(rows.front().size());
  std::vector<int32_t> ids;
  for (const TokenIds& row : rows) ids.insert(ids.end(), row.begin(), row.end());
  const Tensor out = model.decode(IndexTensor::from({batch, length}, ids), {}, {},
                                  nn::look_ahead_mask(length), &cache, 0);
  return model.generate(slice(out, 1, length - 1, length));  // [B, 1, V]
}

}  // namespace

std::vector<TokenIds> sample(Transformer& model, std::span<const int32_t> prompt,
                             const SampleOptions& options, Rng& rng, int64_t count) {
  options.validate();
  check_prompt(model, prompt);
  if (count < 1) throw std::invalid_argument(fmt::format("sample: count {} < 1", count));
  nn::EvalScope eval(model);
  NoGrad no_grad;
  const TransformerConfig& c = model.config;
  const auto rows = static_cast<size_t>(count);
  // Each row's tokens so far (prompt, then its samples), the model's context, and its output.
  std::vector<TokenIds> tokens(rows, TokenIds(prompt.begin(), prompt.end()));
  std::vector<TokenIds> context(rows), output(rows);
  std::vector<bool> finished(rows, false);
  std::vector<DecoderLayerCache> cache;
  const auto fill_context = [&](size_t keep) {
    for (size_t b = 0; b < rows; ++b) {
      context[b] = {c.bos_id};
      context[b].insert(context[b].end(), tokens[b].end() - static_cast<std::ptrdiff_t>(keep),
                        tokens[b].end());
    }
    return prime(model, context, cache);
  };
  Tensor logits = fill_context(prompt.size());                 // [B, 1, V]: row b at b * V
  int64_t position = static_cast<int64_t>(prompt.size()) + 1;  // tokens in the cache
  for (int64_t step = 0; step < options.length; ++step) {
    std::vector<int32_t> next(rows);
    bool all_done = true;
    for (size_t b = 0; b < rows; ++b) {
      const std::span<const float> row(logits.data() + static_cast<int64_t>(b) * c.vocab_size,
                                       static_cast<size_t>(c.vocab_size));
      next[b] = draw_token(sampling_distribution(row, options), rng);
      tokens[b].push_back(next[b]);
      if (!finished[b]) {
        if (next[b] == c.eos_id && options.stop_at_eos)
          finished[b] = true;
        else
          output[b].push_back(next[b]);
      }
      all_done = all_done && finished[b];
    }
    if (all_done || step + 1 == options.length) break;
    if (position == c.max_len) {  // the window is full: slide it (see the header)
      logits = fill_context(static_cast<size_t>(c.max_len / 2));
      position = c.max_len / 2 + 1;
      continue;
    }
    const Tensor out =
        model.decode(IndexTensor::from({count, 1}, next), {}, {}, {}, &cache, position++);
    logits = model.generate(out);
  }
  return output;
}

}  // namespace gf
