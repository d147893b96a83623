// Checkpoints: a Module's parameters and its configuration in one safetensors file
// (safetensors.h), named by named_parameters() ("encoder.layers.0.norm1.weight"), so that the
// file opens in PyTorch as a state dict. The configuration travels as string metadata; the
// helpers below write and read its values (model code decides which keys it needs).
#pragma once

#include <cstdint>
#include <string>

#include "nn/module.h"
#include "nn/safetensors.h"

namespace gf::nn {

// Writes every parameter of module, in named_parameters() order, and metadata to path,
// atomically (see save_safetensors). Throws std::runtime_error if the file cannot be written.
void save_checkpoint(const std::string& path, const Module& module, const Metadata& metadata);

// Reads path into module's existing parameters, in place, so layers holding them see the new
// values. The file must hold exactly the module's parameters with the module's shapes; every
// check runs before the first value is copied, so a refused file leaves module unchanged.
// Returns the metadata. Throws FormatError "checkpoint: <path>: ...", e.g.
//   checkpoint: m.safetensors: tensor "norm1.weight" has shape [64] but the model expects [512]
Metadata load_checkpoint(const std::string& path, Module& module);
// The same for a file already read with load_safetensors (so that a caller who first looked
// at its metadata does not read it twice); path only names it in messages.
Metadata load_checkpoint(const SafetensorsFile& file, const std::string& path, Module& module);

// Metadata values as text: integers in decimal, floats in the shortest form that reads back
// to the same float ("1e-09", "0.1"), booleans as "true" / "false".
void set_metadata_int(Metadata& metadata, const std::string& key, int64_t value);
void set_metadata_float(Metadata& metadata, const std::string& key, float value);
void set_metadata_bool(Metadata& metadata, const std::string& key, bool value);

// Reads a value written by the setters above. path only names the file in the message; each
// throws FormatError if key is missing or its value is not of the type asked for:
//   checkpoint: m.safetensors: metadata "d_model" is "abc", not an integer
int64_t metadata_int(const Metadata& metadata, const std::string& key, const std::string& path);
float metadata_float(const Metadata& metadata, const std::string& key, const std::string& path);
bool metadata_bool(const Metadata& metadata, const std::string& key, const std::string& path);

}  // namespace gf::nn
