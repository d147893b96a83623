// A trained model in its checkpoint (docs/checkpoint-format.md): the configuration in the
// metadata, the weights as tensors, and for a model trained on text its tokenizer, as JSON
// under the metadata key "tokenizer", so that the checkpoint alone turns text into text.
#pragma once

#include <cstdint>
#include <memory>
#include <string>

#include "data/tokenizer.h"
#include "models/transformer.h"
#include "nn/module.h"

namespace gf::training {

// A model with the tokenizer it was trained with (none for a model trained on ids).
struct ModelAndTokenizer {
  std::unique_ptr<Transformer> model;
  std::unique_ptr<data::Tokenizer> tokenizer;  // null when the model reads token ids
};

// A model rebuilt from a checkpoint: the configuration from its metadata, then the weights.
// A checkpoint does not store dropout (a loaded model is for inference), so a model loaded to
// train on passes its rate, and the seed of the generator that draws its masks.
std::unique_ptr<Transformer> load_model(const std::string& path, float dropout = 0.0f,
                                        uint64_t seed = 0);
// The same with its tokenizer, if it has one. Throws FormatError for a tokenizer whose size is
// not the model's vocabulary.
ModelAndTokenizer load_model_and_tokenizer(const std::string& path, float dropout = 0.0f,
                                           uint64_t seed = 0);
// The same, and throws FormatError when the checkpoint holds no tokenizer.
ModelAndTokenizer load_translator(const std::string& path, float dropout = 0.0f, uint64_t seed = 0);

// Writes model (with its tokenizer, for text) to path atomically, making its folder.
void save_model(const std::string& path, const Transformer& model,
                const data::Tokenizer* tokenizer = nullptr);
// The same with other weights of a model of this configuration (the best check's, or an
// average): the model itself is not touched.
void save_model_with_weights(const std::string& path, const Transformer& model,
                             const nn::NamedTensors& weights, const data::Tokenizer* tokenizer);

}  // namespace gf::training
