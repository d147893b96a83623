// Memory stays flat while training: every step's graph is released when its loss goes, and
// nothing the step makes outlives it (no cycles between tensors and the nodes that made them).
// Measured the way a learner would notice a leak: the process's resident memory.
#include <unistd.h>

#include <catch2/catch.hpp>
#include <cstdint>
#include <fstream>

#include "autograd/graph.h"
#include "autograd/ops.h"
#include "autograd/sanitizers.h"
#include "data/batch.h"
#include "data/tasks.h"
#include "models/transformer.h"
#include "nn/optim.h"

using namespace gf;

namespace {

// Resident set size in MiB, from /proc/self/statm (its second field, in pages).
double resident_mib() {
  std::ifstream statm("/proc/self/statm");
  int64_t size = 0, resident = 0;
  statm >> size >> resident;
  return static_cast<double>(resident) * static_cast<double>(sysconf(_SC_PAGESIZE)) /
         (1024.0 * 1024.0);
}

// AddressSanitizer parks freed memory in a quarantine (256 MB by default) to catch uses after
// free, so there resident memory grows until the quarantine is full whatever the program
// does; that build checks for leaks with LeakSanitizer instead.
constexpr bool kResidentMemoryMeansLeaks = !kAddressSanitizer;

}  // namespace

TEST_CASE("training for many steps keeps resident memory and the tape flat", "[models][memory]") {
  Rng rng(1);
  Transformer model({.vocab_size = 11,
                     .d_model = 32,
                     .d_ff = 64,
                     .heads = 2,
                     .encoder_layers = 2,
                     .decoder_layers = 2,
                     .max_len = 32,
                     .dropout = 0.1f},
                    rng);
  nn::Adam adam(model.parameters(), {.lr = 1e-3f});
  const data::TaskConfig task{.vocab_size = 11, .min_len = 4, .max_len = 12};
  Rng data_rng(2);
  const auto step = [&] {
    const data::Batch batch =
        data::make_batch(data::generate(data::Task::Copy, 32, task, data_rng));
    const Tensor loss = cross_entropy(model.forward(batch.src, batch.tgt_in), batch.tgt_out,
                                      {.ignore_index = data::kPad});
    model.zero_grad();
    loss.backward();
    adam.step();
  };
  // Warm up: the first steps allocate the buffers that every later step reuses.
  for (int i = 0; i < 30; ++i) step();
  const double before = resident_mib();
  for (int i = 0; i < 300; ++i) step();
  const double after = resident_mib();
  INFO("resident memory " << before << " MiB after 30 steps, " << after << " MiB after 330");
  // A leak of even one activation per step ([32, 12, 32] floats, 48 KiB) would add 14 MiB.
  if (kResidentMemoryMeansLeaks) CHECK(after - before < 4.0);
  // Between steps nothing of the tape is left: the parameters carry no history.
  for (const Tensor& p : model.parameters()) CHECK(!p.impl_ptr()->grad_fn);
}
