// `transformer generate`: write a generated corpus as files a learner can read and train on,
// like any other tab-separated sentence pairs.
#include <fmt/format.h>
#include <fmt/ranges.h>

#include <filesystem>

#include "cli/commands.h"
#include "data/toy_language.h"

namespace gf::cli {

int run_generate(const GenerateOptions& options) {
  const data::ToyLanguageConfig config{.split = data::parse_toy_split(options.split),
                                       .train = options.train,
                                       .dev = options.dev,
                                       .test = options.test};
  Rng rng(options.seed);
  const data::ToyCorpus corpus = data::generate_toy_corpus(config, rng);

  const std::filesystem::path dir(options.out);
  std::filesystem::create_directories(dir);
  const auto write = [&](const char* name, const std::vector<data::AlignedPair>& pairs) {
    data::write_aligned_tsv(dir / name, pairs);
    fmt::print("wrote {} ({} pairs)\n", (dir / name).string(), pairs.size());
  };
  write("train.tsv", corpus.train);
  write("dev.tsv", corpus.dev);
  write("test.tsv", corpus.test);
  if (!corpus.held_out.empty())
    fmt::print("held out of train and dev, in every test sentence: {}\n",
               fmt::join(corpus.held_out, ", "));
  fmt::print("columns: source, target, alignment (SOURCE-TARGET word indices, from 0)\n");
  return 0;
}

}  // namespace gf::cli
