#include "training/model_file.h"

#include <fmt/format.h>

#include <filesystem>
#include <map>

#include "autograd/errors.h"
#include "data/vocab.h"
#include "nn/checkpoint.h"
#include "nn/safetensors.h"

namespace gf::training {

namespace {

constexpr const char* kTokenizerKey = "tokenizer";

std::unique_ptr<Transformer> model_from(const nn::SafetensorsFile& file, const std::string& path,
                                        float dropout, uint64_t seed) {
  // The configuration first, from the header (checked against the tensors), so that the model
  // has the file's shapes; then the weights, from the same reading of the file.
  TransformerConfig config = TransformerConfig::from_checkpoint(file, path);
  // The data readers and batching of this library use the contract's special ids.
  if (config.pad_id != data::kPad || config.bos_id != data::kBos || config.eos_id != data::kEos)
    throw FormatError(fmt::format(
        "checkpoint: {}: special ids pad {}, bos {}, eos {} differ from the {}, {}, {} this tool "
        "reads and writes",
        path, config.pad_id, config.bos_id, config.eos_id, data::kPad, data::kBos, data::kEos));
  config.dropout = dropout;
  Rng rng(seed);  // seeds the dropout masks; the initial values are overwritten by the file's
  auto model = std::make_unique<Transformer>(config, rng);
  nn::load_checkpoint(file, path, *model);
  return model;
}

nn::Metadata metadata_of(const Transformer& model, const data::Tokenizer* tokenizer) {
  nn::Metadata metadata = model.config.to_metadata();
  if (tokenizer) metadata[kTokenizerKey] = tokenizer->to_json();
  return metadata;
}

void make_folder_of(const std::string& path) {
  const std::filesystem::path parent = std::filesystem::path(path).parent_path();
  if (!parent.empty()) std::filesystem::create_directories(parent);
}

}  // namespace

std::unique_ptr<Transformer> load_model(const std::string& path, float dropout, uint64_t seed) {
  return model_from(nn::load_safetensors(path), path, dropout, seed);
}

ModelAndTokenizer load_model_and_tokenizer(const std::string& path, float dropout, uint64_t seed) {
  const nn::SafetensorsFile file = nn::load_safetensors(path);
  ModelAndTokenizer loaded{model_from(file, path, dropout, seed), nullptr};
  const auto it = file.metadata.find(kTokenizerKey);
  if (it == file.metadata.end()) return loaded;
  try {
    loaded.tokenizer = data::tokenizer_from_json(it->second);
  } catch (const std::exception& e) {
    throw FormatError(fmt::format("checkpoint: {}: {}", path, e.what()));
  }
  if (loaded.tokenizer->size() != loaded.model->config.vocab_size)
    throw FormatError(
        fmt::format("checkpoint: {}: the tokenizer has {} tokens but the model's vocabulary has {}",
                    path, loaded.tokenizer->size(), loaded.model->config.vocab_size));
  return loaded;
}

ModelAndTokenizer load_translator(const std::string& path, float dropout, uint64_t seed) {
  ModelAndTokenizer loaded = load_model_and_tokenizer(path, dropout, seed);
  if (!loaded.tokenizer)
    throw FormatError(fmt::format(
        "checkpoint: {}: holds no tokenizer, so it reads and writes token ids, not text (train "
        "with --task translate or toy-translation for a model that reads text, or use "
        "`transformer decode` with ids)",
        path));
  return loaded;
}

void save_model(const std::string& path, const Transformer& model,
                const data::Tokenizer* tokenizer) {
  make_folder_of(path);
  nn::save_checkpoint(path, model, metadata_of(model, tokenizer));
}

void save_model_with_weights(const std::string& path, const Transformer& model,
                             const nn::NamedTensors& weights, const data::Tokenizer* tokenizer) {
  make_folder_of(path);
  nn::save_safetensors(path, weights, metadata_of(model, tokenizer));
}

}  // namespace gf::training
