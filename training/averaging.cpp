#include "training/averaging.h"

#include "nn/checkpoint.h"

namespace gf::training {

nn::NamedTensors copy_weights(const nn::Module& model) {
  nn::NamedTensors copy;
  for (const auto& [name, parameter] : model.named_parameters())
    copy.emplace_back(name, parameter.clone());
  return copy;
}

void load_weights(nn::Module& model, const nn::NamedTensors& weights) {
  nn::load_checkpoint({.tensors = weights, .metadata = {}}, "weights kept in memory", model);
}

// mean += (x - mean) / n: each weight's mean after n models, without a sum that could grow.
void WeightAverage::add(const nn::Module& model) {
  ++count_;
  if (count_ == 1) {
    mean_ = copy_weights(model);
    return;
  }
  const nn::NamedTensors parameters = model.named_parameters();
  const float n = static_cast<float>(count_);
  for (size_t i = 0; i < parameters.size(); ++i) {
    const float* x = parameters[i].second.data();
    float* mean = mean_[i].second.data();
    for (int64_t j = 0; j < mean_[i].second.numel(); ++j) mean[j] += (x[j] - mean[j]) / n;
  }
}

void BestWeights::offer(int64_t step, double score, const nn::Module& model) {
  if (!empty() && score < score_) return;
  weights_ = copy_weights(model);
  step_ = step;
  score_ = score;
}

}  // namespace gf::training
