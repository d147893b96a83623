#include "autograd/gradcheck.h"

#include <fmt/format.h>

#include <cmath>

#include "autograd/graph.h"
#include "autograd/ops.h"
#include "autograd/random.h"

namespace gf {

namespace {

// sum(r * y) in double, so that the difference of two nearby values keeps its digits.
double weighted_sum(const Tensor& r, const Tensor& y) {
  double s = 0.0;
  for (int64_t i = 0; i < y.numel(); ++i)
    s += static_cast<double>(r.data()[i]) * static_cast<double>(y.data()[i]);
  return s;
}

std::string multi_index(const Shape& shape, int64_t flat) {
  std::vector<int64_t> index(static_cast<size_t>(shape.rank()));
  for (int d = shape.rank() - 1; d >= 0; --d) {
    index[static_cast<size_t>(d)] = flat % shape[d];
    flat /= shape[d];
  }
  return fmt::format("[{}]", fmt::join(index, ", "));
}

}  // namespace

GradcheckResult gradcheck(const std::function<Tensor(const Tensors&)>& f, const Tensors& inputs,
                          const GradcheckOptions& options) {
  Tensors xs;
  for (const Tensor& x : inputs) {
    Tensor leaf = x.clone();  // a copy: the steps below never touch the caller's numbers
    leaf.set_requires_grad(true);
    xs.push_back(leaf);
  }
  const Tensor y = f(xs);
  Rng rng(options.seed);
  const Tensor r = Tensor::randn(y.shape(), rng);
  y.backward(r);

  GradcheckResult result;
  NoGrad no_grad;
  for (size_t input = 0; input < xs.size(); ++input) {
    Tensor& x = xs[input];
    const Tensor analytic = x.grad();
    float* p = x.data();
    for (int64_t k = 0; k < x.numel(); ++k) {
      const float original = p[k];
      const double h = options.step * std::max(1.0, std::abs(static_cast<double>(original)));
      // The step actually taken, after rounding x + h to float.
      p[k] = static_cast<float>(original + h);
      const double up = static_cast<double>(p[k]);
      const double loss_up = weighted_sum(r, f(xs));
      p[k] = static_cast<float>(original - h);
      const double down = static_cast<double>(p[k]);
      const double loss_down = weighted_sum(r, f(xs));
      p[k] = original;
      const double numeric = (loss_up - loss_down) / (up - down);
      const double ana = analytic.defined() ? static_cast<double>(analytic.data()[k]) : 0.0;
      const double error = std::abs(numeric - ana);
      result.max_abs_error = std::max(result.max_abs_error, error);
      ++result.checked;
      if (!(error <= options.atol + options.rtol * std::abs(numeric))) {  // NaN fails too
        if (result.ok || static_cast<int>(std::count(result.report.begin(), result.report.end(),
                                                     '\n')) < options.max_reports)
          result.report += fmt::format("input {} {} at {}: numeric {:.6g}, analytic {:.6g}\n",
                                       input, x.shape(), multi_index(x.shape(), k), numeric, ana);
        result.ok = false;
      }
    }
  }
  return result;
}

}  // namespace gf
