#include "training/choices.h"

#include <array>
#include <utility>

namespace gf::training {

namespace {

template <typename Kind, size_t N>
using Names = std::array<std::pair<Kind, std::string_view>, N>;

constexpr Names<Task, 5> kTasks = {{{Task::Copy, "copy"},
                                    {Task::Reverse, "reverse"},
                                    {Task::Translate, "translate"},
                                    {Task::ToyTranslation, "toy-translation"},
                                    {Task::LanguageModel, "lm"}}};
constexpr Names<TokenizerKind, 3> kTokenizers = {
    {{TokenizerKind::Bpe, "bpe"}, {TokenizerKind::Word, "word"}, {TokenizerKind::Char, "char"}}};
constexpr Names<OptimizerKind, 2> kOptimizers = {
    {{OptimizerKind::Adam, "adam"}, {OptimizerKind::Sgd, "sgd"}}};
constexpr Names<ScheduleKind, 3> kSchedules = {{{ScheduleKind::Noam, "noam"},
                                                {ScheduleKind::Cosine, "cosine"},
                                                {ScheduleKind::Constant, "constant"}}};
constexpr Names<data::ToySplit, 3> kSplits = {{{data::ToySplit::Random, "random"},
                                               {data::ToySplit::Compositional, "compositional"},
                                               {data::ToySplit::Length, "length"}}};

template <typename Kind, size_t N>
std::string_view name_in(const Names<Kind, N>& names, Kind kind) {
  for (const auto& [k, name] : names)
    if (k == kind) return name;
  return "?";
}

template <typename Kind, size_t N>
std::optional<Kind> kind_in(const Names<Kind, N>& names, std::string_view name) {
  for (const auto& [k, n] : names)
    if (n == name) return k;
  return std::nullopt;
}

}  // namespace

std::string_view name_of(Task task) {
  return name_in(kTasks, task);
}
std::string_view name_of(TokenizerKind kind) {
  return name_in(kTokenizers, kind);
}
std::string_view name_of(OptimizerKind kind) {
  return name_in(kOptimizers, kind);
}
std::string_view name_of(ScheduleKind kind) {
  return name_in(kSchedules, kind);
}
std::string_view name_of(data::ToySplit split) {
  return name_in(kSplits, split);
}

std::optional<Task> task_named(std::string_view name) {
  return kind_in(kTasks, name);
}
std::optional<TokenizerKind> tokenizer_named(std::string_view name) {
  return kind_in(kTokenizers, name);
}
std::optional<OptimizerKind> optimizer_named(std::string_view name) {
  return kind_in(kOptimizers, name);
}
std::optional<ScheduleKind> schedule_named(std::string_view name) {
  return kind_in(kSchedules, name);
}
std::optional<data::ToySplit> toy_split_named(std::string_view name) {
  return kind_in(kSplits, name);
}

bool is_text(Task task) {
  return task == Task::Translate || task == Task::ToyTranslation;
}

bool is_tokenized(Task task) {
  return is_text(task) || task == Task::LanguageModel;
}

}  // namespace gf::training
