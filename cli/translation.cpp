#include "cli/translation.h"

#include <fmt/format.h>

#include <algorithm>
#include <numeric>
#include <stdexcept>

#include "data/batch.h"
#include "data/vocab.h"
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

}  // namespace gf::cli
