// The tape: define-by-run reverse-mode differentiation, as in PyTorch and micrograd.
//
// Every op that makes a tensor y from inputs that require grad calls record(), which hangs a
// Node on y: the op's name, where each input's gradient goes, and a backward function that
// maps dL/dy to one gradient per input. backward() visits the nodes from the loss back to the leaves in reverse
// topological order, calls each backward function once with the sum of the gradients that
// reached its output, and accumulates the results into the leaves' grad(). Then it releases
// the graph, so that the activations it kept alive are freed.
//
// Ownership runs one way: a tensor owns the node that made it, a node owns the nodes that
// made its inputs. A node does not own its input tensors: their numbers stay alive only if
// the backward function captured them, so a tensor no backward needs (the output of an
// addition or of a dropout) is freed as soon as the forward pass is done with it, as in
// PyTorch. A backward function must never capture its own output (that would be a cycle,
// and a leak): it captures the inputs it needs, or the output's numbers as y.detach().
#pragma once

#include <functional>
#include <string>
#include <type_traits>
#include <utility>
#include <vector>

#include "autograd/tensor.h"

namespace gf {

using Grads = std::vector<Tensor>;  // one gradient per input; undefined = no gradient
using BackwardFn = std::function<Grads(const Tensor& grad_output)>;

// Where the gradient of one input goes: into the node that made the input, or into the
// grad() of a leaf. Both empty for an input that needs no gradient.
struct Edge {
  std::shared_ptr<Node> producer;            // the input was made by this node
  std::shared_ptr<detail::TensorImpl> leaf;  // the input is this leaf (requires grad, no node)
  Shape shape;                               // the input's shape, to check the gradient against
};

struct Node {
  const char* op = "";       // a string literal: "matmul", "softmax", ...
  std::vector<Edge> inputs;  // one per input of the op, in order
  BackwardFn backward;       // dL/d(output) -> dL/d(input_i) for each input
  Tensor grad_output;        // during backward(): the sum of gradients reaching the output

  Node() = default;
  Node(const Node&) = delete;
  Node& operator=(const Node&) = delete;
  ~Node();  // tears a long chain down iteratively (see graph.cpp)
};

// Grad mode: recording is on unless a NoGrad guard is alive on this thread. Backward runs
// with recording off, so backward functions may use ordinary ops freely.
bool grad_enabled();

class NoGrad {
 public:
  NoGrad();
  ~NoGrad();
  NoGrad(const NoGrad&) = delete;
  NoGrad& operator=(const NoGrad&) = delete;

 private:
  bool previous_;
};

// True when an op with these inputs must record: grad mode is on and one input requires grad.
bool needs_grad(const std::vector<Tensor>& inputs);

// Attaches a node to y (which must be freshly made by the op) and marks y as requiring grad.
void attach_node(Tensor& y, const char* op, std::vector<Tensor> inputs, BackwardFn backward);

// record(y, "mul", {a, b}, [a, b](const Tensor& grad_y) { return Grads{...}; });
// Does nothing, and builds no std::function, when no input requires grad or grad is off.
template <typename F>
void record(Tensor& y, const char* op, std::initializer_list<Tensor> inputs, F&& backward) {
  for (const Tensor& x : inputs) {
    if (grad_enabled() && x.defined() && x.requires_grad()) {
      attach_node(y, op, std::vector<Tensor>(inputs), BackwardFn(std::forward<F>(backward)));
      return;
    }
  }
}

template <typename F>
void record(Tensor& y, const char* op, const std::vector<Tensor>& inputs, F&& backward) {
  if (needs_grad(inputs)) attach_node(y, op, inputs, BackwardFn(std::forward<F>(backward)));
}

// Runs reverse-mode differentiation from root (see Tensor::backward).
void backward(const Tensor& root, const Tensor& seed);

// The distinct names of the ops recorded in the graph that ends at root, sorted.
// Used by the test that every op on the tape has a gradcheck row, and by lesson 01.
std::vector<std::string> recorded_ops(const Tensor& root);

// The number of nodes in the graph that ends at root (lesson 01 prints it).
int64_t count_nodes(const Tensor& root);

}  // namespace gf
