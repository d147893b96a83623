// Every differentiable op, one row each, checked against finite differences. Adding an op
// means adding a row here; two tests below fail when an op exists that has no row.
#include <algorithm>
#include <catch2/catch.hpp>
#include <filesystem>
#include <fstream>
#include <set>
#include <sstream>

#include "autograd/gradcheck.h"
#include "autograd/graph.h"
#include "autograd/ops.h"
#include "autograd/random.h"

using namespace gf;

namespace {

// Where inputs are drawn from: away from kinks (relu at 0), poles (log, div at 0) and
// ties (max), so that finite differences measure the derivative that backward computes.
enum class Domain { Any, Positive, AwayFromZero, Distinct };

struct OpCase {
  std::string name;  // the op name record() uses, or a composite's own name
  std::function<Tensor(const Tensors&)> f;
  std::vector<Shape> shapes;
  Domain domain = Domain::Any;
  GradcheckOptions options = {};

  Tensors sample_inputs(uint64_t seed) const {
    Rng rng(seed);
    Tensors xs;
    for (const Shape& s : shapes) {
      Tensor x = Tensor::uniform(s, rng, -2.0f, 2.0f);
      float* p = x.data();
      for (int64_t i = 0; i < x.numel(); ++i) {
        if (domain == Domain::Positive) p[i] = 0.5f + std::abs(p[i]);
        if (domain == Domain::AwayFromZero) p[i] = p[i] < 0 ? p[i] - 0.2f : p[i] + 0.2f;
      }
      if (domain == Domain::Distinct) {  // a shuffled ladder with steps of 0.25
        std::vector<float> ladder(static_cast<size_t>(x.numel()));
        for (size_t i = 0; i < ladder.size(); ++i) ladder[i] = 0.25f * static_cast<float>(i) - 1.0f;
        for (size_t i = ladder.size(); i > 1; --i)
          std::swap(ladder[i - 1], ladder[static_cast<size_t>(rng.below(static_cast<int64_t>(i)))]);
        std::copy(ladder.begin(), ladder.end(), p);
      }
      xs.push_back(x);
    }
    return xs;
  }
};

const IndexTensor kIds = IndexTensor::from({2, 3}, {4, 0, 4, 2, 1, 3});      // repeats 4
const IndexTensor kTargets = IndexTensor::from({2, 3}, {1, 0, 4, 2, 0, 3});  // 0 = pad
Tensor causal_mask() {  // 1 above the diagonal: position i may not look at j > i
  return Tensor::from({3, 3}, {0, 1, 1, 0, 0, 1, 0, 0, 0});
}

const std::vector<OpCase> op_cases = {
    // element-wise, with broadcasting in both directions
    {"add", [](const Tensors& x) { return x[0] + x[1]; }, {{2, 3}, {3}}},
    {"sub", [](const Tensors& x) { return x[0] - x[1]; }, {{2, 1, 3}, {4, 1}}},
    {"mul", [](const Tensors& x) { return x[0] * x[1]; }, {{2, 3}, {2, 1}}},
    {"div", [](const Tensors& x) { return x[0] / x[1]; }, {{2, 3}, {3}}, Domain::Positive},
    {"neg", [](const Tensors& x) { return -x[0]; }, {{2, 3}}},
    {"add_scalar", [](const Tensors& x) { return x[0] + 1.5f; }, {{2, 3}}},
    {"mul_scalar", [](const Tensors& x) { return 2.5f * x[0]; }, {{2, 3}}},
    {"exp", [](const Tensors& x) { return exp(x[0]); }, {{2, 3}}},
    {"log", [](const Tensors& x) { return log(x[0]); }, {{2, 3}}, Domain::Positive},
    {"sqrt", [](const Tensors& x) { return sqrt(x[0]); }, {{2, 3}}, Domain::Positive},
    {"pow",
     [](const Tensors& x) { return pow(x[0], 3.0f) + pow(x[0], -0.5f); },
     {{2, 3}},
     Domain::Positive},
    {"relu", [](const Tensors& x) { return relu(x[0]); }, {{3, 4}}, Domain::AwayFromZero},
    {"tanh", [](const Tensors& x) { return tanh(x[0]); }, {{2, 3}}},
    {"sigmoid", [](const Tensors& x) { return sigmoid(x[0]); }, {{2, 3}}},
    {"sum_to",
     [](const Tensors& x) {
       return sum_to(x[0], {3, 1});
     },
     {{2, 3, 4}}},
    {"expand",
     [](const Tensors& x) {
       return expand(x[0], {2, 3, 4});
     },
     {{3, 1}}},
    // reductions
    {"sum",
     [](const Tensors& x) { return sum(x[0], 1, true) + sum(x[0], 0) + sum(x[0]); },
     {{3, 4}}},
    {"mean", [](const Tensors& x) { return mean(x[0], -1, true) + mean(x[0]); }, {{2, 3, 4}}},
    {"max",
     [](const Tensors& x) { return max(x[0], 1, true) + max(x[0], 0); },
     {{3, 4}},
     Domain::Distinct},
    // matrix products: 2-D, a batch against a shared matrix, and broadcast batch dimensions
    {"matmul", [](const Tensors& x) { return matmul(x[0], x[1]); }, {{3, 4}, {4, 5}}},
    {"matmul (shared B)", [](const Tensors& x) { return matmul(x[0], x[1]); }, {{2, 3, 4}, {4, 5}}},
    {"matmul (broadcast)",
     [](const Tensors& x) { return matmul(x[0], x[1]); },
     {{2, 1, 3, 4}, {3, 4, 2}}},
    {"linear", [](const Tensors& x) { return linear(x[0], x[1], x[2]); }, {{2, 3, 4}, {5, 4}, {5}}},
    {"linear (no bias)", [](const Tensors& x) { return linear(x[0], x[1]); }, {{3, 4}, {2, 4}}},
    // shapes
    {"reshape",
     [](const Tensors& x) {
       return reshape(x[0], {4, -1}) * x[1];
     },
     {{2, 3, 2}, {4, 3}}},
    {"permute",
     [](const Tensors& x) {
       return permute(x[0], {2, 0, 1});
     },
     {{2, 3, 4}}},
    {"transpose", [](const Tensors& x) { return transpose(x[0], 0, -1); }, {{2, 3, 4}}},
    {"slice", [](const Tensors& x) { return slice(x[0], 1, 1, 3); }, {{2, 4, 3}}},
    {"concat",
     [](const Tensors& x) {
       return concat({x[0], x[1], x[0]}, 1);
     },
     {{2, 1, 3}, {2, 2, 3}}},
    // indexing and masking
    {"embedding", [](const Tensors& x) { return embedding(x[0], kIds); }, {{5, 4}}},
    {"masked_fill",
     [](const Tensors& x) { return masked_fill(x[0], causal_mask(), -7.0f); },
     {{2, 3, 3}}},
    {"where",
     [](const Tensors& x) {
       return where(Tensor::from({3}, {1, 0, 1}), x[0], x[1]);
     },
     {{2, 3}, {2, 1}}},
    {"dropout",
     [](const Tensors& x) {
       Rng rng(3);  // a fresh generator per call: the same mask every evaluation
       return dropout(x[0], 0.3f, rng);
     },
     {{4, 5}}},
    // fused
    {"softmax", [](const Tensors& x) { return softmax(x[0]); }, {{3, 5}}},
    {"log_softmax", [](const Tensors& x) { return log_softmax(x[0]); }, {{3, 5}}},
    {"layer_norm",
     [](const Tensors& x) { return layer_norm(x[0], x[1], x[2]); },
     {{2, 3, 6}, {6}, {6}}},
    {"cross_entropy",
     [](const Tensors& x) {
       return cross_entropy(x[0], kTargets, {.ignore_index = 0, .label_smoothing = 0.1f});
     },
     {{2, 3, 5}}},
    {"attention",
     [](const Tensors& x) {
       return multi_head_attention(x[0], x[1], x[2], causal_mask(), /*heads=*/2, 0.5f);
     },
     {{2, 3, 4}, {2, 3, 4}, {2, 3, 4}}},
    // H = 2, the second row ending after two of its three steps
    {"gru",
     [](const Tensors& x) {
       return gru(x[0], x[1], x[2], x[3], {3, 2});
     },
     {{2, 3, 6}, {2, 2}, {6, 2}, {6}}},
};

// The string literals in calls of the form record(y, "name", ...) in a source text.
std::vector<std::string> recorded_names_in(const std::string& source) {
  std::vector<std::string> names;
  for (size_t at = source.find("record("); at != std::string::npos;
       at = source.find("record(", at + 1)) {
    const size_t comma = source.find(',', at);
    const size_t open = source.find_first_not_of(' ', comma + 1);
    if (comma == std::string::npos || open == std::string::npos || source[open] != '"') continue;
    const size_t close = source.find('"', open + 1);
    names.push_back(source.substr(open + 1, close - open - 1));
  }
  return names;
}

std::set<std::string> row_names() {
  std::set<std::string> names;
  for (const OpCase& c : op_cases) names.insert(c.name.substr(0, c.name.find(' ')));
  return names;
}

}  // namespace

