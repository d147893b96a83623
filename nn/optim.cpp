#include "nn/optim.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <numbers>
#include <stdexcept>

#include "autograd/kernels/parallel.h"

namespace gf::nn {

namespace {

// Saved optimizer buffers must match the parameters one for one, shape for shape.
void check_buffers(const char* what, const std::vector<Tensor>& parameters,
                   const std::vector<Tensor>& saved) {
  if (saved.size() != parameters.size())
    throw std::invalid_argument(fmt::format("{}: {} saved buffers for {} parameters", what,
                                            saved.size(), parameters.size()));
  for (size_t i = 0; i < saved.size(); ++i)
    if (!saved[i].defined() || !(saved[i].shape() == parameters[i].shape()))
      throw std::invalid_argument(
          fmt::format("{}: saved buffer {} has shape {} but its parameter has {}", what, i,
                      saved[i].defined() ? fmt::format("{}", saved[i].shape()) : "none",
                      parameters[i].shape()));
}

void copy_into(const std::vector<Tensor>& from, std::vector<Tensor>& to) {
  for (size_t i = 0; i < from.size(); ++i)
    std::copy_n(from[i].data(), from[i].numel(), to[i].data());
}

}  // namespace

Adam::Adam(std::vector<Tensor> parameters, const AdamConfig& config)
    : parameters_(std::move(parameters)), config_(config) {
  if (!(config.beta1 >= 0.0f && config.beta1 < 1.0f && config.beta2 >= 0.0f &&
        config.beta2 < 1.0f && config.eps >= 0.0f))
    throw std::invalid_argument(
        fmt::format("Adam: betas must be in [0, 1) and eps >= 0 (got beta1 {}, beta2 {}, eps {})",
                    config.beta1, config.beta2, config.eps));
  for (const Tensor& p : parameters_) {
    m_.push_back(Tensor::zeros(p.shape()));
    v_.push_back(Tensor::zeros(p.shape()));
  }
}

void Adam::step() {
  ++step_;
  const double t = static_cast<double>(step_);
  const auto correction1 = static_cast<float>(1.0 - std::pow(config_.beta1, t));
  const auto sqrt_correction2 = static_cast<float>(std::sqrt(1.0 - std::pow(config_.beta2, t)));
  const float step_size = config_.lr / correction1;
  const float b1 = config_.beta1, b2 = config_.beta2, eps = config_.eps;
  for (size_t i = 0; i < parameters_.size(); ++i) {
    Tensor& p = parameters_[i];
    const Tensor grad = p.grad();
    if (!grad.defined()) continue;
    float* __restrict w = p.data();
    float* __restrict m = m_[i].data();
    float* __restrict v = v_[i].data();
    const float* __restrict g = grad.data();
    // Each element on its own: any split between threads gives the same bits.
    kernels::parallel_for(p.numel(), 16, [&](int64_t begin, int64_t end) {
      for (int64_t j = begin; j < end; ++j) {
        m[j] = b1 * m[j] + (1.0f - b1) * g[j];
        v[j] = b2 * v[j] + (1.0f - b2) * g[j] * g[j];
        w[j] -= step_size * m[j] / (std::sqrt(v[j]) / sqrt_correction2 + eps);
      }
    });
  }
}

void Adam::restore(int64_t steps, const std::vector<Tensor>& m, const std::vector<Tensor>& v) {
  if (steps < 0) throw std::invalid_argument(fmt::format("Adam: step count {} is negative", steps));
  check_buffers("Adam first moments", parameters_, m);
  check_buffers("Adam second moments", parameters_, v);
  copy_into(m, m_);
  copy_into(v, v_);
  step_ = steps;
}

void Adam::zero_grad() {
  for (Tensor& p : parameters_) p.zero_grad();
}

Sgd::Sgd(std::vector<Tensor> parameters, const SgdConfig& config)
    : parameters_(std::move(parameters)), config_(config) {
  for (const Tensor& p : parameters_) velocity_.push_back(Tensor::zeros(p.shape()));
}

void Sgd::step() {
  for (size_t i = 0; i < parameters_.size(); ++i) {
    Tensor& p = parameters_[i];
    const Tensor grad = p.grad();
    if (!grad.defined()) continue;
    float* w = p.data();
    float* vel = velocity_[i].data();
    const float* g = grad.data();
    for (int64_t j = 0; j < p.numel(); ++j) {
      vel[j] = config_.momentum * vel[j] + g[j];
      w[j] -= config_.lr * vel[j];
    }
  }
}

void Sgd::restore(const std::vector<Tensor>& velocity) {
  check_buffers("SGD velocities", parameters_, velocity);
  copy_into(velocity, velocity_);
}

void Sgd::zero_grad() {
  for (Tensor& p : parameters_) p.zero_grad();
}

namespace {

std::vector<Tensor> tensors_of(const NamedTensors& named) {
  std::vector<Tensor> tensors;
  for (const auto& [name, tensor] : named) tensors.push_back(tensor);
  return tensors;
}

void add_named(NamedTensors& out, const std::string& prefix, const NamedTensors& parameters,
               const std::vector<Tensor>& buffers) {
  for (size_t i = 0; i < buffers.size(); ++i)
    out.emplace_back(prefix + parameters[i].first, buffers[i]);
}

}  // namespace

Optimizer::Optimizer(NamedTensors parameters, const AdamConfig& config)
    : named_(std::move(parameters)), parameters_(tensors_of(named_)) {
  adam_.emplace(parameters_, config);
}

Optimizer::Optimizer(NamedTensors parameters, const SgdConfig& config)
    : named_(std::move(parameters)), parameters_(tensors_of(named_)) {
  sgd_.emplace(parameters_, config);
}

void Optimizer::step(float lr) {
  if (adam_) {
    adam_->set_lr(lr);
    adam_->step();
  } else {
    sgd_->set_lr(lr);
    sgd_->step();
  }
}

void Optimizer::zero_grad() {
  for (Tensor& p : parameters_) p.zero_grad();
}

NamedTensors Optimizer::buffers() const {
  NamedTensors named;
  if (adam_) {
    add_named(named, "adam.m.", named_, adam_->first_moments());
    add_named(named, "adam.v.", named_, adam_->second_moments());
  } else {
    add_named(named, "sgd.velocity.", named_, sgd_->velocities());
  }
  return named;
}

void Optimizer::restore(int64_t steps, const NamedTensors& buffers) {
  const size_t needed = (adam_ ? 2 : 1) * named_.size();
  if (buffers.size() != needed)
    throw std::invalid_argument(
        fmt::format("holds {} optimizer buffers; {} for this model needs {}", buffers.size(),
                    adam_ ? "Adam" : "SGD", needed));
  if (adam_)
    adam_->restore(steps, find(buffers, "adam.m."), find(buffers, "adam.v."));
  else
    sgd_->restore(find(buffers, "sgd.velocity."));
}

std::vector<Tensor> Optimizer::find(const NamedTensors& buffers, const std::string& prefix) const {
  std::vector<Tensor> found;
  for (const auto& [name, parameter] : named_) {
    const std::string key = prefix + name;
    const auto it = std::find_if(buffers.begin(), buffers.end(),
                                 [&key](const auto& saved) { return saved.first == key; });
    if (it == buffers.end())
      throw std::invalid_argument(fmt::format(
          "tensor \"{}{}\" is missing (the state is of another model or optimizer)", prefix, name));
    if (!(it->second.shape() == parameter.shape()))
      throw std::invalid_argument(fmt::format("tensor \"{}\" has shape {} but the parameter has {}",
                                              it->first, it->second.shape(), parameter.shape()));
    found.push_back(it->second);
  }
  return found;
}

float clip_grad_norm(const std::vector<Tensor>& parameters, float max_norm) {
  double total = 0.0;
  for (const Tensor& p : parameters) {
    const Tensor g = p.grad();
    if (!g.defined()) continue;
    for (int64_t j = 0; j < g.numel(); ++j)
      total += static_cast<double>(g.data()[j]) * static_cast<double>(g.data()[j]);
  }
  const auto norm = static_cast<float>(std::sqrt(total));
  const float scale = max_norm / (norm + 1e-6f);
  if (scale < 1.0f) {
    for (const Tensor& p : parameters) {
      Tensor g = p.grad();
      if (!g.defined()) continue;
      for (int64_t j = 0; j < g.numel(); ++j) g.data()[j] *= scale;
    }
  }
  return norm;
}

namespace {

// "nan" or "inf" for the first value of t that is not finite, or nothing.
std::optional<std::string> non_finite(const Tensor& t) {
  const float* values = t.data();
  // numel() once: it is a call into another file, which the loop would otherwise make for every
  // value (4% of a copy-task step in WebAssembly).
  const int64_t n = t.numel();
  for (int64_t i = 0; i < n; ++i)
    if (!std::isfinite(values[i])) return std::isnan(values[i]) ? "nan" : "inf";
  return std::nullopt;
}

}  // namespace

std::optional<std::string> find_non_finite_gradient(const NamedTensors& parameters) {
  for (const auto& [name, parameter] : parameters) {
    const Tensor grad = parameter.grad();
    if (!grad.defined()) continue;
    if (const auto what = non_finite(grad))
      return fmt::format("the gradient of {} has {}", name, *what);
  }
  return std::nullopt;
}

std::optional<std::string> find_non_finite_value(const NamedTensors& parameters) {
  for (const auto& [name, parameter] : parameters)
    if (const auto what = non_finite(parameter)) return fmt::format("{} has {}", name, *what);
  return std::nullopt;
}

float noam_lr(int64_t step, int64_t d_model, int64_t warmup, float factor) {
  if (step < 1 || d_model < 1 || warmup < 1)
    throw std::invalid_argument(
        fmt::format("noam_lr: step, d_model and warmup must be positive (got {}, {}, {})", step,
                    d_model, warmup));
  const double s = static_cast<double>(step), w = static_cast<double>(warmup);
  return static_cast<float>(static_cast<double>(factor) *
                            std::pow(static_cast<double>(d_model), -0.5) *
                            std::min(std::pow(s, -0.5), s * std::pow(w, -1.5)));
}

float cosine_lr(int64_t step, int64_t warmup, int64_t total, float peak) {
  if (step < 1 || warmup < 1 || total <= warmup)
    throw std::invalid_argument(fmt::format(
        "cosine_lr: need step >= 1 and 1 <= warmup < total (got step {}, warmup {}, total {})",
        step, warmup, total));
  const double s = static_cast<double>(step), w = static_cast<double>(warmup);
  if (step <= warmup) return static_cast<float>(static_cast<double>(peak) * s / w);
  const double progress = (s - w) / (static_cast<double>(total) - w + 1.0);  // in (0, 1)
  return static_cast<float>(static_cast<double>(peak) * 0.5 *
                            (1.0 + std::cos(std::numbers::pi * std::min(progress, 1.0))));
}

}  // namespace gf::nn
