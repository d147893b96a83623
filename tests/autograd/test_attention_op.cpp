// The fused multi_head_attention op: gradient-checked under every kind of mask, compared with
// the same function composed from readable ops (split_heads, scaled_dot_product_attention,
// merge), and MultiHeadAttention::forward (which runs it) compared with forward_reference.
//
// Shape legend: B batch, H heads, T query length, S key length, D = H K.
#include <catch2/catch.hpp>
#include <cmath>
#include <functional>

#include "autograd/errors.h"
#include "autograd/gradcheck.h"
#include "autograd/graph.h"
#include "autograd/ops.h"
#include "autograd/random.h"
#include "nn/attention.h"

using namespace gf;
using Catch::Matchers::Contains;

namespace {

float inverse_sqrt(int64_t d_k) {
  return 1.0f / std::sqrt(static_cast<float>(d_k));
}

// [B, L, H K] -> [B, H, L, K] and back, as MultiHeadAttention::forward_reference does.
Tensor split(const Tensor& x, int64_t heads) {
  return transpose(reshape(x, {x.dim(0), x.dim(1), heads, x.dim(2) / heads}), 1, 2);
}
Tensor merge(const Tensor& x) {
  return reshape(transpose(x, 1, 2), {x.dim(0), x.dim(2), x.dim(1) * x.dim(3)});
}

// The composed reference, with the same scale the fused op is given (1/sqrt(K)).
Tensor composed(const Tensor& q, const Tensor& k, const Tensor& v, const Tensor& mask,
                int64_t heads, Tensor* probs = nullptr) {
  return merge(nn::scaled_dot_product_attention(split(q, heads), split(k, heads), split(v, heads),
                                                mask, probs));
}

float max_abs_diff(const Tensor& a, const Tensor& b) {
  REQUIRE(a.shape() == b.shape());
  float d = 0.0f;
  for (int64_t i = 0; i < a.numel(); ++i) d = std::max(d, std::abs(a.data()[i] - b.data()[i]));
  return d;
}

// A mask from a row-major list of 0/1 (1 = masked).
Tensor mask_of(const Shape& shape, std::vector<float> values) {
  return Tensor::from(shape, std::move(values));
}

struct MaskCase {
  const char* name;
  int64_t batch, t, s, d, dv, heads;
  Tensor mask;
  int64_t kv_batch = 0;  // 0: the same as batch
};

std::vector<MaskCase> mask_cases() {
  return {
      {"no mask", 2, 3, 3, 4, 4, 2, Tensor()},
      {"padding [B, 1, 1, S]", 2, 3, 4, 4, 4, 2, mask_of({2, 1, 1, 4}, {0, 0, 0, 1, 0, 0, 1, 1})},
      {"look-ahead [1, 1, T, T]", 2, 3, 3, 4, 4, 2, nn::look_ahead_mask(3)},
      {"[B, 1, T, T] with a fully masked row", 2, 3, 3, 4, 4, 2,
       mask_of({2, 1, 3, 3}, {0, 1, 1, 1, 1, 1, 0, 0, 0,  //
                              0, 0, 1, 0, 0, 1, 0, 1, 0})},
      {"S != T, padding", 2, 2, 5, 6, 6, 3, mask_of({2, 1, 1, 5}, {0, 0, 0, 0, 1, 0, 1, 0, 0, 0})},
      {"per-head mask [1, H, T, S]", 1, 2, 3, 4, 4, 2,
       mask_of({1, 2, 2, 3}, {0, 1, 0, 0, 0, 1,  //
                              1, 0, 0, 0, 0, 0})},
      {"v wider than q and k (Dv != D)", 2, 3, 4, 4, 6, 2, Tensor()},
      {"k and v shared by the batch (batch 1)", 3, 2, 4, 4, 4, 2,
       mask_of({1, 1, 1, 4}, {0, 0, 1, 0}), 1},
  };
}

Tensors sample(const MaskCase& c, uint64_t seed) {
  Rng rng(seed);
  const int64_t kv_batch = c.kv_batch == 0 ? c.batch : c.kv_batch;
  return {Tensor::randn({c.batch, c.t, c.d}, rng), Tensor::randn({kv_batch, c.s, c.d}, rng),
          Tensor::randn({kv_batch, c.s, c.dv}, rng)};
}

}  // namespace

