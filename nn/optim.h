// Optimizers and gradient clipping. Each optimizer holds handles to the parameters it
// updates (the same storage the layers read) and updates them in place from their grad().
//
// Adam (Kingma and Ba 2015) with the paper's settings (§5.3: beta1 = 0.9, beta2 = 0.98,
// eps = 1e-9), computed as PyTorch does:
//   m <- beta1 m + (1 - beta1) g          v <- beta2 v + (1 - beta2) g^2
//   p <- p - lr / (1 - beta1^t) * m / (sqrt(v) / sqrt(1 - beta2^t) + eps)
// The two (1 - beta^t) factors undo the bias of m and v towards their zero start.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "autograd/tensor.h"
#include "nn/module.h"

namespace gf::nn {

struct AdamConfig {
  float lr = 1e-3f;
  float beta1 = 0.9f;
  float beta2 = 0.98f;
  float eps = 1e-9f;
};

class Adam {
 public:
  Adam(std::vector<Tensor> parameters, const AdamConfig& config = {});
  void step();       // one update from the current gradients; parameters without one are skipped
  void zero_grad();  // forgets every parameter's gradient
  void set_lr(float lr) { config_.lr = lr; }
  float lr() const { return config_.lr; }
  int64_t steps() const { return step_; }

  // What a resumed run needs to continue exactly: the moments, one per parameter in the
  // constructor's order, and the step count t of the bias corrections.
  const std::vector<Tensor>& first_moments() const { return m_; }
  const std::vector<Tensor>& second_moments() const { return v_; }
  // Copies saved moments in and sets t. Checks the counts and every shape before changing
  // anything; throws std::invalid_argument naming the first mismatch.
  void restore(int64_t steps, const std::vector<Tensor>& m, const std::vector<Tensor>& v);

 private:
  std::vector<Tensor> parameters_;
  std::vector<Tensor> m_, v_;  // first and second moment estimates, one per parameter
  AdamConfig config_;
  int64_t step_ = 0;
};

struct SgdConfig {
  float lr = 0.1f;
  float momentum = 0.0f;  // v <- momentum v + g; p <- p - lr v (PyTorch's form)
};

class Sgd {
 public:
  Sgd(std::vector<Tensor> parameters, const SgdConfig& config = {});
  void step();
  void zero_grad();
  void set_lr(float lr) { config_.lr = lr; }
  float lr() const { return config_.lr; }

  // The momentum buffers, one per parameter, and their restoration (checked as Adam's).
  const std::vector<Tensor>& velocities() const { return velocity_; }
  void restore(const std::vector<Tensor>& velocity);

 private:
  std::vector<Tensor> parameters_;
  std::vector<Tensor> velocity_;
  SgdConfig config_;
};

// Adam or SGD behind one face, over named parameters, with each buffer named after its
// parameter ("adam.m.encoder.layers.0.ffn.linear1.weight"): what a training loop holds, and
// what a resumed run saves and restores.
class Optimizer {
 public:
  Optimizer(NamedTensors parameters, const AdamConfig& config);
  Optimizer(NamedTensors parameters, const SgdConfig& config);

  void step(float lr);  // one update at this learning rate
  void zero_grad();
  const NamedTensors& named_parameters() const { return named_; }
  const std::vector<Tensor>& parameters() const { return parameters_; }

  // Adam's step count t (0 for SGD, which has none) and the buffers by name: "adam.m.NAME"
  // and "adam.v.NAME", or "sgd.velocity.NAME".
  int64_t steps() const { return adam_ ? adam_->steps() : 0; }
  NamedTensors buffers() const;
  // Copies saved buffers in. Checks every name and shape first; throws std::invalid_argument
  // naming the first buffer missing or of the wrong shape, changing nothing.
  void restore(int64_t steps, const NamedTensors& buffers);

 private:
  std::vector<Tensor> find(const NamedTensors& buffers, const std::string& prefix) const;

  NamedTensors named_;
  std::vector<Tensor> parameters_;  // named_'s tensors, in the same order
  std::optional<Adam> adam_;
  std::optional<Sgd> sgd_;
};

// Scales all gradients together so that their joint L2 norm is at most max_norm (Pascanu et
// al. 2013). Returns the norm before clipping, which training loops print.
float clip_grad_norm(const std::vector<Tensor>& parameters, float max_norm);

// What a training loop checks before an update, so that one bad batch cannot spoil the
// weights: the first parameter whose gradient holds a nan or an inf, as
// "the gradient of decoder.layers.0.ffn.linear1.weight has inf"; nothing when all are finite.
// A plain scan, about the cost of one optimizer update.
std::optional<std::string> find_non_finite_gradient(const NamedTensors& parameters);
// The same for the parameters' own values ("encoder.norm.weight has nan"), after an update.
std::optional<std::string> find_non_finite_value(const NamedTensors& parameters);

// The learning rate of §5.3 (eq. 3), with a factor as in common implementations:
//   lr(step) = factor * d_model^-0.5 * min(step^-0.5, step * warmup^-1.5)
// It rises linearly for `warmup` steps, peaks at step = warmup, then decays as step^-0.5.
// step counts from 1.
float noam_lr(int64_t step, int64_t d_model, int64_t warmup, float factor = 1.0f);

// Warm-up, then half a cosine down to zero: the rate rises linearly to peak over `warmup`
// steps, as in §5.3, then falls as
//   lr(step) = peak * (1 + cos(pi * (step - warmup) / (total - warmup + 1))) / 2
// so that the last step, `total`, still takes a small step. Not the paper's schedule: with a
// fixed number of steps, ending at a rate near zero settles the weights where inverse square
// root decay would leave them moving (Loshchilov and Hutter 2017, "SGDR"). step counts from 1;
// warmup < total.
float cosine_lr(int64_t step, int64_t warmup, int64_t total, float peak);

}  // namespace gf::nn
