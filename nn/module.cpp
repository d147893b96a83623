#include "nn/module.h"

#include <fmt/format.h>

#include <algorithm>
#include <stdexcept>

namespace gf::nn {

Tensor Module::register_parameter(std::string name, Tensor value) {
  value.set_requires_grad(true);
  parameters_.emplace_back(std::move(name), value);
  return value;
}

void Module::register_module(std::string name, Module& child) {
  children_.emplace_back(std::move(name), &child);
}

void Module::collect(const std::string& prefix, NamedTensors& out) const {
  for (const auto& [name, tensor] : parameters_) out.emplace_back(prefix + name, tensor);
  for (const auto& [name, child] : children_) child->collect(prefix + name + ".", out);
}

NamedTensors Module::named_parameters() const {
  NamedTensors out;
  collect("", out);
  return out;
}

void Module::collect_modules(const std::string& prefix,
                             std::vector<std::pair<std::string, Module*>>& out) {
  for (auto& [name, child] : children_) {
    out.emplace_back(prefix + name, child);
    child->collect_modules(prefix + name + ".", out);
  }
}

std::vector<std::pair<std::string, Module*>> Module::named_modules() {
  std::vector<std::pair<std::string, Module*>> out;
  collect_modules("", out);
  return out;
}

std::vector<Tensor> Module::parameters() const {
  std::vector<Tensor> out;
  for (auto& [name, tensor] : named_parameters()) out.push_back(tensor);
  return out;
}

int64_t Module::parameter_count() const {
  int64_t n = 0;
  for (const auto& [name, tensor] : named_parameters()) n += tensor.numel();
  return n;
}

void Module::train(bool on) {
  training_ = on;
  for (auto& [name, child] : children_) child->train(on);
}

void Module::zero_grad() {
  for (auto& [name, tensor] : named_parameters()) tensor.zero_grad();
}

RandomStates random_states(Module& model) {
  RandomStates states;
  for (const auto& [name, module] : model.named_modules())
    if (const Rng* stream = module->random_stream()) states.emplace_back(name, stream->state());
  return states;
}

void restore_random_states(Module& model, const RandomStates& states) {
  std::vector<std::pair<Rng*, Rng::State>> found;
  for (const auto& named : model.named_modules()) {
    const std::string& name = named.first;
    Rng* stream = named.second->random_stream();
    if (!stream) continue;
    const auto it = std::find_if(states.begin(), states.end(),
                                 [&](const auto& saved) { return saved.first == name; });
    if (it == states.end())
      throw std::invalid_argument(fmt::format("no dropout state for \"{}\"", name));
    found.emplace_back(stream, it->second);
  }
  if (found.size() != states.size())
    throw std::invalid_argument(fmt::format("{} dropout states for a model with {} dropout layers",
                                            states.size(), found.size()));
  for (auto& [stream, state] : found) stream->set_state(state);
}

}  // namespace gf::nn
