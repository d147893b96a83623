// The bigram baseline: add-k probabilities counted by hand, bos's row as the unigram, and the
// perplexity over windows.
#include <catch2/catch.hpp>
#include <cmath>
#include <vector>

#include "data/text_windows.h"
#include "models/bigram.h"

using namespace gf;
using Catch::Matchers::Contains;

TEST_CASE("bigram probabilities are add-k smoothed counts", "[models][bigram]") {
  // Vocabulary of 6 (0-3 special), stream 4 5 4 4: pairs 4->5, 5->4, 4->4.
  const std::vector<int32_t> stream = {4, 5, 4, 4};
  const BigramModel bigram(stream, 6, 1);
  // count(4 5) = 1, count(4 .) = 2: (1 + k) / (2 + 6k).
  CHECK(std::exp(bigram.log_prob(4, 5, 1.0)) == Approx(2.0 / 8.0));
  CHECK(std::exp(bigram.log_prob(4, 5, 0.5)) == Approx(1.5 / 5.0));
  // 5 is followed once, by 4.
  CHECK(std::exp(bigram.log_prob(5, 4, 1.0)) == Approx(2.0 / 7.0));
  // A token never seen first gets the uniform k / (k V).
  CHECK(std::exp(bigram.log_prob(3, 4, 1.0)) == Approx(1.0 / 6.0));
  // After bos, the unigram: 4 appears 3 times of 4.
  CHECK(std::exp(bigram.log_prob(1, 4, 1.0)) == Approx(4.0 / 10.0));
  // Each row sums to 1.
  double total = 0.0;
  for (int32_t next = 0; next < 6; ++next) total += std::exp(bigram.log_prob(4, next, 0.1));
  CHECK(total == Approx(1.0));
}

TEST_CASE("the bigram perplexity counts each token of each window once", "[models][bigram]") {
  const std::vector<int32_t> stream = {4, 5, 4, 4};
  const BigramModel bigram(stream, 6, 1);
  const std::vector<data::Pair> windows =
      data::consecutive_windows(stream, 2, 1);  // bos 4 5, bos 4 4
  const double nats = -(bigram.log_prob(1, 4, 1.0) + bigram.log_prob(4, 5, 1.0) +
                        bigram.log_prob(1, 4, 1.0) + bigram.log_prob(4, 4, 1.0));
  CHECK(bigram.perplexity(windows, 1.0) == Approx(std::exp(nats / 4.0)));
  const BigramModel::Best best = bigram.best_perplexity(windows);
  for (const double k : BigramModel::kCandidates)
    CHECK(best.perplexity <= bigram.perplexity(windows, k));
  CHECK_THROWS_WITH(bigram.perplexity(windows, 0.0), Contains("k must be positive"));
  CHECK_THROWS_WITH(BigramModel(std::vector<int32_t>{4, 9}, 6, 1), Contains("token id 9"));
  CHECK_THROWS_WITH(BigramModel(std::vector<int32_t>{4}, 6, 1), Contains("no pairs"));
}
