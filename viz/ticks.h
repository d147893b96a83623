// Tick values for axes and colour bars: round numbers a reader takes in at a glance,
// multiples of 1, 2 or 5 times a power of ten (0, 0.2, 0.4 ... rather than 0, 0.17, 0.34 ...).
#pragma once

#include <string>
#include <vector>

namespace gf::viz {

// The round step (1, 2 or 5 x 10^k) that cuts [lo, hi] into about `target` intervals.
// Returns 1 when hi <= lo or either is not finite.
double nice_step(double lo, double hi, int target = 5);

// Every multiple of step inside [lo, hi], in increasing order: multiples(0.25, 0, 1) is
// {0, 0.25, 0.5, 0.75, 1}. Empty when step is not positive.
std::vector<double> multiples(double step, double lo, double hi);

// multiples(nice_step(lo, hi, target), lo, hi): nice_ticks(0, 1) is {0, 0.2, 0.4, 0.6, 0.8, 1}.
// A degenerate range gives {lo}.
std::vector<double> nice_ticks(double lo, double hi, int target = 5);

// Ticks for a logarithmic axis over [lo, hi], both positive: the powers of ten inside it,
// or 1, 2 and 5 times them when the range spans less than about two decades.
std::vector<double> log_ticks(double lo, double hi);

// value as a tick label with the decimals that step needs: format_tick(0.4, 0.2) is "0.4",
// format_tick(100, 50) is "100"; very large or small values use exponent notation ("1e-05").
std::string format_tick(double value, double step);

}  // namespace gf::viz
