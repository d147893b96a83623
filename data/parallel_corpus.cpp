#include "data/parallel_corpus.h"

#include <fmt/format.h>

#include <algorithm>
#include <numeric>
#include <stdexcept>

#include "autograd/errors.h"

namespace gf::data {

Pair encode_pair(const Tokenizer& tokenizer, std::string_view source, std::string_view target) {
  Pair pair;
  pair.src = tokenizer.encode(source);
  pair.src.push_back(kEos);
  pair.tgt.push_back(kBos);
  const std::vector<int32_t> target_ids = tokenizer.encode(target);
  pair.tgt.insert(pair.tgt.end(), target_ids.begin(), target_ids.end());
  pair.tgt.push_back(kEos);
  return pair;
}

std::vector<Pair> encode_pairs(const Tokenizer& tokenizer, const SentencePairsFile& file) {
  std::vector<Pair> pairs;
  pairs.reserve(file.pairs.size());
  for (size_t i = 0; i < file.pairs.size(); ++i) {
    try {
      pairs.push_back(encode_pair(tokenizer, file.pairs[i].source, file.pairs[i].target));
    } catch (const std::exception& e) {
      throw FormatError(fmt::format("{}:{}: {}", file.name, file.lines[i], e.what()));
    }
  }
  return pairs;
}

// Fisher-Yates with Rng::below, so that a seed shuffles the same way with every library.
template <typename T>
static void shuffle(std::vector<T>& items, Rng& rng) {
  for (size_t i = items.size(); i > 1; --i)
    std::swap(items[i - 1], items[static_cast<size_t>(rng.below(static_cast<int64_t>(i)))]);
}

std::vector<std::vector<Pair>> batches_by_length(std::span<const Pair> pairs, int64_t max_tokens,
                                                 Rng& rng) {
  if (max_tokens < 1)
    throw std::invalid_argument(
        fmt::format("batches_by_length: max_tokens is {} but must be at least 1", max_tokens));
  const auto length = [&](size_t i) {
    return static_cast<int64_t>(std::max(pairs[i].src.size(), pairs[i].tgt.size()));
  };
  std::vector<size_t> order(pairs.size());
  std::iota(order.begin(), order.end(), size_t{0});
  shuffle(order, rng);
  std::stable_sort(order.begin(), order.end(),
                   [&](size_t a, size_t b) { return length(a) < length(b); });

  // Sorted ascending, so the pair being added is always the longest of its batch.
  std::vector<std::vector<Pair>> batches;
  std::vector<Pair> batch;
  for (size_t i : order) {
    const int64_t padded = static_cast<int64_t>(batch.size() + 1) * length(i);
    if (!batch.empty() && padded > max_tokens) {
      batches.push_back(std::move(batch));
      batch.clear();
    }
    batch.push_back(pairs[i]);
  }
  if (!batch.empty()) batches.push_back(std::move(batch));
  shuffle(batches, rng);
  return batches;
}

}  // namespace gf::data
