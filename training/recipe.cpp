#include "training/recipe.h"

#include <cmath>
#include <sstream>
#include <unordered_set>

#include "data/tokenizer.h"
#include "data/utf8.h"
#include "data/vocab.h"

namespace gf::training {

CorpusFacts corpus_facts(const data::SentencePairsFile& train) {
  CorpusFacts facts{.pairs = static_cast<int64_t>(train.pairs.size())};
  std::unordered_set<char32_t> characters;
  std::unordered_set<std::string> distinct;
  for (const data::SentencePair& pair : train.pairs)
    for (const std::string* side : {&pair.source, &pair.target}) {
      for (char32_t c : data::decode_utf8(*side)) characters.insert(c);
      std::istringstream words(*side);
      for (std::string word; words >> word;) {
        ++facts.words;
        distinct.insert(word);
      }
    }
  facts.characters = static_cast<int64_t>(characters.size());
  facts.distinct_words = static_cast<int64_t>(distinct.size());
  return facts;
}

TextFacts text_facts(const std::string& text) {
  TextFacts facts;
  std::unordered_set<char32_t> characters;
  for (const char32_t c : data::decode_utf8(text)) {
    ++facts.characters;
    characters.insert(c);
  }
  facts.distinct_characters = static_cast<int64_t>(characters.size());
  for (const std::string& word : data::split_words(text))
    for (const char32_t c : data::decode_utf8(word))
      if (data::char_class(c) == data::CharClass::kLetter) {
        ++facts.words;
        break;
      }
  return facts;
}

TextRecipe lm_recipe(const TextFacts& facts) {
  // As for translation, one token per character and then merges growing with the square root
  // of the words, but fewer: 2 sqrt(words). A language model's every position pays for the
  // softmax over the vocabulary, and at this model's size a smaller one learned faster (lesson
  // 13 measures the choice).
  // On the English fortunes (2.3 MB), 1200 steps of 16 windows ended at a dev perplexity of
  // 58.3, 600 steps of 32 (the same tokens) at 71.1; the bigram model's is 73.3.
  const int64_t base = data::kNumSpecial + 256 + facts.distinct_characters;
  const auto merges =
      static_cast<int64_t>(std::lround(2.0 * std::sqrt(static_cast<double>(facts.words))));
  return TextRecipe{.model = {.vocab_size = 0,
                              .d_model = 128,
                              .d_ff = 512,
                              .heads = 4,
                              .encoder_layers = 0,
                              .decoder_layers = 4,
                              .max_len = 128,
                              .dropout = 0.1f,
                              .norm_first = true},
                    .tokenizer = TokenizerKind::Bpe,
                    .vocab_size = (base + merges + 99) / 100 * 100,
                    .schedule = ScheduleKind::Cosine,
                    .peak_lr = peak_lr_for(128),
                    .warmup = 200,
                    .label_smoothing = 0.0f,
                    .batch = 16,
                    .steps = 1200,
                    .average = 5,
                    .checks = 10};
}

float peak_lr_for(int64_t d_model) {
  return static_cast<float>(2e-3 * std::sqrt(128.0 / static_cast<double>(d_model)));
}

std::optional<TextRecipe> text_recipe(const CorpusFacts& facts) {
  if (facts.distinct_words < kRealTextWords) return std::nullopt;
  // Every character gets a token, then about 8 sqrt(words) merges: 3,700 for the 210,000
  // words of the German message catalogs, 2,800 for the 123,000 of the Chinese ones (whose
  // characters are each a word of their own, so the merges go to the English side).
  const int64_t base = data::kNumSpecial + 256 + facts.characters;
  const auto merges =
      static_cast<int64_t>(std::lround(8.0 * std::sqrt(static_cast<double>(facts.words))));
  return TextRecipe{.model = {.vocab_size = 0,
                              .d_model = 128,
                              .d_ff = 512,
                              .heads = 4,
                              .encoder_layers = 2,
                              .decoder_layers = 2,
                              .max_len = 256,
                              .dropout = 0.1f,
                              .norm_first = true},
                    .vocab_size = (base + merges + 99) / 100 * 100,
                    .schedule = ScheduleKind::Cosine,
                    .peak_lr = peak_lr_for(128),
                    .warmup = 200,
                    .label_smoothing = 0.1f,
                    .batch_tokens = 1000,
                    .average = 5,
                    .checks = 10};
}

}  // namespace gf::training
