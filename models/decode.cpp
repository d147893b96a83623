#include "models/decode.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <stdexcept>

#include "autograd/errors.h"
#include "autograd/graph.h"
#include "autograd/ops.h"

namespace gf {

namespace {

void check_source(const char* op, const Transformer& model, const IndexTensor& src) {
  if (model.config.decoder_only())
    throw std::invalid_argument(fmt::format(
        "{}: the model is decoder-only (a language model): it continues text (transformer "
        "sample, models/sample.h) and has no source to translate",
        op));
  if (src.shape().rank() != 2 || src.shape()[0] == 0 || src.shape()[1] == 0)
    throw ShapeError(
        fmt::format("{}: source ids must be a non-empty [B, S], got {}", op, src.shape()));
  if (src.shape()[1] > model.config.max_len)
    throw ShapeError(fmt::format("{}: source length {} exceeds the model's max_len {}", op,
                                 src.shape()[1], model.config.max_len));
  for (int64_t i = 0; i < src.numel(); ++i)
    if (src.data()[i] < 0 || src.data()[i] >= model.config.vocab_size)
      throw IndexError(fmt::format("{}: token id {} is out of range [0, {})", op, src.data()[i],
                                   model.config.vocab_size));
}

int64_t steps_for(const Transformer& model, const IndexTensor& src, int64_t requested) {
  const int64_t wanted = requested > 0 ? requested : src.shape()[1] + 50;
  return std::min(wanted, model.config.max_len);
}

// The rows of x (along its first dimension) in the given order: x[rows[0]], x[rows[1]], ...
Tensor gather_rows(const Tensor& x, const std::vector<int64_t>& rows) {
  Shape shape = x.shape();
  const int64_t row_size = x.numel() / shape[0];
  shape[0] = static_cast<int64_t>(rows.size());
  Tensor y = Tensor::empty(shape);
  for (size_t i = 0; i < rows.size(); ++i)
    std::copy_n(x.data() + rows[i] * row_size, row_size,
                y.data() + static_cast<int64_t>(i) * row_size);
  return y;
}

int32_t argmax(const float* p, int64_t n) {
  int64_t best = 0;
  for (int64_t j = 1; j < n; ++j)
    if (p[j] > p[best]) best = j;
  return static_cast<int32_t>(best);
}

}  // namespace

std::vector<TokenIds> greedy_decode(Transformer& model, const IndexTensor& src,
                                    const GreedyOptions& options) {
  check_source("greedy_decode", model, src);
  nn::EvalScope eval(model);
  NoGrad no_grad;
  const TransformerConfig& c = model.config;
  const int64_t batch = src.shape()[0], steps = steps_for(model, src, options.max_len);
  const Tensor src_mask = nn::padding_mask(src, c.pad_id);
  const Tensor memory = model.encode(src, src_mask);

  std::vector<TokenIds> prefix(static_cast<size_t>(batch), TokenIds{c.bos_id});
  std::vector<TokenIds> output(static_cast<size_t>(batch));
  std::vector<bool> finished(static_cast<size_t>(batch), false);
  std::vector<DecoderLayerCache> cache;
  for (int64_t step = 0; step < steps; ++step) {
    Tensor out;
    if (options.use_cache) {  // feed only the newest token; earlier ones live in the cache
      std::vector<int32_t> last;
      for (const TokenIds& p : prefix) last.push_back(p.back());
      out = model.decode(IndexTensor::from({batch, 1}, last), memory, src_mask, {}, &cache, step);
    } else {  // feed the whole prefix and keep the last position
      std::vector<int32_t> all;
      for (const TokenIds& p : prefix) all.insert(all.end(), p.begin(), p.end());
      const IndexTensor ids = IndexTensor::from({batch, step + 1}, all);
      out = slice(model.decode(ids, memory, src_mask, nn::look_ahead_mask(step + 1)), 1, step,
                  step + 1);
    }
    const Tensor logits = model.generate(out);  // [B, 1, V]
    bool all_done = true;
    for (int64_t b = 0; b < batch; ++b) {
      const auto i = static_cast<size_t>(b);
      const int32_t next = argmax(logits.data() + b * c.vocab_size, c.vocab_size);
      prefix[i].push_back(next);
      if (!finished[i]) {
        if (next == c.eos_id && options.stop_at_eos)
          finished[i] = true;
        else
          output[i].push_back(next);
      }
      all_done = all_done && finished[i];
    }
    if (all_done) break;
  }
  return output;
}

namespace {

struct Hypothesis {
  TokenIds tokens;        // generated so far, without bos
  double log_prob = 0.0;  // log P(tokens | source)
  int64_t parent = 0;     // row of the previous step's hypothesis it extends (for the cache)
};

double length_penalty(int64_t length, float alpha) {
  return std::pow((5.0 + static_cast<double>(length)) / 6.0, static_cast<double>(alpha));
}

// When to stop. Stopping as soon as `beam` hypotheses have finished is too early: a
// hypothesis that skips a word reaches eos a step sooner than the right one, fills the last
// place, and the right one, still alive and scoring better, is never finished. So the search
// goes on while the best hypothesis still alive scores better, at its current length, than
// the worst of the `beam` best finished ones (the rule of Hugging Face's generate with
// early_stopping off). It is a heuristic: a prefix's score can still change with its length.
bool worth_continuing(std::vector<BeamResult>& finished, const std::vector<Hypothesis>& alive,
                      const BeamOptions& options) {
  if (alive.empty()) return false;
  const auto beam = static_cast<size_t>(options.beam);
  if (finished.size() < beam) return true;
  if (options.early_stop) return false;
  std::stable_sort(finished.begin(), finished.end(),  // ties keep their order: deterministic
                   [](const BeamResult& a, const BeamResult& b) { return a.score > b.score; });
  finished.resize(beam);  // only the best `beam` can still win
  double best_alive = -std::numeric_limits<double>::infinity();
  for (const Hypothesis& h : alive)
    best_alive = std::max(
        best_alive,
        h.log_prob / length_penalty(static_cast<int64_t>(h.tokens.size()), options.length_penalty));
  return best_alive > finished.back().score;
}

BeamResult beam_search_one(Transformer& model, const IndexTensor& src, const BeamOptions& options) {
  const TransformerConfig& c = model.config;
  const int64_t steps = steps_for(model, src, options.max_len), v = c.vocab_size;
  const Tensor src_mask = nn::padding_mask(src, c.pad_id);  // [1, 1, 1, S], broadcasts
  const Tensor memory = model.encode(src, src_mask);        // [1, S, D]

  std::vector<Hypothesis> alive{Hypothesis{}};
  std::vector<BeamResult> finished;
  std::vector<DecoderLayerCache> cache;
  for (int64_t step = 0; step < steps && !alive.empty(); ++step) {
    const auto n = static_cast<int64_t>(alive.size());
    std::vector<int32_t> last;
    for (const Hypothesis& h : alive) last.push_back(h.tokens.empty() ? c.bos_id : h.tokens.back());
    const Tensor out =
        model.decode(IndexTensor::from({n, 1}, last), memory, src_mask, {}, &cache, step);
    const Tensor log_probs = log_softmax(model.generate(out));  // [n, 1, V]

    // Every one-token extension of every hypothesis, best first; ties go to the earlier one.
    std::vector<std::pair<double, int64_t>> candidates;  // (log P, hypothesis * V + token)
    candidates.reserve(static_cast<size_t>(n * v));
    for (int64_t h = 0; h < n; ++h)
      for (int64_t t = 0; t < v; ++t)
        candidates.emplace_back(alive[static_cast<size_t>(h)].log_prob +
                                    static_cast<double>(log_probs.data()[h * v + t]),
                                h * v + t);
    const auto keep = std::min<size_t>(candidates.size(), static_cast<size_t>(2 * options.beam));
    std::partial_sort(candidates.begin(), candidates.begin() + static_cast<std::ptrdiff_t>(keep),
                      candidates.end(), [](const auto& a, const auto& b) {
                        return a.first > b.first || (a.first == b.first && a.second < b.second);
                      });

    std::vector<Hypothesis> next;
    for (size_t rank = 0; rank < keep && static_cast<int64_t>(next.size()) < options.beam; ++rank) {
      const auto [log_prob, index] = candidates[rank];
      const int64_t parent = index / v;
      const auto token = static_cast<int32_t>(index % v);
      TokenIds tokens = alive[static_cast<size_t>(parent)].tokens;
      if (token == c.eos_id) {
        // Finished: counted only if it ranks among the beam best of this step.
        if (static_cast<int64_t>(rank) < options.beam) {
          const double score = log_prob / length_penalty(static_cast<int64_t>(tokens.size()) + 1,
                                                         options.length_penalty);
          finished.push_back({std::move(tokens), log_prob, score, true});
        }
        continue;
      }
      tokens.push_back(token);
      next.push_back({std::move(tokens), log_prob, parent});
    }
    if (!worth_continuing(finished, next, options)) {
      alive.clear();  // nothing still alive is likely to beat what has finished
      break;
    }
    // The surviving hypotheses' self-attention caches: row i of the new cache is its parent's
    // row. The cross-attention cache holds the source's keys and values once, [1, S, D],
    // and broadcasts over the hypotheses, so it never needs reordering.
    std::vector<int64_t> parents;
    for (const Hypothesis& h : next) parents.push_back(h.parent);
    for (DecoderLayerCache& layer : cache) {
      layer.self_attn.k = gather_rows(layer.self_attn.k, parents);
      layer.self_attn.v = gather_rows(layer.self_attn.v, parents);
    }
    alive = std::move(next);
  }
  // Hypotheses still alive at max_len compete too, scored the same way but unfinished.
  for (Hypothesis& h : alive) {
    const double score =
        h.log_prob / length_penalty(static_cast<int64_t>(h.tokens.size()), options.length_penalty);
    finished.push_back({std::move(h.tokens), h.log_prob, score, false});
  }
  if (finished.empty()) return {};
  return *std::max_element(
      finished.begin(), finished.end(),
      [](const BeamResult& a, const BeamResult& b) { return a.score < b.score; });
}

}  // namespace

std::vector<BeamResult> beam_search_scored(Transformer& model, const IndexTensor& src,
                                           const BeamOptions& options) {
  check_source("beam_search", model, src);
  if (options.beam < 1)
    throw std::invalid_argument(
        fmt::format("beam_search: beam must be at least 1, got {}", options.beam));
  nn::EvalScope eval(model);
  NoGrad no_grad;
  const int64_t batch = src.shape()[0], length = src.shape()[1];
  std::vector<BeamResult> output;
  for (int64_t b = 0; b < batch; ++b) {
    // One source at a time: its hypotheses form the batch of each decoder step.
    const std::vector<int32_t> row(src.data() + b * length, src.data() + (b + 1) * length);
    output.push_back(beam_search_one(model, IndexTensor::from({1, length}, row), options));
  }
  return output;
}

std::vector<TokenIds> beam_search(Transformer& model, const IndexTensor& src,
                                  const BeamOptions& options) {
  std::vector<TokenIds> output;
  for (BeamResult& r : beam_search_scored(model, src, options))
    output.push_back(std::move(r.tokens));
  return output;
}

}  // namespace gf
