#include <catch2/catch.hpp>
#include <cmath>
#include <limits>

#include "autograd/errors.h"
#include "autograd/graph.h"
#include "autograd/ops.h"
#include "nn/attention.h"
#include "nn/feed_forward.h"
#include "nn/init.h"
#include "nn/layers.h"

using namespace gf;
using namespace gf::nn;
using Catch::Matchers::Contains;

TEST_CASE("Linear computes x W^T + b and names its parameters", "[nn][layers]") {
  Rng rng(1);
  Linear layer(3, 2, rng);
  layer.weight.data()[0] = 1.0f;  // W = [[1, 0, 0], [0, 0, 2]] for a known answer
  for (int i = 1; i < 6; ++i) layer.weight.data()[i] = 0.0f;
  layer.weight.data()[5] = 2.0f;
  layer.bias.data()[1] = 0.5f;
  const Tensor y = layer.forward(Tensor::from({1, 3}, {4, 5, 6}));
  CHECK(y.to_vector() == std::vector<float>{4.0f, 12.5f});
  const NamedTensors named = layer.named_parameters();
  REQUIRE(named.size() == 2);
  CHECK(named[0].first == "weight");
  CHECK(named[0].second.shape() == Shape{2, 3});
  CHECK(named[1].first == "bias");
  CHECK(layer.parameter_count() == 8);
  Linear no_bias(3, 2, rng, /*with_bias=*/false);
  CHECK(no_bias.named_parameters().size() == 1);
}

TEST_CASE("Xavier uniform stays within its bound and is seeded", "[nn][init]") {
  Rng a(5), b(5);
  const Tensor w = init::xavier_uniform({64, 192}, a);
  const float bound = std::sqrt(6.0f / (64 + 192));
  float largest = 0.0f;
  for (float v : w.to_vector()) largest = std::max(largest, std::abs(v));
  CHECK(largest <= bound);
  CHECK(largest > 0.95f * bound);  // the whole range is used
  CHECK(w.to_vector() == init::xavier_uniform({64, 192}, b).to_vector());
}

TEST_CASE("LayerNorm starts as plain normalisation, Dropout obeys train and eval", "[nn][layers]") {
  LayerNorm norm(4);
  const Tensor y = norm.forward(Tensor::from({4}, {1, 2, 3, 4}));
  CHECK(y.at({0}) == Approx(-1.5f / std::sqrt(1.25f + 1e-5f)));
  Rng rng(2);
  Dropout drop(0.5f, rng);
  const Tensor x = Tensor::ones({1000});
  const Tensor trained = drop.forward(x);
  int zeros = 0;
  for (float v : trained.to_vector()) zeros += v == 0.0f;
  CHECK(zeros > 400);
  CHECK(zeros < 600);
  drop.eval();
  CHECK(drop.forward(x).data() == x.data());  // the identity, not even a copy
  REQUIRE_THROWS_WITH(Dropout(1.0f, rng), Contains("Dropout: probability 1 is outside [0, 1)"));
}

TEST_CASE("the position-wise FFN is the same MLP at every position", "[nn][feed_forward]") {
  Rng rng(3);
  PositionwiseFeedForward ffn(8, 32, rng);
  const Tensor x = Tensor::randn({2, 5, 8}, rng);
  const Tensor y = ffn.forward(x);
  REQUIRE(y.shape() == Shape{2, 5, 8});
  const Tensor one = ffn.forward(slice(slice(x, 0, 1, 2), 1, 3, 4));  // position (1, 3) alone
  for (int j = 0; j < 8; ++j) CHECK(one.at({0, 0, j}) == Approx(y.at({1, 3, j})));
  CHECK(ffn.named_parameters()[0].first == "linear1.weight");
  CHECK(ffn.named_parameters()[0].second.shape() == Shape{32, 8});
}

TEST_CASE("positional encoding: sin on even and cos on odd dimensions", "[nn][positions]") {
  PositionalEncoding pe(50, 16);
  const Tensor& t = pe.table();
  CHECK(t.at({0, 0}) == 0.0f);
  CHECK(t.at({0, 1}) == 1.0f);
  CHECK(t.at({3, 0}) == Approx(std::sin(3.0)));
  CHECK(t.at({3, 1}) == Approx(std::cos(3.0)));
  // dimension 2i = 4: frequency 10000^(-4/16)
  CHECK(t.at({7, 4}) == Approx(std::sin(7.0 * std::pow(10000.0, -4.0 / 16.0))));
  CHECK(t.at({7, 5}) == Approx(std::cos(7.0 * std::pow(10000.0, -4.0 / 16.0))));
  CHECK(pe.rows(10, 5).shape() == Shape{5, 16});
  REQUIRE_THROWS_WITH(pe.rows(48, 5), Contains("positions 48 to 52 exceed max_len 50"));
}

