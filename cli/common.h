// Pieces the subcommands share: loading and saving a model with its configuration, reading
// id lists from the command line, labels for token ids, and the progress bar.
#pragma once

#include <chrono>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "data/tokenizer.h"
#include "models/transformer.h"

namespace gf::cli {

// A model rebuilt from a checkpoint: the configuration from its metadata, then the weights.
// A checkpoint does not store dropout (a loaded model is for inference), so a model loaded to
// train on passes its rate, and the seed of the generator that draws its masks.
std::unique_ptr<Transformer> load_model(const std::string& path, float dropout = 0.0f,
                                        uint64_t seed = 0);
// A model trained on text also stores its tokenizer, as JSON under the metadata key
// "tokenizer" (data/tokenizer.h), so that the checkpoint alone turns text into text.
void save_model(const std::string& path, const Transformer& model,
                const data::Tokenizer* tokenizer = nullptr);

// A model with the tokenizer it was trained with (none for a model trained on ids).
struct Translator {
  std::unique_ptr<Transformer> model;
  std::unique_ptr<data::Tokenizer> tokenizer;  // null when the checkpoint holds none
};
// Throws FormatError for a tokenizer whose size is not the model's vocabulary; dropout and
// seed as for load_model.
Translator load_model_and_tokenizer(const std::string& path, float dropout = 0.0f,
                                    uint64_t seed = 0);
// The same, and throws FormatError when the checkpoint holds no tokenizer.
Translator load_translator(const std::string& path, float dropout = 0.0f, uint64_t seed = 0);

// "5 6 7 2" -> {5, 6, 7, 2}. Throws std::invalid_argument naming `what` for anything else.
std::vector<int32_t> parse_ids(const std::string& text, const std::string& what);

// The target the decoder reads for the model's own translation of src: <s>, the greedy output,
// </s>. What `attention` and `report` draw when no target is given.
std::vector<int32_t> own_translation(Transformer& model, const std::vector<int32_t>& src);

// path with its extension replaced: ("runs/copy.safetensors", ".loss.png") -> "runs/copy.loss.png"
std::string beside(const std::string& path, const std::string& suffix);

// A one-line progress bar on stderr, redrawn at most ten times a second when stderr is a
// terminal, and a plain line every tenth of the run otherwise (logs stay readable).
class Progress {
 public:
  explicit Progress(int64_t total);
  void update(int64_t done, const std::string& status);
  // A message line between updates: on a terminal it takes the bar's place (the bar comes
  // back below it), in a log it is just the next line.
  void note(const std::string& line);
  void finish(const std::string& status);

 private:
  int64_t total_;
  bool terminal_;
  std::chrono::steady_clock::time_point start_, last_draw_;
  int64_t last_logged_ = -1;
};

}  // namespace gf::cli
