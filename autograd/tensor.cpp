#include "autograd/tensor.h"

#include <fmt/format.h>

#include <algorithm>
#include <cstring>

#include "autograd/errors.h"
#include "autograd/graph.h"
#include "autograd/random.h"
#include "autograd/storage.h"

namespace gf {

// ---- Shape ----------------------------------------------------------------------------

Shape::Shape(std::initializer_list<int64_t> dims) : Shape(std::span<const int64_t>(dims)) {}

Shape::Shape(std::span<const int64_t> dims) {
  if (dims.size() > static_cast<size_t>(kMaxRank))
    throw ShapeError(
        fmt::format("shape: rank {} exceeds the maximum of {}", dims.size(), kMaxRank));
  std::copy(dims.begin(), dims.end(), dims_.begin());
  rank_ = static_cast<int>(dims.size());
}

void Shape::push_back(int64_t d) {
  if (rank_ == kMaxRank)
    throw ShapeError(fmt::format("shape: rank exceeds the maximum of {}", kMaxRank));
  dims_[static_cast<size_t>(rank_++)] = d;
}

int64_t Shape::numel() const {
  int64_t n = 1;
  for (int64_t d : *this) n *= d;
  return n;
}

bool operator==(const Shape& a, const Shape& b) {
  return a.rank_ == b.rank_ && std::equal(a.begin(), a.end(), b.begin());
}

std::string to_string(const Shape& shape) {
  return fmt::format("[{}]", fmt::join(shape.begin(), shape.end(), ", "));
}

int normalize_axis(const char* op, int axis, int rank) {
  if (axis < -rank || axis >= rank)
    throw IndexError(
        fmt::format("{}: axis {} is out of range for a tensor of rank {}", op, axis, rank));
  return axis < 0 ? axis + rank : axis;
}

static void check_dims(const char* what, const Shape& shape) {
  for (int64_t d : shape)
    if (d < 0) throw ShapeError(fmt::format("{}: negative dimension in shape {}", what, shape));
}

// ---- Tensor ---------------------------------------------------------------------------

Tensor Tensor::empty(const Shape& shape) {
  check_dims("tensor", shape);
  auto impl = std::make_shared<detail::TensorImpl>();
  impl->shape = shape;
  // Uninitialised (kernels write every element anyway), and recycled (storage.h).
  impl->storage = allocate_floats(shape.numel());
  return Tensor(std::move(impl));
}

Tensor Tensor::full(const Shape& shape, float value) {
  Tensor t = empty(shape);
  std::fill_n(t.data(), t.numel(), value);
  return t;
}

Tensor Tensor::zeros(const Shape& shape) {
  return full(shape, 0.0f);
}
Tensor Tensor::ones(const Shape& shape) {
  return full(shape, 1.0f);
}
Tensor Tensor::scalar(float value) {
  return full(Shape{}, value);
}

Tensor Tensor::from(const Shape& shape, std::vector<float> values) {
  check_dims("tensor", shape);
  if (static_cast<int64_t>(values.size()) != shape.numel())
    throw ShapeError(fmt::format("tensor: {} values cannot fill shape {} ({} elements)",
                                 values.size(), shape, shape.numel()));
  Tensor t = empty(shape);
  std::copy(values.begin(), values.end(), t.data());
  return t;
}

Tensor Tensor::randn(const Shape& shape, Rng& rng, float stddev) {
  Tensor t = empty(shape);
  float* p = t.data();
  for (int64_t i = 0; i < t.numel(); ++i) p[i] = stddev * rng.normal();
  return t;
}

Tensor Tensor::uniform(const Shape& shape, Rng& rng, float low, float high) {
  Tensor t = empty(shape);
  float* p = t.data();
  for (int64_t i = 0; i < t.numel(); ++i) p[i] = rng.uniform(low, high);
  return t;
}

static detail::TensorImpl& checked(const std::shared_ptr<detail::TensorImpl>& impl) {
  if (!impl)
    throw std::invalid_argument(
        "tensor: an undefined (default-constructed) Tensor was used where a value is needed");
  return *impl;
}

const Shape& Tensor::shape() const {
  return checked(impl_).shape;
}
int64_t Tensor::dim(int axis) const {
  return shape()[normalize_axis("dim", axis, rank())];
}
float* Tensor::data() {
  return checked(impl_).storage.get();
}
const float* Tensor::data() const {
  return checked(impl_).storage.get();
}

float Tensor::item() const {
  if (numel() != 1)
    throw ShapeError(
        fmt::format("item: tensor of shape {} has {} elements, not 1", shape(), numel()));
  return data()[0];
}

float Tensor::at(std::initializer_list<int64_t> index) const {
  const Shape& s = shape();
  if (static_cast<int>(index.size()) != s.rank())
    throw IndexError(fmt::format("at: {} indices for a tensor of shape {}", index.size(), s));
  int64_t offset = 0, d = 0;
  for (int64_t i : index) {
    if (i < 0 || i >= s[d])
      throw IndexError(
          fmt::format("at: index {} is out of range [0, {}) in dimension {} of {}", i, s[d], d, s));
    offset = offset * s[d++] + i;
  }
  return data()[offset];
}

std::vector<float> Tensor::to_vector() const {
  return {data(), data() + numel()};
}

bool Tensor::requires_grad() const {
  const auto& impl = checked(impl_);
  return impl.requires_grad || impl.grad_fn != nullptr;
}

Tensor& Tensor::set_requires_grad(bool on) {
  auto& impl = checked(impl_);
  if (impl.grad_fn)
    throw std::logic_error(fmt::format(
        "set_requires_grad: only leaves can be marked; this tensor was made by {} (use detach())",
        impl.grad_fn->op));
  impl.requires_grad = on;
  return *this;
}

bool Tensor::is_leaf() const {
  return checked(impl_).grad_fn == nullptr;
}
std::string Tensor::op_name() const {
  return is_leaf() ? "" : impl_->grad_fn->op;
}
Tensor Tensor::grad() const {
  return Tensor(checked(impl_).grad);
}
void Tensor::zero_grad() {
  checked(impl_).grad.reset();
}
void Tensor::backward(const Tensor& seed) const {
  gf::backward(*this, seed);
}

Tensor Tensor::detach() const {
  auto impl = std::make_shared<detail::TensorImpl>();
  impl->shape = shape();
  impl->storage = impl_->storage;
  return Tensor(std::move(impl));
}

Tensor Tensor::clone() const {
  Tensor t = empty(shape());
  std::copy_n(data(), numel(), t.data());
  return t;
}

Tensor Tensor::view(const Shape& new_shape) const {
  check_dims("view", new_shape);
  if (new_shape.numel() != numel())
    throw ShapeError(fmt::format("view: cannot view {} ({} elements) as {} ({} elements)", shape(),
                                 numel(), new_shape, new_shape.numel()));
  auto impl = std::make_shared<detail::TensorImpl>();
  impl->shape = new_shape;
  impl->storage = impl_->storage;
  return Tensor(std::move(impl));
}

// Nested brackets, eliding the middle of long dimensions as "...".
static void format_values(std::string& out, const float* p, const Shape& s, int d, int precision) {
  const int64_t n = s[d];
  int64_t inner = 1;
  for (int k = d + 1; k < s.rank(); ++k) inner *= s[k];
  constexpr int64_t kEdge = 3;
  out += '[';
  for (int64_t i = 0; i < n; ++i) {
    if (n > 2 * kEdge + 1 && i == kEdge) {
      out += "..., ";
      i = n - kEdge - 1;
      continue;
    }
    if (d + 1 == s.rank())
      out += fmt::format("{:.{}f}", p[i], precision);
    else
      format_values(out, p + i * inner, s, d + 1, precision);
    if (i + 1 < n) out += ", ";
  }
  out += ']';
}

std::string to_string(const Tensor& t, int precision) {
  if (!t.defined()) return "tensor(undefined)";
  std::string out = "tensor(";
  if (t.rank() == 0)
    out += fmt::format("{:.{}f}", t.data()[0], precision);
  else
    format_values(out, t.data(), t.shape(), 0, precision);
  out += fmt::format(", shape {})", t.shape());
  return out;
}

// ---- IndexTensor ----------------------------------------------------------------------

IndexTensor IndexTensor::from(const Shape& shape, std::vector<int32_t> ids) {
  check_dims("index tensor", shape);
  if (static_cast<int64_t>(ids.size()) != shape.numel())
    throw ShapeError(fmt::format("index tensor: {} ids cannot fill shape {} ({} elements)",
                                 ids.size(), shape, shape.numel()));
  IndexTensor t = zeros(shape);
  std::copy(ids.begin(), ids.end(), t.data());
  return t;
}

IndexTensor IndexTensor::zeros(const Shape& shape) {
  check_dims("index tensor", shape);
  IndexTensor t;
  t.shape_ = shape;
  t.data_ = std::shared_ptr<int32_t[]>(new int32_t[static_cast<size_t>(shape.numel())]());
  return t;
}

int32_t IndexTensor::at(std::initializer_list<int64_t> index) const {
  if (static_cast<int>(index.size()) != shape_.rank())
    throw IndexError(
        fmt::format("at: {} indices for an index tensor of shape {}", index.size(), shape_));
  int64_t offset = 0, d = 0;
  for (int64_t i : index) {
    if (i < 0 || i >= shape_[d])
      throw IndexError(fmt::format("at: index {} is out of range [0, {}) in dimension {} of {}", i,
                                   shape_[d], d, shape_));
    offset = offset * shape_[d++] + i;
  }
  return data_[static_cast<std::ptrdiff_t>(offset)];
}

}  // namespace gf
