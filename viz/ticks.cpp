#include "viz/ticks.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>

namespace gf::viz {

double nice_step(double lo, double hi, int target) {
  if (!(hi > lo) || !std::isfinite(lo) || !std::isfinite(hi)) return 1.0;
  const double raw = (hi - lo) / std::max(target, 1);
  const double magnitude = std::pow(10.0, std::floor(std::log10(raw)));
  const double fraction = raw / magnitude;  // in [1, 10)
  const double round = fraction < 1.5 ? 1.0 : fraction < 3.0 ? 2.0 : fraction < 7.0 ? 5.0 : 10.0;
  return round * magnitude;
}

std::vector<double> multiples(double step, double lo, double hi) {
  if (!(step > 0.0) || !std::isfinite(lo) || !std::isfinite(hi)) return {};
  if ((hi - lo) / step > 1000) return {};  // not ticks any more: a caller's mistake
  // k * step for whole k rather than a running sum, so rounding errors do not pile up along
  // the axis; the tolerance keeps an end that is itself a multiple (1.0 = 5 x 0.2) inside.
  const double tolerance = 1e-9;
  std::vector<double> ticks;
  for (double k = std::ceil(lo / step - tolerance); k <= std::floor(hi / step + tolerance); ++k)
    ticks.push_back(k == 0.0 ? 0.0 : k * step);
  return ticks;
}

std::vector<double> nice_ticks(double lo, double hi, int target) {
  if (!(hi > lo)) return {lo};
  return multiples(nice_step(lo, hi, target), lo, hi);
}

std::vector<double> log_ticks(double lo, double hi) {
  if (!(lo > 0.0) || !(hi >= lo)) return {};
  const double tolerance = 1e-9;
  const int first = static_cast<int>(std::floor(std::log10(lo)));
  const int last = static_cast<int>(std::ceil(std::log10(hi)));
  const bool wide = std::log10(hi) - std::log10(lo) >= 2.0;
  const int stride = std::max(1, (last - first) / 8);  // at most about eight labelled decades
  std::vector<double> ticks;
  for (int e = first; e <= last; ++e) {
    if (wide && (e - first) % stride != 0) continue;
    for (double m : {1.0, 2.0, 5.0}) {
      if (wide && m != 1.0) continue;
      const double v = m * std::pow(10.0, e);
      if (v >= lo * (1 - tolerance) && v <= hi * (1 + tolerance)) ticks.push_back(v);
    }
  }
  return ticks;
}

std::string format_tick(double value, double step) {
  if (std::abs(value) < 1e-12 * std::max(1.0, std::abs(step))) value = 0.0;  // no "-0"
  const double size = std::abs(value);
  if (size != 0.0 && (size >= 1e6 || size < 1e-4)) return fmt::format("{:g}", value);
  const int decimals = std::clamp(static_cast<int>(-std::floor(std::log10(step) + 1e-9)), 0, 6);
  return fmt::format("{:.{}f}", value, decimals);
}

}  // namespace gf::viz
