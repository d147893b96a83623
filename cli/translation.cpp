#include "cli/translation.h"

#include <fmt/format.h>

#include <algorithm>
#include <numeric>
#include <stdexcept>

#include "autograd/errors.h"
#include "autograd/graph.h"
#include "data/batch.h"
#include "data/parallel_corpus.h"
#include "data/toy_language.h"
#include "models/decode.h"

namespace gf::cli {

std::vector<std::string> translate_texts(Transformer& model, const data::Tokenizer& tokenizer,
                                         std::span<const std::string> sources,
                                         const DecodeSettings& settings) {
  std::vector<std::vector<int32_t>> encoded;
  encoded.reserve(sources.size());
  for (size_t i = 0; i < sources.size(); ++i) {
    encoded.push_back(tokenizer.encode(sources[i]));
    encoded.back().push_back(data::kEos);
    if (static_cast<int64_t>(encoded.back().size()) > model.config.max_len)
      throw std::invalid_argument(
          fmt::format("sentence {} has {} tokens, more than the model's max_len {}", i + 1,
                      encoded.back().size(), model.config.max_len));
  }
  // Decoding in order of length keeps each batch's padding, and its longest decode, short.
  std::vector<size_t> order(sources.size());
  std::iota(order.begin(), order.end(), size_t{0});
  std::stable_sort(order.begin(), order.end(),
                   [&](size_t a, size_t b) { return encoded[a].size() < encoded[b].size(); });

  std::vector<std::string> translations(sources.size());
  const auto batch = static_cast<size_t>(std::max<int64_t>(settings.batch, 1));
  for (size_t start = 0; start < order.size(); start += batch) {
    const size_t end = std::min(order.size(), start + batch);
    std::vector<std::vector<int32_t>> chunk;
    for (size_t k = start; k < end; ++k) chunk.push_back(encoded[order[k]]);
    const IndexTensor src = data::pad_sequences(chunk, model.config.pad_id);
    const std::vector<TokenIds> outputs =
        settings.beam > 1
            ? beam_search(model, src,
                          {.beam = settings.beam, .length_penalty = settings.length_penalty})
            : greedy_decode(model, src);
    for (size_t k = start; k < end; ++k)
      translations[order[k]] = tokenizer.decode(outputs[k - start]);
  }
  return translations;
}

TranslationScores score_translations(Transformer& model, const data::Tokenizer& tokenizer,
                                     std::span<const data::SentencePair> pairs,
                                     const DecodeSettings& settings) {
  std::vector<std::string> sources, references;
  for (const data::SentencePair& p : pairs) {
    sources.push_back(p.source);
    references.push_back(p.target);
  }
  TranslationScores scores;
  scores.hypotheses = translate_texts(model, tokenizer, sources, settings);
  scores.bleu = data::corpus_bleu(scores.hypotheses, references);
  scores.chrf = data::corpus_chrf(scores.hypotheses, references);
  return scores;
}

data::AlignmentScore score_alignment(Transformer& model, const data::Tokenizer& tokenizer,
                                     const data::SentencePairsFile& file, int64_t layer) {
  const int64_t layers = model.config.decoder_layers;
  if (layer < -1 || layer >= layers)
    throw std::invalid_argument(fmt::format(
        "alignment layer {} does not exist: the decoder has layers 1 to {}", layer + 1, layers));
  const auto chosen = static_cast<size_t>(layer < 0 ? layers - 1 : layer);
  data::AlignmentScore score;
  model.eval();
  model.record_attention(true);
  NoGrad no_grad;
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
    const Tensor probs = model.attention(AttentionKind::Cross)[chosen];  // [1, H, T, S]
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
  model.record_attention(false);
  return score;
}

}  // namespace gf::cli
