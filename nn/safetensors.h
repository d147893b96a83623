// The safetensors file format (https://github.com/huggingface/safetensors), which is how
// checkpoints are stored, so that a trained model opens in PyTorch with
// safetensors.torch.load_file and no conversion. A file is three parts:
//
//   [8 bytes]  N, the header length, unsigned 64-bit little-endian
//   [N bytes]  a UTF-8 JSON object: name -> {"dtype": "F32", "shape": [2, 3],
//              "data_offsets": [begin, end]}, plus an optional "__metadata__": {string: string}
//   [rest]     the data buffer: each tensor's bytes, row-major, little-endian, at
//              [begin, end) relative to the buffer's start; together they cover it exactly
//
// Only float32 ("F32") is written or read, as every Tensor is float32.
#pragma once

#include <map>
#include <string>

#include "nn/module.h"

namespace gf::nn {

// String keys to string values: the model configuration stored in "__metadata__".
using Metadata = std::map<std::string, std::string>;

// Writes tensors (in the given order, each contiguous, F32) and metadata to path. The write
// is atomic: a temporary file in the same directory is written, flushed to disk and renamed
// over path, so a crash never leaves a half-written checkpoint. Throws std::invalid_argument
// for a duplicate, reserved ("__metadata__") or non-UTF-8 name, or an undefined tensor, and
// std::runtime_error naming path and the system's reason if the file cannot be written.
void save_safetensors(const std::string& path, const NamedTensors& tensors,
                      const Metadata& metadata = {});

// Removes the temporary files ("PATH.tmp-<pid>-<k>") that writes of path killed half-way left
// behind, those of processes no longer running, so that a run killed again and again does not
// fill its folder. Returns how many it removed.
int remove_stale_temporaries(const std::string& path);

struct SafetensorsFile {
  NamedTensors tensors;  // in data-offset order (for our own files: the order they were saved)
  Metadata metadata;
};

// Reads a file written by save_safetensors or any other safetensors writer, provided every
// tensor is F32. Every length, dtype, shape and offset is checked before it is trusted, and
// the tensors must cover the data buffer without gaps or overlaps. Stricter than the
// reference reader, a key repeated in any JSON object and an unknown key in a tensor's entry
// are refused too. Throws FormatError "checkpoint: <path>: <problem>".
SafetensorsFile load_safetensors(const std::string& path);

}  // namespace gf::nn