TEST_CASE("multi_head_attention passes gradcheck for q, k and v under every mask",
          "[autograd][attention][gradcheck]") {
  for (const MaskCase& c : mask_cases()) {
    DYNAMIC_SECTION(c.name) {
      const float scale = inverse_sqrt(c.d / c.heads);
      const auto f = [&c, scale](const Tensors& x) {
        return multi_head_attention(x[0], x[1], x[2], c.mask, c.heads, scale);
      };
      const Tensors inputs = sample(c, 21);
      const GradcheckResult result = gradcheck(f, inputs);
      INFO(c.name << ": max abs error " << result.max_abs_error << "\n" << result.report);
      CHECK(result.checked == inputs[0].numel() + inputs[1].numel() + inputs[2].numel());
      CHECK(result.ok);
    }
  }
}

TEST_CASE("multi_head_attention equals split_heads + scaled_dot_product_attention + merge",
          "[autograd][attention]") {
  for (const MaskCase& c : mask_cases()) {
    DYNAMIC_SECTION(c.name) {
      Tensors x = sample(c, 5);
      for (Tensor& t : x) t = t * 2.0f;  // far from a uniform softmax
      Tensor q1 = x[0].clone().set_requires_grad(), k1 = x[1].clone().set_requires_grad(),
             v1 = x[2].clone().set_requires_grad();
      Tensor q2 = x[0].clone().set_requires_grad(), k2 = x[1].clone().set_requires_grad(),
             v2 = x[2].clone().set_requires_grad();
      Tensor fused_probs, reference_probs;
      const Tensor fused = multi_head_attention(q1, k1, v1, c.mask, c.heads,
                                                inverse_sqrt(c.d / c.heads), &fused_probs);
      const Tensor reference = composed(q2, k2, v2, c.mask, c.heads, &reference_probs);
      REQUIRE(fused.shape() == Shape{c.batch, c.t, c.dv});
      REQUIRE(fused_probs.shape() == Shape{c.batch, c.heads, c.t, c.s});
      CHECK_FALSE(fused_probs.requires_grad());
      CHECK(max_abs_diff(fused, reference) < 1e-5f);
      CHECK(max_abs_diff(fused_probs, reference_probs) < 1e-5f);
      CHECK(fused.op_name() == "attention");

      Rng rng(9);
      const Tensor seed = Tensor::randn(fused.shape(), rng);
      fused.backward(seed);
      reference.backward(seed);
      CHECK(max_abs_diff(q1.grad(), q2.grad()) < 1e-5f);
      CHECK(max_abs_diff(k1.grad(), k2.grad()) < 1e-5f);
      CHECK(max_abs_diff(v1.grad(), v2.grad()) < 1e-5f);
    }
  }
}

TEST_CASE("multi_head_attention: a fully masked row gives zero weights and output, not NaN",
          "[autograd][attention]") {
  Rng rng(4);
  const Tensor q = Tensor::randn({1, 2, 4}, rng), k = Tensor::randn({1, 3, 4}, rng),
               v = Tensor::randn({1, 3, 4}, rng);
  // Query 0 may see nothing; query 1 sees keys 0 and 2.
  const Tensor mask = Tensor::from({1, 1, 2, 3}, {1, 1, 1, 0, 1, 0});
  Tensor probs;
  const Tensor y = multi_head_attention(q, k, v, mask, 2, 0.5f, &probs);
  for (int64_t h = 0; h < 2; ++h) {
    for (int64_t j = 0; j < 3; ++j) CHECK(probs.at({0, h, 0, j}) == 0.0f);
    CHECK(probs.at({0, h, 1, 1}) == 0.0f);
    CHECK(probs.at({0, h, 1, 0}) + probs.at({0, h, 1, 2}) == Approx(1.0f));
  }
  for (int64_t c = 0; c < 4; ++c) CHECK(y.at({0, 0, c}) == 0.0f);
}

