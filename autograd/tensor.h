// Tensor: a cheap handle (shared ownership) to float32, contiguous, row-major storage and a
// shape. Copying a Tensor copies the handle, not the numbers; reshape shares the storage;
// every other op writes a new tensor. A tensor that requires grad takes part in the tape
// (graph.h): ops on it record how to send gradients back to it.
//
// Shape prints as [2, 3, 5], the notation used in comments, error messages and lessons.
// IndexTensor carries token ids (int32), so ids are never confused with float data.
#pragma once

#include <fmt/format.h>

#include <array>
#include <cstdint>
#include <initializer_list>
#include <memory>
#include <span>
#include <string>
#include <vector>

namespace gf {

// A shape of up to kMaxRank dimensions, stored inline: ops create many shapes, and a
// heap allocation per shape would dominate the cost of ops on toy-sized tensors.
class Shape {
 public:
  static constexpr int kMaxRank = 8;

  Shape() = default;
  Shape(std::initializer_list<int64_t> dims);  // throws ShapeError above kMaxRank
  explicit Shape(std::span<const int64_t> dims);

  int rank() const { return rank_; }
  int64_t size() const { return rank_; }  // so that generic code may treat it as a range
  int64_t operator[](int64_t i) const { return dims_[static_cast<size_t>(i)]; }
  int64_t& operator[](int64_t i) { return dims_[static_cast<size_t>(i)]; }
  int64_t back() const { return dims_[static_cast<size_t>(rank_ - 1)]; }
  const int64_t* begin() const { return dims_.data(); }
  const int64_t* end() const { return dims_.data() + rank_; }
  void push_back(int64_t d);  // throws ShapeError above kMaxRank

  int64_t numel() const;  // product of the dimensions; 1 for a scalar (rank 0)
  friend bool operator==(const Shape& a, const Shape& b);

 private:
  std::array<int64_t, kMaxRank> dims_{};
  int rank_ = 0;
};

std::string to_string(const Shape& shape);  // "[2, 3, 5]"

// Turns a possibly negative axis (-1 = last) into 0 .. rank-1; throws IndexError naming op.
int normalize_axis(const char* op, int axis, int rank);

struct Node;  // graph.h

namespace detail {
struct TensorImpl {
  Shape shape;
  std::shared_ptr<float[]> storage;  // shared by reshapes of the same data
  bool requires_grad = false;        // a leaf the user wants dL/dx for (a parameter)
  std::shared_ptr<TensorImpl> grad;  // accumulated dL/d(this), for leaves
  std::shared_ptr<Node> grad_fn;     // the recorded op that produced this tensor, if any
};
}  // namespace detail

class Rng;

class Tensor {
 public:
  Tensor() = default;  // an undefined handle: defined() is false

  // Factories. Shapes with negative dimensions throw ShapeError.
  static Tensor empty(const Shape& shape);  // contents unspecified: for kernels to fill
  static Tensor zeros(const Shape& shape);
  static Tensor ones(const Shape& shape);
  static Tensor full(const Shape& shape, float value);
  static Tensor scalar(float value);                                  // shape []
  static Tensor from(const Shape& shape, std::vector<float> values);  // row-major values
  static Tensor randn(const Shape& shape, Rng& rng, float stddev = 1.0f);
  static Tensor uniform(const Shape& shape, Rng& rng, float low, float high);

  bool defined() const { return impl_ != nullptr; }
  const Shape& shape() const;
  int rank() const { return shape().rank(); }
  int64_t dim(int axis) const;  // axis may be negative
  int64_t numel() const { return shape().numel(); }

  float* data();
  const float* data() const;
  float item() const;                                    // the value of a one-element tensor
  float at(std::initializer_list<int64_t> index) const;  // bounds-checked, for tests and lessons
  std::vector<float> to_vector() const;

  // Autodiff. set_requires_grad marks a leaf (a parameter or an input of interest).
  bool requires_grad() const;
  Tensor& set_requires_grad(bool on = true);
  bool is_leaf() const;         // not produced by a recorded op
  std::string op_name() const;  // the op that produced it ("" for a leaf)
  Tensor grad() const;          // dL/d(this) after backward(); undefined if none reached it
  void zero_grad();             // forget the accumulated gradient

  // Reverse-mode differentiation from this tensor. seed is dL/d(this); it may be omitted
  // for a one-element tensor (then it is 1). Gradients accumulate into the leaves' grad().
  // The graph is released afterwards; a second backward() through it throws.
  void backward(const Tensor& seed = {}) const;

  Tensor detach() const;  // same storage, no history, requires_grad false
  Tensor clone() const;   // a copy of the numbers, no history

  // Shared storage with a new shape of equal numel (reshape's forward uses it).
  Tensor view(const Shape& shape) const;

  detail::TensorImpl* impl() const { return impl_.get(); }
  const std::shared_ptr<detail::TensorImpl>& impl_ptr() const { return impl_; }
  explicit Tensor(std::shared_ptr<detail::TensorImpl> impl) : impl_(std::move(impl)) {}

 private:
  std::shared_ptr<detail::TensorImpl> impl_;
};

// "tensor([[1.0000, 2.0000], [3.0000, 4.0000]], shape [2, 2])", elided when large.
std::string to_string(const Tensor& t, int precision = 4);

// Token ids: int32, contiguous, row-major. Values are checked by the ops that use them.
class IndexTensor {
 public:
  IndexTensor() = default;
  static IndexTensor from(const Shape& shape, std::vector<int32_t> ids);
  static IndexTensor zeros(const Shape& shape);

  bool defined() const { return data_ != nullptr; }
  const Shape& shape() const { return shape_; }
  int64_t numel() const { return defined() ? shape_.numel() : 0; }
  const int32_t* data() const { return data_.get(); }
  int32_t* data() { return data_.get(); }
  int32_t at(std::initializer_list<int64_t> index) const;

 private:
  Shape shape_;
  std::shared_ptr<int32_t[]> data_;
};

}  // namespace gf

// fmt::format("{}", shape) prints "[2, 3, 5]".
template <>
struct fmt::formatter<gf::Shape> {
  constexpr auto parse(fmt::format_parse_context& ctx) { return ctx.begin(); }
  template <typename FormatContext>
  auto format(const gf::Shape& shape, FormatContext& ctx) const {
    return fmt::format_to(ctx.out(), "{}", gf::to_string(shape));
  }
};
