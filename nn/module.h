// Module: the base of every layer and model. It owns named parameters and named children, so
// that named_parameters() yields the dotted names of the checkpoint format
// ("encoder.layers.0.self_attn.q.weight"), and it carries the train/eval switch that dropout
// reads.
//
// A layer registers its parameters and child modules in its constructor:
//
//   Linear::Linear(...) {
//     weight = register_parameter("weight", init::xavier_uniform({out, in}, rng));
//   }
//   EncoderLayer::EncoderLayer(...) { register_module("self_attn", self_attn); ... }
//
// Children are members of their parent (not separately allocated), so a Module is neither
// copyable nor movable: the registry holds pointers to the members.
#pragma once

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "autograd/random.h"
#include "autograd/tensor.h"

namespace gf::nn {

using NamedTensors = std::vector<std::pair<std::string, Tensor>>;
// The states of a model's random generators, by module path ("encoder.layers.0.dropout").
using RandomStates = std::vector<std::pair<std::string, Rng::State>>;

class Module {
 public:
  Module() = default;
  Module(const Module&) = delete;
  Module& operator=(const Module&) = delete;
  virtual ~Module() = default;

  // Every parameter of this module and its children, depth first in registration order,
  // named by the path of attribute names: "layers.0.ffn.linear1.weight".
  NamedTensors named_parameters() const;
  std::vector<Tensor> parameters() const;
  int64_t parameter_count() const;  // total number of scalars
  // Every descendant module (not this one), depth first in registration order, named by its
  // path ("encoder.layers.0.dropout"): how training finds the dropout layers, whose random
  // streams it saves and restores.
  std::vector<std::pair<std::string, Module*>> named_modules();

  // Training mode (the default) enables dropout; eval() disables it. Applies to all children.
  void train(bool on = true);
  void eval() { train(false); }
  bool training() const { return training_; }

  void zero_grad();  // forgets the gradients of all parameters

  // The generator this module draws from in training mode (Dropout's masks), or none. It is
  // how a training run saves and restores every random stream of a model without knowing its
  // layer types.
  virtual Rng* random_stream() { return nullptr; }

 protected:
  // Marks value as requiring grad and records it under name; returns the same handle.
  Tensor register_parameter(std::string name, Tensor value);
  // Records a child (a member of the derived class) under name.
  void register_module(std::string name, Module& child);

 private:
  void collect(const std::string& prefix, NamedTensors& out) const;
  void collect_modules(const std::string& prefix,
                       std::vector<std::pair<std::string, Module*>>& out);

  NamedTensors parameters_;
  std::vector<std::pair<std::string, Module*>> children_;
  bool training_ = true;
};

// Every descendant's random_stream() state, depth first: what a resumed run needs to draw the
// same dropout masks again.
RandomStates random_states(Module& model);
// Puts saved states back. Checks first that they name exactly the model's random modules, and
// throws std::invalid_argument naming the first mismatch, changing nothing.
void restore_random_states(Module& model, const RandomStates& states);

// Eval mode for a scope (decoding, scoring) and the module's own mode back afterwards, however
// the scope ends: a check run in the middle of training must leave dropout on.
class EvalScope {
 public:
  explicit EvalScope(Module& module) : module_(module), was_training_(module.training()) {
    module_.eval();
  }
  ~EvalScope() { module_.train(was_training_); }
  EvalScope(const EvalScope&) = delete;
  EvalScope& operator=(const EvalScope&) = delete;

 private:
  Module& module_;
  bool was_training_;
};

}  // namespace gf::nn
