// `transformer sample`: text from a decoder-only model trained with `train --task lm`, the
// prompt continued token by token, each drawn from the model's distribution as reshaped by the
// temperature, top-k and top-p (models/sample.h).
#include <fmt/format.h>

#include <stdexcept>

#include "cli/commands.h"
#include "training/evaluate.h"
#include "training/model_file.h"

namespace gf::cli {

// Each sample on stdout, the prompt first; samples are separated by an empty line.
int run_sample(const SampleOptions& o) {
  training::ModelAndTokenizer lm = training::load_model_and_tokenizer(o.ckpt);
  if (!lm.model->config.decoder_only())
    throw std::invalid_argument(fmt::format(
        "{} holds an encoder-decoder, which translates (transformer translate); sample reads a "
        "decoder-only model, trained with transformer train --task lm",
        o.ckpt));
  if (!lm.tokenizer)
    throw std::invalid_argument(
        fmt::format("{} holds no tokenizer, so it has no text to write", o.ckpt));
  const std::vector<std::string> texts = training::sample_texts(*lm.model, *lm.tokenizer, o.prompt,
                                                                {.length = o.length,
                                                                 .temperature = o.temperature,
                                                                 .top_k = o.top_k,
                                                                 .top_p = o.top_p,
                                                                 .stop_at_eos = true},
                                                                o.seed, o.count);
  for (size_t i = 0; i < texts.size(); ++i) fmt::print("{}{}\n", i > 0 ? "\n" : "", texts[i]);
  return 0;
}

}  // namespace gf::cli
