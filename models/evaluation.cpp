#include "models/evaluation.h"

#include <algorithm>
#include <vector>

#include "data/batch.h"
#include "models/decode.h"

namespace gf {

namespace {

// Whether output (without bos and eos, as greedy_decode gives it) is the target [bos, ...].
bool decodes_to(const TokenIds& output, std::span<const int32_t> target, int32_t eos) {
  const std::span<const int32_t> tokens = target.subspan(1);
  if (!tokens.empty() && tokens.back() == eos)
    return std::ranges::equal(output, tokens.first(tokens.size() - 1));
  return output.size() >= tokens.size() && std::equal(tokens.begin(), tokens.end(), output.begin());
}

}  // namespace

double exact_match(Transformer& model, std::span<const data::Pair> pairs) {
  int64_t exact = 0;
  for (const auto& chunk : data::batches_in_order(pairs, 64)) {
    std::vector<std::vector<int32_t>> sources;
    for (const data::Pair& p : chunk) sources.push_back(p.src);
    const std::vector<TokenIds> outputs =
        greedy_decode(model, data::pad_sequences(sources, model.config.pad_id));
    for (size_t i = 0; i < chunk.size(); ++i)
      exact += decodes_to(outputs[i], chunk[i].tgt, model.config.eos_id);
  }
  return static_cast<double>(exact) / static_cast<double>(pairs.size());
}

}  // namespace gf
