// A run's page (viz/run_page.h) from what its checkpoint and training state hold: shared by
// `transformer train`, which adds what only the run knows (its data, samples with references),
// and `transformer report`, which adds the attention of the sentences it is given.
#pragma once

#include <span>
#include <string>

#include "models/transformer.h"
#include "nn/safetensors.h"
#include "training/run_page.h"
#include "viz/run_page.h"

namespace gf::cli {

// The title, the settings (the model's and the run's options), the data's settings, the
// curves, the timings and the attention snapshots.
viz::RunPage run_page_of(const std::string& checkpoint, const Transformer& model,
                         const nn::Metadata& options, std::span<const float> losses,
                         std::span<const float> rates, const training::PageHistory& history);

}  // namespace gf::cli
