#include "cli/common.h"

#include <fmt/format.h>
#include <unistd.h>

#include <cstdio>
#include <filesystem>
#include <map>
#include <sstream>
#include <stdexcept>

#include "autograd/errors.h"
#include "data/vocab.h"
#include "models/decode.h"
#include "nn/checkpoint.h"
#include "nn/safetensors.h"

namespace gf::cli {

namespace {

constexpr const char* kTokenizerKey = "tokenizer";

std::unique_ptr<Transformer> model_from(const nn::SafetensorsFile& file, const std::string& path,
                                        float dropout, uint64_t seed) {
  // The configuration first, from the header (checked against the tensors), so that the model
  // has the file's shapes; then the weights, from the same reading of the file.
  TransformerConfig config = TransformerConfig::from_checkpoint(file, path);
  // The data readers and batching of this tool use the contract's special ids.
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

}  // namespace

std::unique_ptr<Transformer> load_model(const std::string& path, float dropout, uint64_t seed) {
  return model_from(nn::load_safetensors(path), path, dropout, seed);
}

void save_model(const std::string& path, const Transformer& model,
                const data::Tokenizer* tokenizer) {
  const std::filesystem::path parent = std::filesystem::path(path).parent_path();
  if (!parent.empty()) std::filesystem::create_directories(parent);
  std::map<std::string, std::string> metadata = model.config.to_metadata();
  if (tokenizer) metadata[kTokenizerKey] = tokenizer->to_json();
  nn::save_checkpoint(path, model, metadata);
}

Translator load_model_and_tokenizer(const std::string& path, float dropout, uint64_t seed) {
  const nn::SafetensorsFile file = nn::load_safetensors(path);
  Translator translator{model_from(file, path, dropout, seed), nullptr};
  const auto it = file.metadata.find(kTokenizerKey);
  if (it == file.metadata.end()) return translator;
  try {
    translator.tokenizer = data::tokenizer_from_json(it->second);
  } catch (const std::exception& e) {
    throw FormatError(fmt::format("checkpoint: {}: {}", path, e.what()));
  }
  if (translator.tokenizer->size() != translator.model->config.vocab_size)
    throw FormatError(
        fmt::format("checkpoint: {}: the tokenizer has {} tokens but the model's vocabulary has {}",
                    path, translator.tokenizer->size(), translator.model->config.vocab_size));
  return translator;
}

Translator load_translator(const std::string& path, float dropout, uint64_t seed) {
  Translator translator = load_model_and_tokenizer(path, dropout, seed);
  if (!translator.tokenizer)
    throw FormatError(fmt::format(
        "checkpoint: {}: holds no tokenizer, so it reads and writes token ids, not text (train "
        "with --task translate or toy-translation for a model that reads text, or use "
        "`transformer decode` with ids)",
        path));
  return translator;
}

std::vector<int32_t> parse_ids(const std::string& text, const std::string& what) {
  std::istringstream in(text);
  std::vector<int32_t> ids;
  std::string word;
  while (in >> word) {
    size_t used = 0;
    long long value = -1;
    try {
      value = std::stoll(word, &used);
    } catch (const std::exception&) {
      used = 0;
    }
    if (used != word.size() || value < 0 || value > INT32_MAX)
      throw std::invalid_argument(
          fmt::format("{}: \"{}\" is not a token id (expected non-negative integers)", what, word));
    ids.push_back(static_cast<int32_t>(value));
  }
  if (ids.empty()) throw std::invalid_argument(fmt::format("{}: no token ids given", what));
  return ids;
}

std::vector<int32_t> own_translation(Transformer& model, const std::vector<int32_t>& src) {
  const TransformerConfig& c = model.config;
  std::vector<int32_t> tgt = {c.bos_id};
  const std::vector<TokenIds> decoded =
      greedy_decode(model, IndexTensor::from({1, std::ssize(src)}, src));
  tgt.insert(tgt.end(), decoded[0].begin(), decoded[0].end());
  tgt.push_back(c.eos_id);
  return tgt;
}

std::string beside(const std::string& path, const std::string& suffix) {
  return std::filesystem::path(path).replace_extension().string() + suffix;
}

Progress::Progress(int64_t total)
    : total_(total),
      terminal_(isatty(fileno(stderr)) != 0),
      start_(std::chrono::steady_clock::now()),
      last_draw_(start_) {}

void Progress::update(int64_t done, const std::string& status) {
  const auto now = std::chrono::steady_clock::now();
  const double elapsed = std::chrono::duration<double>(now - start_).count();
  if (terminal_) {
    if (done < total_ && now - last_draw_ < std::chrono::milliseconds(100)) return;
    last_draw_ = now;
    constexpr int kWidth = 28;
    const auto filled = static_cast<int>(kWidth * done / std::max<int64_t>(total_, 1));
    const double eta =
        done > 0 ? elapsed * static_cast<double>(total_ - done) / static_cast<double>(done) : 0.0;
    fmt::print(stderr, "\r[{:=<{}}{:<{}}] {}/{} {} {:.0f}s left  ", "", filled, ">",
               kWidth - filled, done, total_, status, eta);
    std::fflush(stderr);
  } else {
    const int64_t tenth = done * 10 / std::max<int64_t>(total_, 1);
    if (tenth == last_logged_) return;
    last_logged_ = tenth;
    fmt::print(stderr, "{}/{} {} ({:.1f}s)\n", done, total_, status, elapsed);
  }
}

void Progress::note(const std::string& line) {
  if (terminal_) fmt::print(stderr, "\r{:<100}\r", "");  // the next update redraws the bar below
  fmt::print(stderr, "{}\n", line);
}

void Progress::finish(const std::string& status) {
  const double elapsed =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start_).count();
  if (terminal_) fmt::print(stderr, "\r{:<100}\r", "");
  fmt::print(stderr, "{} steps in {:.1f}s: {}\n", total_, elapsed, status);
}

}  // namespace gf::cli
