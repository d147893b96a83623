// A run's settings as one line of text, "task=copy&heads=1&norm=pre", for what has no command
// line: the browser edition's page and the links to its presets (a URL fragment). Each key is a
// flag of `transformer train` without its dashes, with the flag's values, so a setting reads the
// same in a link as in a command:
//
//   task copy|reverse|toy-translation   split random|compositional|length   length  min-length
//   batch  batch-tokens  tokenizer bpe|word|char  vocab-size
//   layers  d-model  d-ff  heads  max-len  dropout  tied true|false  norm post|pre
//   positions sinusoidal|learned
//   optimizer adam|sgd  schedule noam|cosine|constant  lr  warmup  label-smoothing  clip
//   steps  seed  eval-every  eval-count
//
// (norm=pre is the command's --norm-first.) Files (--data, --init, --save, ...) are not among
// them: a page has none. What settle() then checks (training/run_config.h) is checked there.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "training/run_config.h"

namespace gf::training {

// The settings of options; a key not given stays not given, as a flag left out. Throws
// std::invalid_argument naming the key and the text for an unknown key, a value that is not
// one, or a pair without '='. Empty parts ("a=1&&b=2", a trailing '&') are skipped.
RunConfig run_config_from_options(std::string_view options);

// The keys it reads, in the order above.
std::vector<std::string> run_option_keys();

}  // namespace gf::training
