// The kinds a training run chooses between, and their names, which are the values of the
// `transformer train` flags that choose them (--task toy-translation, --schedule cosine).
#pragma once

#include <optional>
#include <string_view>

#include "data/toy_language.h"

namespace gf::training {

// What a run trains on: generated ids (copy, reverse), sentence pairs from files (translate),
// the generated toy language (toy_translation), or a text whose next tokens a decoder-only model
// learns to predict (lm, "language model"). An id file (RunConfig::pairs) replaces the
// generated ids of copy and reverse.
enum class Task { Copy, Reverse, Translate, ToyTranslation, LanguageModel };
enum class TokenizerKind { Bpe, Word, Char };
enum class OptimizerKind { Adam, Sgd };
// noam: §5.3's warm-up then 1/sqrt(step); cosine: warm-up, then half a cosine to zero at the
// planned last step; constant.
enum class ScheduleKind { Noam, Cosine, Constant };
// Where each sub-layer's LayerNorm goes: after the residual sum (the paper's, §3.1) or before
// the sub-layer.
enum class NormPlacement { PostNorm, PreNorm };
enum class PositionKind { Sinusoidal, Learned };

// Each enum's names are its flag values: "copy", "toy-translation", "bpe", "adam", "noam", ...
std::string_view name_of(Task task);
std::string_view name_of(TokenizerKind kind);
std::string_view name_of(OptimizerKind kind);
std::string_view name_of(ScheduleKind kind);
std::string_view name_of(data::ToySplit split);
// The inverses; std::nullopt for a name that is none of them.
std::optional<Task> task_named(std::string_view name);
std::optional<TokenizerKind> tokenizer_named(std::string_view name);
std::optional<OptimizerKind> optimizer_named(std::string_view name);
std::optional<ScheduleKind> schedule_named(std::string_view name);
std::optional<data::ToySplit> toy_split_named(std::string_view name);

bool is_text(Task task);       // translate and toy-translation: sentence pairs through a tokenizer
bool is_tokenized(Task task);  // is_text, or lm: a tokenizer turns text into the model's ids

}  // namespace gf::training
