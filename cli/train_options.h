// The options of `transformer train`: their checks, and the ones a resumed run keeps.
#pragma once

#include <string>

#include "cli/commands.h"
#include "nn/safetensors.h"
#include "training/recipe.h"
#include "training/resume.h"

namespace gf::cli {

// --task translate or toy-translation: sentence pairs through a tokenizer.
bool is_text_task(const TrainOptions& options);

// --task translate on real sentence pairs: every setting of the recipe (training/recipe.h)
// whose flag was not given. Returns the settings it chose, as a line for the user.
std::string apply_recipe(const training::TextRecipe& recipe, TrainOptions& options);

// Throws std::invalid_argument naming the first flag whose value cannot be used.
void validate(const TrainOptions& options);

// --resume: reads the training state beside the checkpoint, and takes the options the run
// keeps from it (throwing std::invalid_argument for a flag given with another value).
training::TrainState read_resume(TrainOptions& options);

// The options that fix the data, the optimizer and the schedule, by flag name without dashes
// ("lr" -> "0.5"). A resumed run keeps them: changing one would not continue the same run.
nn::Metadata kept_options(const TrainOptions& options);
// Puts the saved values into options. Throws std::invalid_argument when a flag given on the
// command line (options.given) asks for another value, FormatError when one is missing.
void apply_kept_options(const nn::Metadata& saved, TrainOptions& options, const std::string& path);

}  // namespace gf::cli