TEST_CASE("multi_head_attention against numbers worked by hand", "[autograd][attention]") {
  // One batch row, two heads of width 1, two keys. Head 0: scores q k^T * scale = [2, 0] * 0.5
  // = [1, 0], weights [e/(e+1), 1/(e+1)] = [0.731059, 0.268941]. Head 1: key 1 masked away.
  const Tensor q = Tensor::from({1, 1, 2}, {2.0f, 1.0f});
  const Tensor k = Tensor::from({1, 2, 2}, {1.0f, 3.0f, 0.0f, -1.0f});
  const Tensor v = Tensor::from({1, 2, 2}, {10.0f, 4.0f, 20.0f, 8.0f});
  const Tensor mask = Tensor::from({1, 2, 1, 2}, {0, 0, 0, 1});
  Tensor probs;
  const Tensor y = multi_head_attention(q, k, v, mask, 2, 0.5f, &probs);
  CHECK(probs.at({0, 0, 0, 0}) == Approx(0.731059f));
  CHECK(probs.at({0, 0, 0, 1}) == Approx(0.268941f));
  CHECK(probs.at({0, 1, 0, 0}) == 1.0f);
  CHECK(probs.at({0, 1, 0, 1}) == 0.0f);
  CHECK(y.at({0, 0, 0}) == Approx(0.731059f * 10 + 0.268941f * 20));  // head 0 in column 0
  CHECK(y.at({0, 0, 1}) == Approx(4.0f));                             // head 1 in column 1
}

TEST_CASE("MultiHeadAttention::forward (fused) matches forward_reference",
          "[autograd][attention][nn]") {
  Rng rng(12);
  nn::MultiHeadAttention attn({.d_model = 16, .heads = 4}, rng);
  const Tensor x = Tensor::randn({2, 5, 16}, rng), memory = Tensor::randn({2, 7, 16}, rng);
  const IndexTensor ids = IndexTensor::from({2, 5}, {3, 4, 5, 6, 7, 3, 4, 5, 0, 0});
  const IndexTensor src = IndexTensor::from({2, 7}, {1, 2, 3, 4, 5, 6, 7, 1, 2, 3, 0, 0, 0, 0});
  struct Case {
    const char* name;
    Tensor memory, mask;
  };
  for (const Case& c : {Case{"self-attention, target mask", x, nn::target_mask(ids, 0)},
                        Case{"cross-attention, padding mask", memory, nn::padding_mask(src, 0)}}) {
    DYNAMIC_SECTION(c.name) {
      Tensor x1 = x.clone().set_requires_grad(), x2 = x.clone().set_requires_grad();
      Tensor m1 = c.memory.clone().set_requires_grad(), m2 = c.memory.clone().set_requires_grad();
      attn.record_attention = true;
      const Tensor fused = attn.forward(x1, m1, c.mask);
      const Tensor fused_probs = attn.last_attention;
      const Tensor reference = attn.forward_reference(x2, m2, c.mask);
      const Tensor reference_probs = attn.last_attention;
      attn.record_attention = false;
      REQUIRE(fused_probs.shape() == Shape{2, 4, 5, c.memory.dim(1)});
      CHECK(max_abs_diff(fused, reference) < 1e-5f);
      CHECK(max_abs_diff(fused_probs, reference_probs) < 1e-5f);

      const Tensor seed = Tensor::randn(fused.shape(), rng);
      attn.zero_grad();
      fused.backward(seed);
      std::vector<Tensor> fused_grads;
      for (const auto& [name, p] : attn.named_parameters()) fused_grads.push_back(p.grad());
      attn.zero_grad();
      reference.backward(seed);
      size_t i = 0;
      for (const auto& [name, p] : attn.named_parameters()) {
        INFO(name);
        CHECK(max_abs_diff(fused_grads[i++], p.grad()) < 1e-5f);
      }
      CHECK(max_abs_diff(x1.grad(), x2.grad()) < 1e-5f);
      CHECK(max_abs_diff(m1.grad(), m2.grad()) < 1e-5f);
      attn.zero_grad();
    }
  }
}

