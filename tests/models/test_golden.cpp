// Our Transformer against PyTorch. tests/reference/make_golden.py builds the same tiny model in
// PyTorch, runs one teacher-forced step with label smoothing and padding, and saves weights,
// inputs, log-probabilities, loss and every parameter's gradient (tests/golden/). Here we load
// those weights into our model, run the same step, and compare every number.
#include <catch2/catch.hpp>
#include <cmath>
#include <map>

#include "autograd/ops.h"
#include "models/transformer.h"
#include "nn/safetensors.h"

using namespace gf;

namespace {

IndexTensor ids_of(const Tensor& t) {  // the script stores ids as floats
  std::vector<int32_t> ids;
  for (float v : t.to_vector()) ids.push_back(static_cast<int32_t>(v));
  return IndexTensor::from(t.shape(), ids);
}

// The largest |ours - theirs| over a tensor, after checking the shapes agree.
double max_error(const Tensor& ours, const Tensor& theirs) {
  REQUIRE(ours.shape() == theirs.shape());
  double worst = 0.0;
  for (int64_t i = 0; i < ours.numel(); ++i)
    worst = std::max(worst, std::abs(double(ours.data()[i]) - double(theirs.data()[i])));
  return worst;
}

void check_against_pytorch(const std::string& file) {
  const std::string path = std::string(GRADFORMER_SOURCE_DIR) + "/tests/golden/" + file;
  const nn::SafetensorsFile golden = nn::load_safetensors(path);
  std::map<std::string, Tensor> by_name(golden.tensors.begin(), golden.tensors.end());
  const TransformerConfig config = TransformerConfig::from_metadata(golden.metadata, path);
  Rng rng(0);
  Transformer model(config, rng);
  for (auto& [name, parameter] : model.named_parameters()) {
    INFO("parameter " << name);
    REQUIRE(by_name.count(name) == 1);
    REQUIRE(parameter.shape() == by_name.at(name).shape());
    std::copy_n(by_name.at(name).data(), parameter.numel(), parameter.data());
  }

  const Tensor logits =
      model.forward(ids_of(by_name.at("input.src")), ids_of(by_name.at("input.tgt_in")));
  const Tensor loss = cross_entropy(logits, ids_of(by_name.at("input.tgt_out")),
                                    {.ignore_index = config.pad_id, .label_smoothing = 0.1f});
  // Tolerances: the weights are O(0.5) and everything runs in float32, so the two differ only
  // in summation order (GEMM blocking, vectorised reductions). Measured: log-probabilities
  // within 5e-7, the loss to 1 part in 1e7, gradients within 5e-8; the bounds leave ~10x room.
  CHECK(max_error(log_softmax(logits), by_name.at("output.log_probs")) < 5e-6);
  CHECK(loss.item() == Approx(by_name.at("output.loss").item()).epsilon(1e-6));
  loss.backward();
  int compared = 0;
  for (auto& [name, parameter] : model.named_parameters()) {
    const Tensor& expected = by_name.at("grad." + name);
    double scale = 0.0;
    for (float v : expected.to_vector()) scale = std::max(scale, double(std::abs(v)));
    INFO("gradient of " << name << ", largest entry " << scale);
    CHECK(max_error(parameter.grad(), expected) <= 5e-7 + 1e-5 * scale);
    ++compared;
  }
  CHECK(compared == static_cast<int>(model.named_parameters().size()));
}

}  // namespace

TEST_CASE("matches PyTorch: post-norm, tied embeddings", "[models][golden]") {
  check_against_pytorch("transformer_post_norm_tied.safetensors");
}

TEST_CASE("matches PyTorch: pre-norm, separate embeddings and generator", "[models][golden]") {
  check_against_pytorch("transformer_pre_norm_untied.safetensors");
}
