// Weights worth keeping from a run besides its last ones: the best-scoring so far, and the
// mean of the last few checkpoints. Vaswani et al. (§6.1) report their base models as "a
// single model obtained by averaging the last 5 checkpoints": the mean of weights from nearby
// steps lies nearer the middle of the valley the optimizer is bouncing around in than any one
// of them, and it costs nothing at translation time.
#pragma once

#include <cstdint>

#include "nn/module.h"

namespace gf::training {

// A copy of a model's weights, by parameter name.
nn::NamedTensors copy_weights(const nn::Module& model);
// Puts weights (from copy_weights of a model of the same configuration) into model, with the
// checks of nn::load_checkpoint: a FormatError "checkpoint: weights kept in memory: ..." when a
// name or shape differs, and the model unchanged.
void load_weights(nn::Module& model, const nn::NamedTensors& weights);

// The running mean of the weights it is given.
class WeightAverage {
 public:
  void add(const nn::Module& model);
  int64_t count() const { return count_; }
  // The mean of the count() weights added; empty when none were.
  const nn::NamedTensors& mean() const { return mean_; }

 private:
  nn::NamedTensors mean_;
  int64_t count_ = 0;
};

// The weights of the step with the highest score seen so far (the later one on a tie, which
// has trained longer).
class BestWeights {
 public:
  // Copies model's weights when score >= the best so far.
  void offer(int64_t step, double score, const nn::Module& model);
  bool empty() const { return step_ == 0; }
  int64_t step() const { return step_; }
  double score() const { return score_; }
  const nn::NamedTensors& weights() const { return weights_; }

 private:
  nn::NamedTensors weights_;
  int64_t step_ = 0;
  double score_ = 0.0;
};

}  // namespace gf::training
