// Module checkpoints on top of the safetensors reader and writer. Loading validates the whole
// file against the module first and copies second, so a refused file changes nothing.
#include "nn/checkpoint.h"

#include <fmt/format.h>

#include <algorithm>
#include <map>
#include <set>
#include <utility>
#include <vector>

#include "autograd/errors.h"
#include "autograd/parse_number.h"

namespace gf::nn {

void save_checkpoint(const std::string& path, const Module& module, const Metadata& metadata) {
  save_safetensors(path, module.named_parameters(), metadata);
}

Metadata load_checkpoint(const std::string& path, Module& module) {
  return load_checkpoint(load_safetensors(path), path, module);
}

Metadata load_checkpoint(const SafetensorsFile& file, const std::string& path, Module& module) {
  std::map<std::string, const Tensor*> stored;  // names are unique: the reader checks
  for (const auto& [name, tensor] : file.tensors) stored.emplace(name, &tensor);

  const NamedTensors parameters = module.named_parameters();
  std::vector<std::pair<Tensor, const Tensor*>> copies;  // (parameter, its value in the file)
  for (const auto& [name, parameter] : parameters) {
    const auto it = stored.find(name);
    if (it == stored.end())
      throw FormatError(fmt::format("checkpoint: {}: missing tensor \"{}\"", path, name));
    const Tensor& value = *it->second;
    if (!(value.shape() == parameter.shape()))
      throw FormatError(
          fmt::format("checkpoint: {}: tensor \"{}\" has shape {} but the model expects {}", path,
                      name, value.shape(), parameter.shape()));
    copies.emplace_back(parameter, &value);
  }
  std::set<std::string> known;
  for (const auto& [name, parameter] : parameters) known.insert(name);
  for (const auto& [name, tensor] : file.tensors)
    if (!known.contains(name))
      throw FormatError(
          fmt::format("checkpoint: {}: unexpected tensor \"{}\" (the model has no such parameter)",
                      path, name));

  // Into the existing storage: the layers hold handles to these very tensors.
  for (auto& [parameter, value] : copies)
    std::copy_n(value->data(), value->numel(), parameter.data());
  return file.metadata;
}

// ---- Metadata values ------------------------------------------------------------------

void set_metadata_int(Metadata& metadata, const std::string& key, int64_t value) {
  metadata[key] = fmt::format("{}", value);
}

// fmt's "{}" prints the shortest decimal that parses back to exactly this float.
void set_metadata_float(Metadata& metadata, const std::string& key, float value) {
  metadata[key] = fmt::format("{}", value);
}

void set_metadata_bool(Metadata& metadata, const std::string& key, bool value) {
  metadata[key] = value ? "true" : "false";
}

namespace {

const std::string& find_value(const Metadata& metadata, const std::string& key,
                              const std::string& path) {
  const auto it = metadata.find(key);
  if (it == metadata.end())
    throw FormatError(fmt::format("checkpoint: {}: metadata \"{}\" is missing", path, key));
  return it->second;
}

FormatError bad_value(const std::string& key, const std::string& value, const char* expected,
                      const std::string& path) {
  return FormatError(
      fmt::format("checkpoint: {}: metadata \"{}\" is \"{}\", not {}", path, key, value, expected));
}

}  // namespace

int64_t metadata_int(const Metadata& metadata, const std::string& key, const std::string& path) {
  const std::string& text = find_value(metadata, key, path);
  int64_t value = 0;
  if (!parse_number(text, value)) throw bad_value(key, text, "an integer", path);
  return value;
}

float metadata_float(const Metadata& metadata, const std::string& key, const std::string& path) {
  const std::string& text = find_value(metadata, key, path);
  float value = 0.0f;
  if (!parse_number(text, value)) throw bad_value(key, text, "a number", path);
  return value;
}

bool metadata_bool(const Metadata& metadata, const std::string& key, const std::string& path) {
  const std::string& text = find_value(metadata, key, path);
  if (text == "true") return true;
  if (text == "false") return false;
  throw bad_value(key, text, "true or false", path);
}

}  // namespace gf::nn