TEST_CASE("every op passes gradcheck", "[autograd][gradcheck]") {
  for (const OpCase& c : op_cases) {
    DYNAMIC_SECTION(c.name) {
      const GradcheckResult result = gradcheck(c.f, c.sample_inputs(/*seed=*/11), c.options);
      INFO(c.name << ": max abs error " << result.max_abs_error << "\n" << result.report);
      CHECK(result.checked > 0);
      CHECK(result.ok);
    }
  }
}

TEST_CASE("gradcheck catches a wrong backward", "[autograd][gradcheck]") {
  // y = x^2 recorded with the gradient x instead of 2x: gradcheck must fail and say where.
  auto wrong_square = [](const Tensors& x) {
    Tensor y = x[0].detach() * x[0].detach();
    record(y, "wrong_square", {x[0]},
           [x0 = x[0]](const Tensor& grad_y) { return Grads{grad_y * x0}; });
    return y;
  };
  const GradcheckResult result = gradcheck(wrong_square, {Tensor::from({2}, {1.0f, -3.0f})});
  CHECK_FALSE(result.ok);
  CHECK_THAT(result.report, Catch::Matchers::Contains("input 0 [2] at [0]"));
  CHECK(result.max_abs_error > 0.5);
}

// Static coverage: every op name passed to record() anywhere in autograd/ has a row.
TEST_CASE("every recorded op name in the sources has a gradcheck row", "[autograd][gradcheck]") {
  const std::set<std::string> rows = row_names();
  int found = 0;
  for (const auto& entry : std::filesystem::recursive_directory_iterator(
           std::string(GRADFORMER_SOURCE_DIR) + "/autograd")) {
    if (entry.path().extension() != ".cpp") continue;
    std::ifstream file(entry.path());
    std::stringstream text;
    text << file.rdbuf();
    const std::string source = text.str();
    for (const std::string& op : recorded_names_in(source)) {
      INFO("op \"" << op << "\" in " << entry.path().filename().string());
      CHECK(rows.count(op) == 1);
      ++found;
    }
  }
  CHECK(found >= 30);  // the scan itself works
}

