#include "models/evaluation.h"

#include <fmt/format.h>

#include <algorithm>
#include <stdexcept>
#include <vector>

#include "autograd/errors.h"
#include "autograd/graph.h"
#include "data/batch.h"
#include "data/parallel_corpus.h"
#include "data/toy_language.h"
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

// Keeps one attention module's probabilities for a scope, and its own setting back afterwards.
class RecordingScope {
 public:
  explicit RecordingScope(nn::MultiHeadAttention& attention)
      : attention_(attention), was_recording_(attention.record_attention) {
    attention_.record_attention = true;
  }
  ~RecordingScope() { attention_.record_attention = was_recording_; }
  RecordingScope(const RecordingScope&) = delete;
  RecordingScope& operator=(const RecordingScope&) = delete;

 private:
  nn::MultiHeadAttention& attention_;
  bool was_recording_;
};

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

data::AlignmentScore score_alignment(Transformer& model, const data::Tokenizer& tokenizer,
                                     const data::SentencePairsFile& file, int64_t layer) {
  const int64_t layers = model.config.decoder_layers;
  if (layer < -1 || layer >= layers)
    throw std::invalid_argument(fmt::format(
        "alignment layer {} does not exist: the decoder has layers 1 to {}", layer + 1, layers));
  const auto chosen = static_cast<size_t>(layer < 0 ? layers - 1 : layer);
  // Only the layer scored keeps its weights (a copy each time: nn/attention.h).
  nn::MultiHeadAttention& cross = model.decoder.layers[chosen]->cross_attn;
  nn::EvalScope eval(model);
  RecordingScope recording(cross);
  NoGrad no_grad;
  data::AlignmentScore score;
  for (size_t i = 0; i < file.pairs.size(); ++i) {
    const data::SentencePair& p = file.pairs[i];
    std::vector<std::pair<int32_t, int32_t>> gold;
    try {
      gold = data::parse_alignment(p.extra);
    } catch (const std::exception& e) {
      throw FormatError(fmt::format("{}:{}: {}", file.name, file.lines[i], e.what()));
    }
    const data::Pair pair = data::encode_pair(tokenizer, p.source, p.target);
    // Teacher forcing on the reference: row t of the cross-attention is the step that produces
    // tgt[t + 1], so the rows are the target's tokens, then <eos> (no word).
    const std::vector<int32_t> tgt_in(pair.tgt.begin(), pair.tgt.end() - 1);
    model.forward(IndexTensor::from({1, static_cast<int64_t>(pair.src.size())}, pair.src),
                  IndexTensor::from({1, static_cast<int64_t>(tgt_in.size())}, tgt_in));
    const Tensor probs = cross.last_attention;  // [1, H, T, S]
    const int64_t heads = probs.dim(1), rows = probs.dim(2), columns = probs.dim(3);
    std::vector<float> mean(static_cast<size_t>(rows * columns), 0.0f);
    for (int64_t h = 0; h < heads; ++h)
      for (int64_t k = 0; k < rows * columns; ++k)
        mean[static_cast<size_t>(k)] +=
            probs.data()[h * rows * columns + k] / static_cast<float>(heads);
    std::vector<int32_t> target_words = data::word_of_tokens(
        tokenizer, std::span<const int32_t>(pair.tgt).subspan(1, pair.tgt.size() - 2));
    target_words.push_back(-1);  // the row that produces <eos>
    const std::vector<int32_t> source_words = data::word_of_tokens(tokenizer, pair.src);
    try {
      data::add_alignment_score(mean, target_words, source_words, gold, score);
    } catch (const std::exception& e) {
      throw FormatError(fmt::format("{}:{}: {}", file.name, file.lines[i], e.what()));
    }
  }
  return score;
}

}  // namespace gf