TEST_CASE("multi_head_attention rejects shapes that do not fit, naming them",
          "[autograd][attention]") {
  const Tensor q = Tensor::zeros({2, 3, 8}), k = Tensor::zeros({2, 5, 8}),
               v = Tensor::zeros({2, 5, 8});
  CHECK_THROWS_AS(multi_head_attention(reshape(q, {6, 8}), k, v, {}, 2, 1.0f), ShapeError);
  CHECK_THROWS_WITH(multi_head_attention(reshape(q, {6, 8}), k, v, {}, 2, 1.0f),
                    Contains("multi_head_attention: q [6, 8], k [2, 5, 8], v [2, 5, 8] must be "
                             "[B, T, D], [B, S, D], [B, S, Dv]"));
  CHECK_THROWS_WITH(multi_head_attention(q, Tensor::zeros({2, 5, 6}), v, {}, 2, 1.0f),
                    Contains("(q and k share D, k and v share S)"));
  CHECK_THROWS_WITH(multi_head_attention(q, k, Tensor::zeros({2, 4, 8}), {}, 2, 1.0f),
                    Contains("v [2, 4, 8]"));
  CHECK_THROWS_WITH(
      multi_head_attention(q, Tensor::zeros({3, 5, 8}), Tensor::zeros({3, 5, 8}), {}, 2, 1.0f),
      Contains("the batch sizes of q [2, 3, 8], k [3, 5, 8], v [3, 5, 8] differ"));
  CHECK_THROWS_WITH(multi_head_attention(q, k, v, {}, 3, 1.0f),
                    Contains("3 heads must be positive and divide the widths of q [2, 3, 8]"));
  CHECK_THROWS_WITH(multi_head_attention(q, k, Tensor::zeros({2, 5, 6}), {}, 4, 1.0f),
                    Contains("4 heads must be positive"));
  CHECK_THROWS_WITH(multi_head_attention(q, k, v, {}, 0, 1.0f), Contains("0 heads"));
  CHECK_THROWS_WITH(
      multi_head_attention(q, k, v, Tensor::zeros({2, 1, 1, 3}), 2, 1.0f),
      Contains("multi_head_attention: mask [2, 1, 1, 3] does not broadcast to the scores "
               "[2, 2, 3, 5] ([B, H, T, S])"));
  CHECK_THROWS_WITH(multi_head_attention(q, k, v, Tensor::zeros({1, 2, 1, 3, 5}), 2, 1.0f),
                    Contains("mask [1, 2, 1, 3, 5] does not broadcast"));
  // Broadcastable masks of lower rank are accepted: [T, S] and [S].
  CHECK(multi_head_attention(q, k, v, Tensor::zeros({3, 5}), 2, 1.0f).shape() == Shape{2, 3, 8});
  CHECK(multi_head_attention(q, k, v, Tensor::zeros({5}), 2, 1.0f).shape() == Shape{2, 3, 8});
}

TEST_CASE("multi_head_attention gives the same bits run after run", "[autograd][attention]") {
  // Big enough (B H = 64 pairs) that the pairs are split across threads when there are several.
  Rng rng(30);
  const Tensor q = Tensor::randn({16, 12, 32}, rng), k = Tensor::randn({16, 12, 32}, rng),
               v = Tensor::randn({16, 12, 32}, rng);
  const Tensor mask = nn::look_ahead_mask(12);
  const auto run = [&] {
    Tensor q1 = q.clone().set_requires_grad(), k1 = k.clone().set_requires_grad(),
           v1 = v.clone().set_requires_grad();
    Tensor y = multi_head_attention(q1, k1, v1, mask, 4, 0.25f);
    Rng seed_rng(2);
    y.backward(Tensor::randn(y.shape(), seed_rng));
    return std::vector<std::vector<float>>{y.to_vector(), q1.grad().to_vector(),
                                           k1.grad().to_vector(), v1.grad().to_vector()};
  };
  CHECK(run() == run());  // exact equality, not approximate
}

TEST_CASE("editing the kept attention weights leaves the gradients alone",
          "[autograd][attention][nn]") {
  Rng rng(21);
  nn::MultiHeadAttention attn({.d_model = 8, .heads = 2}, rng);
  const Tensor x = Tensor::randn({2, 3, 8}, rng), seed = Tensor::randn({2, 3, 8}, rng);
  for (const bool fused : {true, false}) {
    DYNAMIC_SECTION((fused ? "forward (fused)" : "forward_reference")) {
      // The gradients of the input and every parameter, after a heatmap was (or was not)
      // scribbled on between forward and backward, as a training loop that draws might.
      const auto gradients = [&](bool scribble) {
        attn.zero_grad();
        Tensor input = x.clone().set_requires_grad();
        attn.record_attention = true;
        const Tensor y = fused ? attn.forward(input, input) : attn.forward_reference(input, input);
        attn.record_attention = false;
        if (scribble) {
          float* weights = attn.last_attention.data();
          for (int64_t i = 0; i < attn.last_attention.numel(); ++i) weights[i] = 0.5f;
        }
        y.backward(seed);
        std::vector<Tensor> grads{input.grad()};
        for (const auto& [name, p] : attn.named_parameters()) grads.push_back(p.grad());
        return grads;
      };
      const std::vector<Tensor> clean = gradients(false), scribbled = gradients(true);
      REQUIRE(clean.size() == scribbled.size());
      for (size_t i = 0; i < clean.size(); ++i) {
        INFO("gradient " << i);
        CHECK(max_abs_diff(clean[i], scribbled[i]) == 0.0f);
      }
    }
  }
}