// Dynamic coverage: a small attention-and-classifier step, built only from library ops;
// every op its tape records must have a row.
TEST_CASE("every op recorded by a small model step has a gradcheck row", "[autograd][gradcheck]") {
  Rng rng(5);
  Tensor embed = Tensor::randn({7, 8}, rng, 0.5f).set_requires_grad();
  Tensor wq = Tensor::randn({8, 8}, rng, 0.3f).set_requires_grad();
  Tensor wk = Tensor::randn({8, 8}, rng, 0.3f).set_requires_grad();
  Tensor gain = Tensor::ones({8}).set_requires_grad();
  Tensor shift = Tensor::zeros({8}).set_requires_grad();
  const IndexTensor ids = IndexTensor::from({2, 3}, {1, 2, 3, 4, 5, 0});
  Tensor x = layer_norm(embedding(embed, ids), gain, shift);  // [2, 3, 8]
  Tensor q = reshape(matmul(x, wq), {2, 3, 2, 4});            // two heads of 4
  Tensor k = reshape(matmul(x, wk), {2, 3, 2, 4});
  Tensor scores = matmul(transpose(q, 1, 2), permute(k, {0, 2, 3, 1})) / 2.0f;  // [2, 2, 3, 3]
  Tensor probs = dropout(softmax(masked_fill(scores, causal_mask(), -1e9f)), 0.1f, rng);
  Tensor mixed = reshape(transpose(matmul(probs, transpose(q, 1, 2)), 1, 2), {2, 3, 8});
  Tensor h = concat({relu(slice(mixed, 2, 0, 4)), tanh(slice(mixed, 2, 4, 8))}, 2);
  Tensor logits = matmul(h + x, transpose(embed, 0, 1));  // tied output projection
  Tensor loss = cross_entropy(logits, ids, {.ignore_index = 0, .label_smoothing = 0.1f}) +
                mean(sigmoid(sum(exp(log_softmax(logits)), -1)));
  const std::set<std::string> rows = row_names();
  const std::vector<std::string> recorded = recorded_ops(loss);
  CHECK(recorded.size() >= 15);
  for (const std::string& op : recorded) {
    INFO("op \"" << op << "\" was recorded but has no gradcheck row");
    CHECK(rows.count(op) == 1);
  }
  loss.backward();
  CHECK(embed.grad().defined());
  CHECK(gain.grad().defined());
}

TEST_CASE("gradcheck leaves the caller's tensors unchanged", "[autograd][gradcheck]") {
  const Tensor x = Tensor::from({2}, {1.0f, 2.0f});
  gradcheck([](const Tensors& v) { return exp(v[0]); }, {x});
  CHECK(x.to_vector() == std::vector<float>{1.0f, 2.0f});
  CHECK_FALSE(x.requires_grad());
}
