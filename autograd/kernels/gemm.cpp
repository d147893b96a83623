// gemm(): the one entry point every op calls. It checks the arguments once, then hands them to
// the backend chosen with set_gemm_backend (blocked by default, see gemm.h).
#include "autograd/kernels/gemm.h"

#include <fmt/format.h>

#include <atomic>
#include <stdexcept>

#include "autograd/kernels/cpu.h"
#include "autograd/kernels/gemm_log.h"

namespace gf::kernels {
namespace {

// Atomic, so that switching it while another thread calls gemm() is not a data race.
std::atomic<GemmBackend> current_backend{GemmBackend::Blocked};
std::atomic<GemmPrecision> current_precision{GemmPrecision::Float32};

}  // namespace

void set_gemm_backend(GemmBackend backend) {
  if (backend == GemmBackend::Blas && !have_blas())
    throw std::invalid_argument(
        "set_gemm_backend: backend blas is not available (this build has no BLAS; install "
        "libopenblas-dev and reconfigure)");
  current_backend.store(backend);
}

GemmBackend gemm_backend() {
  return current_backend.load();
}

std::string_view to_string(GemmBackend backend) {
  switch (backend) {
    case GemmBackend::Naive:
      return "naive";
    case GemmBackend::Blocked:
      return "blocked";
    case GemmBackend::Blas:
      return "blas";
  }
  return "unknown";
}

bool have_bfloat16() {
#if defined(__AVX512BF16__) && defined(__AVX512F__)
  return true;
#else
  return false;
#endif
}

void set_gemm_precision(GemmPrecision precision) {
  if (precision == GemmPrecision::BFloat16 && !have_bfloat16())
    throw std::invalid_argument(
        "set_gemm_precision: bfloat16 products need a CPU with AVX512-BF16 and a build for it "
        "(GRADFORMER_NATIVE=ON, the default, on that CPU); this build multiplies in float32 "
        "only");
  current_precision.store(precision);
}

GemmPrecision gemm_precision() {
  return current_precision.load();
}

std::string_view to_string(GemmPrecision precision) {
  return precision == GemmPrecision::BFloat16 ? "bfloat16" : "float32";
}

LeadingDims leading_dims(const GemmArgs& args) {
  const int64_t a_row = args.trans_a ? args.m : args.k, b_row = args.trans_b ? args.k : args.n;
  return {args.lda != 0 ? args.lda : a_row, args.ldb != 0 ? args.ldb : b_row,
          args.ldc != 0 ? args.ldc : args.n};
}

void gemm(const GemmArgs& args) {
  const int64_t m = args.m, n = args.n, k = args.k;
  if (m < 0 || n < 0 || k < 0)
    throw std::invalid_argument(
        fmt::format("gemm: sizes must not be negative (m = {}, n = {}, k = {})", m, n, k));
  // A matrix with no elements is never read, so its pointer may be null.
  const auto require = [&](const void* pointer, int64_t elements, const char* name) {
    if (pointer == nullptr && elements > 0)
      throw std::invalid_argument(
          fmt::format("gemm: {} is null but holds {} elements (m = {}, n = {}, k = {})", name,
                      elements, m, n, k));
  };
  require(args.a, m * k, "a");
  require(args.b, k * n, "b");
  require(args.c, m * n, "c");
  const auto check_ld = [&](int64_t ld, int64_t row, const char* name) {
    if (ld != 0 && ld < row)
      throw std::invalid_argument(fmt::format(
          "gemm: {} = {} is shorter than a stored row of {} floats (m = {}, n = {}, k = {})", name,
          ld, row, m, n, k));
  };
  check_ld(args.lda, args.trans_a ? m : k, "lda");
  check_ld(args.ldb, args.trans_b ? k : n, "ldb");
  check_ld(args.ldc, n, "ldc");
  if (detail::gemm_log_on.load(std::memory_order_relaxed)) detail::log_gemm(args);

  // Every backend computes with subnormals flushed, on the caller as on the pool's workers
  // (cpu.h): the same mode on every thread gives the same bits whoever computes a tile.
  FlushDenormals flushed;
  switch (gemm_backend()) {
    case GemmBackend::Naive:
      return gemm_naive(args);
    case GemmBackend::Blocked:
      return gemm_blocked(args);
    case GemmBackend::Blas:
      return gemm_blas(args);
  }
}

}  // namespace gf::kernels
