// Our Transformer against PyTorch. tests/reference/make_golden.py builds the same tiny model in
// PyTorch, runs one teacher-forced step with padding, and saves weights, inputs,
// log-probabilities, loss and every parameter's gradient (tests/golden/). Here we load those
// weights into our model, run the same step, and compare every number. The encoder-decoder
// files use label smoothing 0.1, the decoder-only ones none (the script says why).
#include <algorithm>
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

void check_against_pytorch(const std::string& file, float label_smoothing) {
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
  // ...and the other way round: every tensor of the file that is not an input, an output or a
  // gradient is one of our parameters, so a module one side has and the other lacks (say a
  // decoder-only model's cross-attention) cannot go unnoticed.
  const auto stored_parameters = std::count_if(by_name.begin(), by_name.end(), [](const auto& t) {
    return !t.first.starts_with("input.") && !t.first.starts_with("output.") &&
           !t.first.starts_with("grad.");
  });
  CHECK(stored_parameters == static_cast<int64_t>(model.named_parameters().size()));

  // A decoder-only file holds one sequence per row and its next tokens; an encoder-decoder's a
  // source, the decoder's input and its targets.
  const bool decoder_only = config.decoder_only();
  const IndexTensor tgt_in = ids_of(by_name.at(decoder_only ? "input.tokens" : "input.tgt_in"));
  const IndexTensor targets = ids_of(by_name.at(decoder_only ? "input.targets" : "input.tgt_out"));
  const Tensor logits =
      decoder_only ? model.forward(tgt_in) : model.forward(ids_of(by_name.at("input.src")), tgt_in);
  if (decoder_only) {
    // The two-argument entry point with an empty source must be the same computation, to the
    // bit, so that callers written for either kind of model get these numbers too.
    const IndexTensor no_source = IndexTensor::from({tgt_in.shape()[0], 0}, {});
    CHECK(max_error(model.forward(no_source, tgt_in), logits) == 0.0);
  }
  const Tensor loss = cross_entropy(
      logits, targets, {.ignore_index = config.pad_id, .label_smoothing = label_smoothing});
  // Tolerances: the weights are O(0.5) and everything runs in float32, so the two differ only
  // in summation order (GEMM blocking, vectorised reductions). Measured, for both kinds of
  // model: log-probabilities within 5e-7, the loss to 1 part in 1e7, gradients within 6e-8;
  // the bounds leave ~10x room.
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
  check_against_pytorch("transformer_post_norm_tied.safetensors", 0.1f);
}

TEST_CASE("matches PyTorch: pre-norm, separate embeddings and generator", "[models][golden]") {
  check_against_pytorch("transformer_pre_norm_untied.safetensors", 0.1f);
}

TEST_CASE("matches PyTorch: decoder-only, pre-norm, tied embeddings", "[models][golden]") {
  check_against_pytorch("decoder_only_pre_norm_tied.safetensors", 0.0f);
}

TEST_CASE("matches PyTorch: decoder-only, post-norm, untied, learned positions",
          "[models][golden]") {
  check_against_pytorch("decoder_only_post_norm_untied_learned.safetensors", 0.0f);
}