TEST_CASE("masks block padding and the future", "[nn][attention][masks]") {
  const IndexTensor ids = IndexTensor::from({2, 3}, {5, 6, 0, 7, 0, 0});
  CHECK(padding_mask(ids, 0).shape() == Shape{2, 1, 1, 3});
  CHECK(padding_mask(ids, 0).to_vector() == std::vector<float>{0, 0, 1, 0, 1, 1});
  CHECK(look_ahead_mask(3).to_vector() == std::vector<float>{0, 1, 1, 0, 0, 1, 0, 0, 0});
  const Tensor t = target_mask(ids, 0);  // [2, 1, 3, 3]
  CHECK(t.shape() == Shape{2, 1, 3, 3});
  CHECK(slice(t, 0, 0, 1).to_vector() == std::vector<float>{0, 1, 1, 0, 0, 1, 0, 0, 1});
  CHECK(slice(t, 0, 1, 2).to_vector() == std::vector<float>{0, 1, 1, 0, 1, 1, 0, 1, 1});
  REQUIRE_THROWS_WITH(look_ahead_mask(0), Contains("look_ahead_mask: length is 0 but must be"));
  REQUIRE_THROWS_WITH(padding_mask(IndexTensor::zeros({6}), 0),
                      Contains("padding_mask: ids must be [B, L], got [6]"));
}

TEST_CASE("masks broadcast over heads and queries in masked_fill + softmax",
          "[nn][attention][masks]") {
  // Scores of zeros: each query spreads its attention evenly over the keys it may see.
  const IndexTensor ids = IndexTensor::from({2, 4}, {1, 5, 6, 7, 1, 8, 0, 0});
  const float inf = std::numeric_limits<float>::infinity();
  const Tensor self = softmax(masked_fill(Tensor::zeros({2, 3, 4, 4}), target_mask(ids, 0), -inf));
  CHECK(self.at({0, 2, 0, 0}) == 1.0f);           // the first query sees only itself
  CHECK(self.at({0, 1, 3, 2}) == Approx(0.25f));  // the last sees all four
  CHECK(self.at({1, 0, 3, 1}) == Approx(0.5f));   // ... but in row 1 two keys are padding
  CHECK(self.at({1, 0, 3, 2}) == 0.0f);
  const Tensor cross =
      softmax(masked_fill(Tensor::zeros({2, 3, 5, 4}), padding_mask(ids, 0), -inf));
  CHECK(cross.at({1, 2, 4, 0}) == Approx(0.5f));
  CHECK(cross.at({1, 2, 4, 3}) == 0.0f);
}

TEST_CASE("scaled dot-product attention equals the loops that define it", "[nn][attention]") {
  Rng rng(4);
  const int64_t b = 2, h = 2, t = 3, s = 4, k = 5;
  const Tensor q = Tensor::randn({b, h, t, k}, rng), key = Tensor::randn({b, h, s, k}, rng),
               v = Tensor::randn({b, h, s, k}, rng);
  const Tensor mask = Tensor::from({b, 1, 1, s}, {0, 0, 0, 1, 0, 0, 1, 1});  // padded keys
  Tensor probs;
  const Tensor out = scaled_dot_product_attention(q, key, v, mask, &probs);
  for (int64_t bi = 0; bi < b; ++bi)
    for (int64_t hi = 0; hi < h; ++hi)
      for (int64_t ti = 0; ti < t; ++ti) {
        double scores[4], total = 0.0, top = -1e30;
        for (int64_t si = 0; si < s; ++si) {
          double dot = 0.0;
          for (int64_t ki = 0; ki < k; ++ki)
            dot += q.at({bi, hi, ti, ki}) * key.at({bi, hi, si, ki});
          scores[si] = mask.at({bi, 0, 0, si}) != 0 ? -1e30 : dot / std::sqrt(double(k));
          top = std::max(top, scores[si]);
        }
        for (int64_t si = 0; si < s; ++si) total += scores[si] = std::exp(scores[si] - top);
        for (int64_t si = 0; si < s; ++si)
          CHECK(probs.at({bi, hi, ti, si}) == Approx(scores[si] / total).margin(1e-6));
        for (int64_t ki = 0; ki < k; ++ki) {
          double expected = 0.0;
          for (int64_t si = 0; si < s; ++si)
            expected += scores[si] / total * v.at({bi, hi, si, ki});
          CHECK(out.at({bi, hi, ti, ki}) == Approx(expected).margin(1e-5));
        }
      }
  CHECK(probs.at({1, 0, 2, 3}) == 0.0f);  // a padded key gets nothing
}

TEST_CASE("multi-head attention: shapes, parameters, recorded probabilities", "[nn][attention]") {
  Rng rng(6);
  MultiHeadAttention attn({.d_model = 16, .heads = 4}, rng);
  CHECK(attn.parameter_count() == 4 * (16 * 16 + 16));  // the same as one full-width head
  attn.record_attention = true;
  const Tensor x = Tensor::randn({2, 5, 16}, rng), memory = Tensor::randn({2, 7, 16}, rng);
  const Tensor y = attn.forward(x, memory);
  CHECK(y.shape() == Shape{2, 5, 16});
  REQUIRE(attn.last_attention.shape() == Shape{2, 4, 5, 7});
  float row = 0.0f;
  for (int j = 0; j < 7; ++j) row += attn.last_attention.at({1, 3, 4, j});
  CHECK(row == Approx(1.0f));
  REQUIRE_THROWS_WITH(MultiHeadAttention({.d_model = 16, .heads = 5}, rng),
                      Contains("heads (5) must be positive and divide d_model (16)"));
  REQUIRE_THROWS_WITH(attn.forward(Tensor::ones({2, 5, 8}), memory),
                      Contains("attention: query [2, 5, 8] and memory [2, 7, 16] must be"));
}
