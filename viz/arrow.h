// Straight lines and arrows for diagrams (the block diagram of lesson 07): a line of any
// width and direction, and an arrow, the same line ending in a filled triangular head whose
// tip is the end point. Coordinates are points of the image plane, in which pixel (i, j) is
// the unit square [i, i + 1) x [j, j + 1): a vertical line at x = 10 of width 2 covers the
// pixel columns 9 and 10 exactly. Edges are antialiased (a pixel is blended by the fraction
// of its 4 x 4 sample points inside the shape); pixels outside the image are clipped.
#pragma once

#include "viz/png.h"

namespace gf::viz {

struct ArrowStyle {
  float width = 2.0f;         // of the shaft, in pixels
  float head_length = 10.0f;  // from the tip back to the base of the head
  float head_width = 10.0f;   // of the head's base
};

// The line (x0, y0)-(x1, y1), `width` pixels wide, with square ends: it reaches width / 2
// past each end point, so two lines that meet at a corner join without a notch.
void draw_line(Image& image, float x0, float y0, float x1, float y1, Rgb colour,
               float width = 2.0f);

// An arrow from (x0, y0) to the tip (x1, y1): a square end at the start, a head at the tip.
// An arrow of length 0 has no direction and draws nothing.
void draw_arrow(Image& image, float x0, float y0, float x1, float y1, Rgb colour,
                ArrowStyle style = {});

}  // namespace gf::viz
