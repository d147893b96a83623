// The tape's engine: recording and backward(). Read this file first; every op in ops/ is
// a client of the two functions here, record() and backward().
#include "autograd/graph.h"

#include <fmt/format.h>

#include <algorithm>
#include <chrono>
#include <set>
#include <unordered_set>

#include "autograd/errors.h"
#include "autograd/kernels/elementwise.h"
#include "autograd/profile.h"

namespace gf {

// ---- Grad mode ------------------------------------------------------------------------

// Per thread, so that a NoGrad in one thread never silences recording in another.
static thread_local bool grad_mode_on = true;

bool grad_enabled() {
  return grad_mode_on;
}
NoGrad::NoGrad() : previous_(grad_mode_on) {
  grad_mode_on = false;
}
NoGrad::~NoGrad() {
  grad_mode_on = previous_;
}

bool needs_grad(const std::vector<Tensor>& inputs) {
  if (!grad_mode_on) return false;
  return std::any_of(inputs.begin(), inputs.end(),
                     [](const Tensor& x) { return x.defined() && x.requires_grad(); });
}

// ---- Recording ------------------------------------------------------------------------

void attach_node(Tensor& y, const char* op, std::vector<Tensor> inputs, BackwardFn backward) {
  auto node = std::make_shared<Node>();
  node->op = op;
  node->inputs.reserve(inputs.size());
  for (const Tensor& x : inputs) {
    Edge& edge = node->inputs.emplace_back();
    if (!x.defined() || !x.requires_grad()) continue;
    edge.shape = x.shape();
    if (x.impl()->grad_fn)
      edge.producer = x.impl()->grad_fn;
    else
      edge.leaf = x.impl_ptr();
  }
  node->backward = std::move(backward);
  y.impl()->grad_fn = std::move(node);
  if (profile::profiling_on()) profile::detail::on_record(op);
}

// Destroying a node destroys its producers, which destroy theirs, and so on: for a graph
// that was never differentiated (a long decode under grad mode, an RNN unrolled over
// thousands of steps) that recursion can overflow the call stack. Instead, each node that is
// about to die hands its sole-owned producers to a work list, which is emptied in a loop.
static void release_into(Node& node, std::vector<std::shared_ptr<Node>>& pending) {
  // The closure first: the tensors it captured may hold the other references to producers.
  node.backward = nullptr;
  for (Edge& edge : node.inputs)
    if (edge.producer && edge.producer.use_count() == 1)
      pending.push_back(std::move(edge.producer));
  node.inputs.clear();
}

Node::~Node() {
  std::vector<std::shared_ptr<Node>> pending;
  release_into(*this, pending);
  while (!pending.empty()) {
    std::shared_ptr<Node> next = std::move(pending.back());
    pending.pop_back();
    release_into(*next, pending);
  }  // `next` dies here with no inputs left, so its destructor does not recurse
}

// ---- Walking the graph ----------------------------------------------------------------

// The nodes of the graph that ends at root, each after every node that made one of its
// inputs (a depth-first post-order). Iterative, so that deep graphs (long recurrent unrolls)
// cannot overflow the call stack. The list holds the nodes alive: backward releases each
// node's inputs as it goes, which may drop the last other reference to a producer.
static std::vector<std::shared_ptr<Node>> topological_order(const std::shared_ptr<Node>& root) {
  std::vector<std::shared_ptr<Node>> order;
  std::unordered_set<Node*> visited{root.get()};
  std::vector<std::pair<std::shared_ptr<Node>, size_t>> stack{{root, 0}};  // (node, next input)
  while (!stack.empty()) {
    auto& [node, next] = stack.back();
    if (next < node->inputs.size()) {
      const std::shared_ptr<Node>& child = node->inputs[next++].producer;
      if (child && visited.insert(child.get()).second) stack.push_back({child, 0});
    } else {
      order.push_back(std::move(node));  // every producer of its inputs is already listed
      stack.pop_back();
    }
  }
  return order;
}

std::vector<std::string> recorded_ops(const Tensor& root) {
  std::set<std::string> names;
  if (const auto& node = root.impl()->grad_fn)
    for (const auto& n : topological_order(node)) names.insert(n->op);
  return {names.begin(), names.end()};
}

int64_t count_nodes(const Tensor& root) {
  const auto& node = root.impl()->grad_fn;
  return node ? static_cast<int64_t>(topological_order(node).size()) : 0;
}

// ---- backward -------------------------------------------------------------------------

// Adds g into a gradient slot, out of place: a backward function may hand the same tensor to
// two inputs (add does), so adding into one of them in place would corrupt the other. A
// leaf's gradient is handed to the user (and to optimizers and clipping, which change it in
// place), so a leaf never keeps a tensor that anything else still refers to.
static void accumulate(Tensor& slot, const Tensor& g, bool for_leaf) {
  if (slot.defined()) {
    // A kernel's add, not ops.h's operator+: the tape stays below the ops that record on it.
    Tensor sum = Tensor::empty(slot.shape());  // slot and g have the input's shape
    kernels::add(slot.data(), g.data(), sum.data(), sum.numel());
    slot = sum;
  } else if (for_leaf && (g.impl_ptr().use_count() > 1 || g.impl()->storage.use_count() > 1)) {
    slot = g.clone();
  } else {
    slot = g;
  }
}

// Adds g into a leaf's grad().
static void accumulate_leaf(detail::TensorImpl& leaf, const Tensor& g) {
  Tensor slot(leaf.grad);
  accumulate(slot, g, /*for_leaf=*/true);
  leaf.grad = slot.impl_ptr();
}

void backward(const Tensor& root, const Tensor& seed) {
  if (!root.defined()) throw std::logic_error("backward: called on an undefined tensor");
  if (!root.requires_grad())
    throw std::logic_error(
        "backward: this tensor does not require grad (no input of the ops that made it was "
        "marked with set_requires_grad, or it was computed under NoGrad)");
  Tensor grad_root = seed;
  if (!grad_root.defined()) {
    if (root.numel() != 1)
      throw ShapeError(fmt::format(
          "backward: the output has shape {}; pass a gradient of that shape or reduce it to a "
          "scalar first",
          root.shape()));
    grad_root = Tensor::ones(root.shape());
  } else if (!(grad_root.shape() == root.shape())) {
    throw ShapeError(fmt::format("backward: the gradient has shape {} but the output has shape {}",
                                 grad_root.shape(), root.shape()));
  }

  NoGrad no_grad;  // backward functions use ordinary ops; they must not record
  const std::shared_ptr<Node>& root_node = root.impl()->grad_fn;
  if (!root_node) {  // a leaf: its gradient is the seed itself
    accumulate_leaf(*root.impl(), grad_root);
    return;
  }
  const std::vector<std::shared_ptr<Node>> order = topological_order(root_node);
  // Checked for every node before any gradient is written: a node below the root may have
  // been released by an earlier backward() through a shared part of the graph.
  for (const auto& node : order)
    if (!node->backward)
      throw std::logic_error(fmt::format(
          "backward: the graph has already been released at \"{}\" (backward() frees the graph "
          "it walks; compute the forward pass again, or sum the losses and call backward once)",
          node->op));
  root_node->grad_output = grad_root;
  for (auto it = order.rbegin(); it != order.rend(); ++it) {
    Node& node = **it;
    const bool profiling = profile::profiling_on();
    const auto started =
        profiling ? std::chrono::steady_clock::now() : std::chrono::steady_clock::time_point{};
    Tensor grad_output = std::move(node.grad_output);
    node.grad_output = Tensor();
    if (grad_output.defined()) {
      const Grads grads = node.backward(grad_output);
      if (grads.size() != node.inputs.size())
        throw std::logic_error(fmt::format("{} backward: returned {} gradients for {} inputs",
                                           node.op, grads.size(), node.inputs.size()));
      for (size_t i = 0; i < grads.size(); ++i) {
        const Edge& edge = node.inputs[i];
        const Tensor& g = grads[i];
        if (!g.defined() || (!edge.producer && !edge.leaf)) continue;
        if (!(g.shape() == edge.shape))
          throw std::logic_error(
              fmt::format("{} backward: gradient for input {} has shape {} but the input has "
                          "shape {}",
                          node.op, i, g.shape(), edge.shape));
        if (edge.producer)
          accumulate(edge.producer->grad_output, g, /*for_leaf=*/false);
        else
          accumulate_leaf(*edge.leaf, g);
      }
    }
    // Release: the closure's captured tensors and the edges are freed now, not when the
    // last handle to the loss goes away.
    node.backward = nullptr;
    node.inputs.clear();
    if (profiling)
      profile::detail::on_backward(
          node.op,
          std::chrono::duration<double>(std::chrono::steady_clock::now() - started).count());
  }
}

}  // namespace gf
