// Draws a training run's page from the JSON in #run-data (docs/run-page.md): the facts, the
// curves, the samples and the attention explorer. Plain JavaScript and SVG, nothing loaded
// from elsewhere. Errors are not caught: a page that cannot draw should say so in the
// console, where the browser test looks.
"use strict";

// `let`: a page inside the playground gets its run's data again as it trains (refresh, below).
let RUN = JSON.parse(document.getElementById("run-data").textContent);

// The SVG namespace, taken from an <svg> the HTML parser made, so that the page holds no
// address at all.
const SVG_NS = document.getElementById("matrix").namespaceURI;

// ---- Building blocks ------------------------------------------------------------------------

function html(tag, attributes = {}, ...children) {
  const element = document.createElement(tag);
  setAttributes(element, attributes);
  element.append(...children);
  return element;
}

function svg(tag, attributes = {}, ...children) {
  const element = document.createElementNS(SVG_NS, tag);
  setAttributes(element, attributes);
  element.append(...children);
  return element;
}

function setAttributes(element, attributes) {
  for (const [name, value] of Object.entries(attributes)) {
    if (name === "text") element.textContent = value;
    else if (name === "class") element.setAttribute("class", value);
    else element.setAttribute(name, value);
  }
}

function clear(element) {
  element.replaceChildren();
}

// The smallest and largest of many numbers; Math.min(...values) would overflow the stack on
// a long run's hundreds of thousands of points.
function extent(values) {
  let lo = Infinity, hi = -Infinity;
  for (const v of values) {
    if (v < lo) lo = v;
    if (v > hi) hi = v;
  }
  return [lo, hi];
}

function clamp(value, lo, hi) {
  return Math.min(hi, Math.max(lo, value));
}

// Text widths for laying out labels, measured with the page's own font.
// The font is looked up once: asking for the computed style per label would cost a style
// recalculation each time.
const measureContext = document.createElement("canvas").getContext("2d");
let measureFamily = null;
function textWidth(text, size) {
  measureFamily ??= getComputedStyle(document.body).fontFamily;
  measureContext.font = `${size}px ${measureFamily}`;
  return measureContext.measureText(text).width;
}

// Long tokens are cut so that one of them cannot push a matrix off the screen; the full
// token stays in a tooltip.
function shortLabel(token, maxChars = 14) {
  const characters = Array.from(token);
  return characters.length <= maxChars ? token : characters.slice(0, maxChars - 1).join("") + "…";
}

// Numbers for people: at most four significant digits, exponents for the very large and
// very small.
function formatNumber(value) {
  if (value === null || value === undefined || !Number.isFinite(value)) return "–";
  if (value === 0) return "0";
  const magnitude = Math.abs(value);
  if (magnitude >= 1e6 || magnitude < 1e-3) return value.toExponential(2).replace(/\.?0+e/, "e");
  return String(Number(value.toPrecision(4)));
}

// ---- Tooltip --------------------------------------------------------------------------------

const tooltip = document.getElementById("tooltip");

function showTooltip(text, clientX, clientY) {
  tooltip.textContent = text;
  tooltip.hidden = false;
  // Right of and below the pointer, flipped when that would leave the window.
  const box = tooltip.getBoundingClientRect();
  const x = clientX + 14 + box.width > window.innerWidth ? clientX - 14 - box.width : clientX + 14;
  const y = clientY + 14 + box.height > window.innerHeight ? clientY - 14 - box.height : clientY + 14;
  tooltip.style.left = `${Math.max(0, x)}px`;
  tooltip.style.top = `${Math.max(0, y)}px`;
}

function hideTooltip() {
  tooltip.hidden = true;
}

// ---- Colours --------------------------------------------------------------------------------

// Viridis, from nine control points (as viz/heatmap.cpp): lightness rises steadily from 0 to
// 1, so that the weights read the same in colour and in grey.
const VIRIDIS_POINTS = [
  [68, 1, 84], [71, 44, 122], [59, 81, 139], [44, 113, 142], [33, 144, 141],
  [39, 173, 129], [92, 200, 99], [170, 220, 50], [253, 231, 37],
];

function viridisRgb(t) {
  const position = clamp(t, 0, 1) * (VIRIDIS_POINTS.length - 1);
  const i = Math.min(Math.floor(position), VIRIDIS_POINTS.length - 2);
  const f = position - i;
  return VIRIDIS_POINTS[i].map((c, k) => Math.round(c + (VIRIDIS_POINTS[i + 1][k] - c) * f));
}

// Weights come in thousandths, so 1001 colours cover them all; computed once.
const VIRIDIS = Array.from({ length: 1001 }, (_, w) => viridisRgb(w / 1000));
const VIRIDIS_CSS = VIRIDIS.map(([r, g, b]) => `rgb(${r},${g},${b})`);
const MASKED_RGB = [234, 238, 242];  // decoder cells a query may not see
const MASKED_CSS = "rgb(234,238,242)";

// One colour per head (the category10 palette), then evenly spaced hues.
const HEAD_COLOURS = ["#1f77b4", "#ff7f0e", "#2ca02c", "#d62728", "#9467bd", "#8c564b",
  "#e377c2", "#17becf", "#bcbd22", "#7f7f7f"];
function headColour(head) {
  if (head < HEAD_COLOURS.length) return HEAD_COLOURS[head];
  return `hsl(${(head * 137.5) % 360}, 65%, 45%)`;
}

// Curves take the same colours as heads; the first three are blue, orange and green.
const seriesColour = headColour;

// The colour of each series of a curve: the palette's in turn, but a faint series (each step's
// loss) takes the colour of the series drawn after it (their moving average).
function seriesColours(curve) {
  let next = 0;
  const own = curve.series.map((s) => (s.faint ? null : seriesColour(next++)));
  const colours = [];
  let after = seriesColour(0);
  for (let i = own.length - 1; i >= 0; --i) {
    if (own[i]) after = own[i];
    colours[i] = own[i] ?? after;
  }
  return colours;
}

// ---- Facts ----------------------------------------------------------------------------------

function factsList(facts) {
  const list = html("dl", { class: facts.length > 8 ? "facts two-columns" : "facts" });
  for (const [name, value] of facts) {
    list.append(html("div", {}, html("dt", { text: name }), html("dd", { text: value })));
  }
  return list;
}

function drawFacts() {
  for (const id of ["configuration", "data", "timings"]) {  // all but the card's heading
    for (const child of [...document.getElementById(id).children]) if (child.tagName !== "H2") child.remove();
  }
  const cards = [
    ["configuration", RUN.configuration, "No configuration recorded."],
    ["data", RUN.data, "No data facts recorded."],
    ["timings", RUN.timings, "No timings recorded."],
  ];
  for (const [id, facts, empty] of cards) {
    const card = document.getElementById(id);
    if (facts.length > 0) card.append(factsList(facts));
    else if (id !== "data" || RUN.data_examples.length === 0) card.append(html("p", { class: "note", text: empty }));
  }
  if (RUN.data_examples.length > 0) {
    const table = html("table", { class: "examples" });
    for (const [source, target] of RUN.data_examples) {
      table.append(html("tr", {},
        html("td", { text: source, title: source }),
        html("td", { class: "arrow", text: "→" }),
        html("td", { text: target, title: target })));
    }
    document.getElementById("data").append(html("h3", { text: "Examples" }), table);
  }
}

// ---- Axes -----------------------------------------------------------------------------------

// Round tick values (1, 2 or 5 times a power of ten) spanning [lo, hi], about `count` of them.
function linearTicks(lo, hi, count = 5) {
  if (lo === hi) {
    const pad = lo === 0 ? 1 : Math.abs(lo) * 0.1;
    return linearTicks(lo - pad, hi + pad, count);
  }
  const rough = (hi - lo) / count;
  const power = Math.pow(10, Math.floor(Math.log10(rough)));
  const step = [1, 2, 5, 10].map((m) => m * power).find((s) => s >= rough);
  const first = Math.floor(lo / step + 1e-9) * step;
  const ticks = [];
  for (let v = first; v <= hi + step * (1 - 1e-9); v += step) ticks.push(Number(v.toPrecision(12)));
  return { ticks, lo: ticks[0], hi: ticks[ticks.length - 1], step };
}

// Ticks of a logarithmic axis: powers of ten, with 2 and 5 between them when the range
// spans few decades, or round linear values inside one decade.
function logTicks(lo, hi) {
  const lowPower = Math.floor(Math.log10(lo));
  const highPower = Math.ceil(Math.log10(hi));
  const decades = highPower - lowPower;
  if (decades <= 1) {
    const linear = linearTicks(lo, hi, 4).ticks.filter((t) => t > 0 && t >= lo && t <= hi);
    return { ticks: linear, lo, hi };
  }
  const multiples = decades <= 3 ? [1, 2, 5] : [1];
  const every = Math.ceil(decades / 8);  // at most about eight labelled powers
  const ticks = [];
  for (let p = lowPower; p <= highPower; p += 1) {
    for (const m of multiples) {
      const v = m * Math.pow(10, p);
      if (v >= lo && v <= hi && (m !== 1 || (p - lowPower) % every === 0)) ticks.push(v);
    }
  }
  return { ticks, lo, hi };
}

function tickLabel(value, step) {
  if (value === 0) return "0";
  const magnitude = Math.abs(value);
  if (magnitude >= 1e4 && value % 1000 === 0) return `${value / 1000}k`;
  if (magnitude >= 1e6 || magnitude < 1e-3) return value.toExponential(0);
  if (step !== undefined && step < 1) {
    const decimals = clamp(-Math.floor(Math.log10(step)), 0, 6);
    return value.toFixed(decimals);
  }
  return String(Number(value.toPrecision(6)));
}

// ---- Curves ---------------------------------------------------------------------------------

const CHART_HEIGHT = 250;
const CHART_MARGIN = { right: 14, top: 8, bottom: 38 };  // left: from the widest tick label

// The points a series can draw: finite, and positive on a log axis. A point it cannot draw
// breaks the line there.
function drawablePoints(series, logY) {
  return series.x.map((x, i) => {
    const y = series.y[i];
    const ok = x !== null && y !== null && (!logY || y > 0);
    return ok ? { x, y } : null;
  });
}

function curveScales(curve, seriesPoints, width) {
  const all = seriesPoints.flat().filter((p) => p !== null);
  const xs = all.map((p) => p.x), ys = all.map((p) => p.y);
  const [xLo, xHi] = extent(xs), [yLo, yHi] = extent(ys);
  const xTicks = linearTicks(xLo, xHi, Math.max(3, Math.round(width / 110)));
  let yAxis;
  if (curve.log_y) {
    const pad = (Math.log10(yHi) - Math.log10(yLo)) * 0.05 || 0.1;
    yAxis = logTicks(Math.pow(10, Math.log10(yLo) - pad), Math.pow(10, Math.log10(yHi) + pad));
  } else {
    yAxis = linearTicks(yLo, yHi, 5);
  }
  // Room for the y axis's title (18 pixels) and its widest tick label.
  const left = 26 + Math.ceil(Math.max(...yAxis.ticks.map((t) => textWidth(tickLabel(t, yAxis.step), 11))));
  const plotWidth = width - left - CHART_MARGIN.right;
  const plotHeight = CHART_HEIGHT - CHART_MARGIN.top - CHART_MARGIN.bottom;
  const yValue = curve.log_y ? Math.log10 : (v) => v;
  const x = (v) => left + ((v - xTicks.lo) / (xTicks.hi - xTicks.lo || 1)) * plotWidth;
  const y = (v) => CHART_MARGIN.top + plotHeight -
    ((yValue(v) - yValue(yAxis.lo)) / (yValue(yAxis.hi) - yValue(yAxis.lo) || 1)) * plotHeight;
  return { x, y, xTicks, yAxis, left, plotWidth, plotHeight };
}

function drawAxes(chart, curve, scales, width) {
  const { x, y, xTicks, yAxis } = scales;
  const bottom = CHART_MARGIN.top + scales.plotHeight;
  const right = width - CHART_MARGIN.right;
  for (const t of yAxis.ticks) {
    chart.append(svg("line", { class: "grid", x1: scales.left, x2: right, y1: y(t), y2: y(t) }));
    chart.append(svg("text", { x: scales.left - 6, y: y(t) + 4, "text-anchor": "end",
      text: tickLabel(t, yAxis.step) }));
  }
  for (const t of xTicks.ticks) {
    chart.append(svg("line", { class: "grid", x1: x(t), x2: x(t), y1: CHART_MARGIN.top, y2: bottom }));
    chart.append(svg("text", { x: x(t), y: bottom + 15, "text-anchor": "middle", text: tickLabel(t, xTicks.step) }));
  }
  chart.append(svg("line", { class: "axis", x1: scales.left, x2: right, y1: bottom, y2: bottom }));
  chart.append(svg("line", { class: "axis", x1: scales.left, x2: scales.left, y1: CHART_MARGIN.top, y2: bottom }));
  chart.append(svg("text", { class: "axis-label", x: scales.left + scales.plotWidth / 2,
    y: CHART_HEIGHT - 4, "text-anchor": "middle", text: curve.x_label }));
  const yLabel = curve.y_label + (curve.log_y ? " (log scale)" : "");
  chart.append(svg("text", { class: "axis-label", "text-anchor": "middle",
    transform: `translate(13 ${CHART_MARGIN.top + scales.plotHeight / 2}) rotate(-90)`, text: yLabel }));
}

// At most four points per pixel column (the first, lowest, highest and last there), so that
// a run logged at each of 100,000 steps draws as fast as one logged every 100, and looks the
// same: a column's line spans from its lowest to its highest point either way. Gaps stay.
function thinOut(points, scales) {
  if (points.length <= 4 * scales.plotWidth) return points;
  const kept = [];
  let bucket = [], column = null;
  const flush = () => {
    if (bucket.length === 0) return;
    const byY = [...bucket].sort((a, b) => a.y - b.y);
    const chosen = new Set([bucket[0], byY[0], byY[byY.length - 1], bucket[bucket.length - 1]]);
    kept.push(...bucket.filter((p) => chosen.has(p)));  // in their order along x
    bucket = [];
  };
  for (const p of points) {
    if (p === null) { flush(); kept.push(null); column = null; continue; }
    const c = Math.round(scales.x(p.x));
    if (c !== column) { flush(); column = c; }
    bucket.push(p);
  }
  flush();
  return kept;
}

// The SVG path of one series: a move at the start and after each gap, lines between.
function seriesPath(points, scales) {
  let d = "", pen = false;
  for (const p of points) {
    if (p === null) { pen = false; continue; }
    d += `${pen ? "L" : "M"}${scales.x(p.x).toFixed(1)} ${scales.y(p.y).toFixed(1)}`;
    pen = true;
  }
  return d;
}

function legend(curve) {
  const colours = seriesColours(curve);
  const items = curve.series.map((series, i) => {
    const last = [...series.y].reverse().find((v) => v !== null);
    return html("span", { class: series.faint ? "faint" : "" },
      html("span", { class: "swatch", style: `background:${colours[i]}` }),
      `${series.name} `, html("b", { text: formatNumber(last) }));
  });
  return html("div", { class: "legend" }, ...items);
}

// Hovering a chart marks the point nearest the pointer and shows its x and y.
function addCurveHover(chart, curve, seriesPoints, scales) {
  const pixels = [];
  seriesPoints.forEach((points, s) => points.forEach((p) => {
    if (p !== null) pixels.push({ s, p, px: scales.x(p.x), py: scales.y(p.y) });
  }));
  const dot = svg("circle", { class: "focus-dot", r: 4.5, visibility: "hidden" });
  chart.append(dot);
  chart.addEventListener("mousemove", (event) => {
    const point = new DOMPoint(event.clientX, event.clientY).matrixTransform(chart.getScreenCTM().inverse());
    let best = null, bestDistance = Infinity;
    for (const candidate of pixels) {
      const distance = (candidate.px - point.x) ** 2 + (candidate.py - point.y) ** 2;
      if (distance < bestDistance) { best = candidate; bestDistance = distance; }
    }
    if (best === null) return;
    setAttributes(dot, { cx: best.px, cy: best.py, fill: seriesColour(best.s), visibility: "visible" });
    const name = curve.series[best.s].name;
    showTooltip(`${name}\n${curve.x_label} ${formatNumber(best.p.x)}: ${formatNumber(best.p.y)}`,
      event.clientX, event.clientY);
  });
  chart.addEventListener("mouseleave", () => {
    dot.setAttribute("visibility", "hidden");
    hideTooltip();
  });
}

function drawCurve(curve, box, width) {
  const seriesPoints = curve.series.map((series) => drawablePoints(series, curve.log_y));
  if (!seriesPoints.some((points) => points.some((p) => p !== null))) {
    box.append(html("p", { class: "note", text: "No values to draw." }));
    return;
  }
  box.append(legend(curve));
  const chart = svg("svg", { class: "curve", width, height: CHART_HEIGHT, viewBox: `0 0 ${width} ${CHART_HEIGHT}` });
  box.append(chart);
  const scales = curveScales(curve, seriesPoints, width);
  const shownPoints = seriesPoints.map((points) => thinOut(points, scales));
  drawAxes(chart, curve, scales, width);
  const colours = seriesColours(curve);
  shownPoints.forEach((points, s) => {
    const colour = colours[s];
    const kind = curve.series[s].faint ? "series faint" : "series";
    chart.append(svg("path", { class: kind, "data-series": s, stroke: colour, d: seriesPath(points, scales) }));
    // Sparse series (a dev metric measured now and then) get a dot at each point.
    const drawn = points.filter((p) => p !== null);
    if (!curve.series[s].faint && drawn.length <= 40) {
      for (const p of drawn) {
        chart.append(svg("circle", { cx: scales.x(p.x), cy: scales.y(p.y), r: 2.5, fill: colour }));
      }
    }
  });
  addCurveHover(chart, curve, shownPoints, scales);
}

function drawCurves() {
  const container = document.getElementById("curves");
  clear(container);
  if (RUN.curves.length === 0) {
    markEmpty("curves-section", "No curves were recorded for this run.");
    return;
  }
  // Every chart's box first, then their widths (a box's width depends on how many share its
  // row; reading them all at once costs one layout), then the drawing.
  const boxes = RUN.curves.map((curve) => html("div", { class: "chart" }, html("h3", { text: curve.title })));
  container.append(...boxes);
  const widths = boxes.map((box) => Math.max(320, box.clientWidth));
  RUN.curves.forEach((curve, i) => drawCurve(curve, boxes[i], widths[i]));
}

function markEmpty(sectionId, message) {
  const section = document.getElementById(sectionId);
  if (section.classList.contains("empty")) return;
  section.classList.add("empty");
  section.append(html("p", { class: "note", text: message }));
}

// ---- Samples --------------------------------------------------------------------------------

function drawSamples() {
  if (RUN.samples.length === 0) {
    markEmpty("samples", "No samples were decoded for this run.");
    return;
  }
  const metric = RUN.sample_metric || "score";
  const scores = RUN.samples.map((s) => s.score).filter((v) => v !== null);
  const best = Math.max(1, ...scores);  // bars relative to 1, or to the best when above it
  const matches = (sample) => sample.reference !== "" && sample.output === sample.reference;
  const exact = RUN.samples.filter(matches).length;
  // Scores in [0, 1] (BLEU as a fraction, exact match) get three decimals, larger ones one.
  const decimals = extent(scores.map(Math.abs))[1] <= 1 ? 3 : 1;
  const formatScore = (score) => (score === null ? "–" : score.toFixed(decimals));
  const mean = scores.reduce((a, b) => a + b, 0) / Math.max(1, scores.length);
  // A page of `transformer report` decodes sentences that come without a reference: then
  // there is nothing to score or to match.
  document.getElementById("samples-summary").textContent = scores.length === 0
    ? `${RUN.samples.length} samples · ${metric}`
    : `${RUN.samples.length} samples · mean ${metric} ${formatScore(mean)} · ${exact} exactly right`;

  const table = html("table", { class: "samples" },
    html("thead", {}, html("tr", {},
      html("th", { text: "#" }), html("th", { text: "source" }), html("th", { text: "reference" }),
      html("th", { text: "output" }), html("th", { class: "score", text: metric }))));
  const body = html("tbody");
  RUN.samples.forEach((sample, i) => {
    const width = sample.score === null ? 0 : Math.round(clamp(sample.score / best, 0, 1) * 40);
    body.append(html("tr", { class: matches(sample) ? "sample exact" : "sample" },
      html("td", { class: "index", text: String(i + 1) }),
      html("td", { class: "source", text: sample.source }),
      html("td", { class: "reference", text: sample.reference }),
      html("td", { class: "output", text: sample.output }),
      html("td", { class: "score" }, html("span", { class: "score-bar", style: `width:${width}px` }),
        formatScore(sample.score))));
  });
  table.append(body);
  document.getElementById("samples").querySelector("table.samples")?.remove();
  document.getElementById("samples").append(table);
}

// ---- Attention: what there is -----------------------------------------------------------------

// The three uses of attention, and which tokens label a matrix's rows (queries) and columns
// (keys): see viz/run_page.h.
const KINDS = [
  { key: "encoder", name: "encoder self-attention", rows: "source_tokens", columns: "source_tokens",
    explain: "Each source token (row) gathers from every source token (column)." },
  { key: "decoder", name: "decoder self-attention", rows: "target_next", columns: "target_read",
    explain: "Row i is the decoder position that predicts the token shown; it reads the target " +
      "tokens up to its own position (the columns). Later positions are masked (grey)." },
  { key: "cross", name: "cross-attention", rows: "target_next", columns: "source_tokens",
    explain: "Each decoder position (row, labelled with the token it predicts) gathers from the " +
      "encoder's output for every source token (column): the model's alignment." },
];

// The examples and snapshots that have attention to show: a model's page may list a sentence
// whose maps are all empty (nothing to draw), which the menus then leave out.
let EXAMPLES = RUN.attention.filter((maps) => kindsIn(maps).length > 0);
let SNAPSHOTS = RUN.snapshots.filter((maps) => kindsIn(maps).length > 0);

function kindOf(key) {
  return KINDS.find((kind) => kind.key === key);
}

// The kinds that a set of maps (an example or a snapshot) has at least one layer of.
function kindsIn(maps) {
  return KINDS.filter((kind) => maps[kind.key].length > 0);
}

// A matrix, with what labels it, for one kind, layer and head of a set of maps.
function matrixOf(maps, kindKey, layer, head) {
  const kind = kindOf(kindKey);
  return {
    weights: maps[kindKey][layer][head],
    rowTokens: maps[kind.rows],
    columnTokens: maps[kind.columns],
    masked: kindKey === "decoder",
  };
}

// What the explorer shows, at first the cross-attention (the alignment the model learned). Both
// sections read it, so that they show the same kind, layer and head; `hiddenHeads` are the
// heads whose lines are switched off.
const state = { example: 0, kind: "cross", layer: 0, head: 0, snapshot: 0, hiddenHeads: new Set() };

// The state's kind, layer and head, brought within what `maps` has (another kind when it has
// none of that one).
function selectionIn(maps) {
  const kind = maps[state.kind].length > 0 ? state.kind : kindsIn(maps)[0].key;
  const layer = clamp(state.layer, 0, maps[kind].length - 1);
  const head = clamp(state.head, 0, maps[kind][layer].length - 1);
  return { kind, layer, head };
}

function fillSelect(select, options, value) {
  clear(select);
  for (const [optionValue, label] of options) select.append(html("option", { value: optionValue, text: label }));
  select.value = String(value);
}

// ---- Attention: the matrix view ------------------------------------------------------------

const LABEL_SIZE = 12;

function matrixLayout(matrix, maxSide) {
  const rows = matrix.rowTokens.length, columns = matrix.columnTokens.length;
  const cell = clamp(Math.floor(maxSide / Math.max(rows, columns, 1)), 8, 30);
  const fontSize = clamp(cell, 9, LABEL_SIZE);
  const widest = (tokens) => Math.max(0, ...tokens.map((t) => textWidth(shortLabel(t), fontSize)));
  const left = Math.ceil(widest(matrix.rowTokens)) + 24;
  // Column labels are turned 60 degrees, or upright where the cells are too narrow for that;
  // turned, they need less height than their width.
  const angle = cell < 16 ? 90 : 60;
  const top = Math.ceil(widest(matrix.columnTokens) * Math.sin((angle * Math.PI) / 180)) + 22;
  return { rows, columns, cell, fontSize, left, top, angle,
    width: left + columns * cell + 56, height: top + rows * cell + 8 };
}

// A vertical colour bar right of the cells, from 0 at the bottom to 1 at the top.
function colourBar(x, top, height) {
  const group = svg("g", { class: "colour-bar" });
  const steps = 24;
  for (let i = 0; i < steps; i += 1) {
    group.append(svg("rect", { x, y: top + (height * i) / steps, width: 10, height: height / steps + 0.5,
      fill: VIRIDIS_CSS[Math.round(1000 * (1 - (i + 0.5) / steps))] }));
  }
  for (const [value, label] of [[1, "1"], [0.5, "0.5"], [0, "0"]]) {
    group.append(svg("text", { x: x + 14, y: top + height * (1 - value) + 3, text: label }));
  }
  return group;
}

function matrixLabels(matrix, layout) {
  const group = svg("g", {});
  matrix.rowTokens.forEach((token, i) => {
    const label = svg("text", { class: "label row-label", "data-index": i, "data-token": token,
      x: layout.left - 6, y: layout.top + (i + 0.5) * layout.cell + layout.fontSize * 0.35,
      "text-anchor": "end", "font-size": layout.fontSize, text: shortLabel(token) });
    label.append(svg("title", { text: token }));
    group.append(label);
  });
  matrix.columnTokens.forEach((token, j) => {
    const x = layout.left + (j + 0.5) * layout.cell + layout.fontSize * 0.35;
    const label = svg("text", { class: "label column-label", "data-index": j, "data-token": token,
      transform: `translate(${x} ${layout.top - 6}) rotate(-${layout.angle})`, "font-size": layout.fontSize,
      text: shortLabel(token) });
    label.append(svg("title", { text: token }));
    group.append(label);
  });
  return group;
}

function matrixCells(matrix, layout) {
  const group = svg("g", { class: "cells" });
  for (let i = 0; i < layout.rows; i += 1) {
    for (let j = 0; j < layout.columns; j += 1) {
      const masked = matrix.masked && j > i;
      const weight = matrix.weights[i * layout.columns + j];
      group.append(svg("rect", { class: masked ? "cell masked" : "cell", "data-row": i, "data-column": j,
        x: layout.left + j * layout.cell, y: layout.top + i * layout.cell,
        width: layout.cell - 1, height: layout.cell - 1,
        fill: masked ? MASKED_CSS : VIRIDIS_CSS[weight] }));
    }
  }
  return group;
}

// Hovering a cell shows its weight and marks its row and column labels.
function addMatrixHover(target, matrix) {
  const setActive = (selector, index) => {
    for (const label of target.querySelectorAll(selector)) {
      label.classList.toggle("active", index !== null && Number(label.dataset.index) === index);
    }
  };
  target.onmousemove = (event) => {
    const cell = event.target.closest("rect.cell");
    if (cell === null) { target.onmouseleave(); return; }
    const i = Number(cell.dataset.row), j = Number(cell.dataset.column);
    const weight = matrix.weights[i * matrix.columnTokens.length + j] / 1000;
    const note = cell.classList.contains("masked") ? "  (masked)" : "";
    showTooltip(`${matrix.rowTokens[i]} → ${matrix.columnTokens[j]}\n${weight.toFixed(3)}${note}`,
      event.clientX, event.clientY);
    setActive(".row-label", i);
    setActive(".column-label", j);
    target.querySelector("rect.cell.highlight")?.classList.remove("highlight");
    cell.classList.add("highlight");
  };
  target.onmouseleave = () => {
    hideTooltip();
    target.querySelector("rect.cell.highlight")?.classList.remove("highlight");
    setActive(".row-label", null);
    setActive(".column-label", null);
  };
}

// The width inside a section, read at the start and after a resize only: reading a width
// makes the browser lay the page out, which at every redraw would cost more than the drawing.
let sectionWidth = 1300;
function measureSectionWidth() {
  sectionWidth = document.querySelector("#attention > h2").clientWidth;
}

// The room a matrix may take: more on a wide screen, where long sentences then keep readable
// cells.
function matrixRoom() {
  return clamp(Math.floor(sectionWidth * 0.28), 300, 520);
}

function drawMatrix(target, matrix, maxSide) {
  clear(target);
  const layout = matrixLayout(matrix, maxSide);
  setAttributes(target, { width: layout.width, height: layout.height,
    viewBox: `0 0 ${layout.width} ${layout.height}` });
  target.append(matrixLabels(matrix, layout), matrixCells(matrix, layout),
    colourBar(layout.left + layout.columns * layout.cell + 12, layout.top, layout.rows * layout.cell));
  addMatrixHover(target, matrix);
  return layout;
}

// ---- Attention: the lines view -------------------------------------------------------------

// Two columns of tokens, queries left and keys right, a line from query i to key j for each
// head shown, as opaque as the weight.
function linesLayout(rowTokens, columnTokens) {
  const widest = (tokens) => Math.max(0, ...tokens.map((t) => textWidth(shortLabel(t), LABEL_SIZE)));
  const rowHeight = clamp(Math.floor(420 / Math.max(rowTokens.length, columnTokens.length, 1)), 14, 22);
  const leftWidth = Math.ceil(widest(rowTokens)) + 12;
  const rightWidth = Math.ceil(widest(columnTokens)) + 12;
  const gap = 180;
  return { rowHeight, leftWidth, rightWidth, gap, top: 20,
    width: leftWidth + gap + rightWidth,
    height: 20 + Math.max(rowTokens.length, columnTokens.length) * rowHeight + 4 };
}

function lineToken(token, index, side, layout) {
  const isQuery = side === "query";
  const x = isQuery ? 0 : layout.leftWidth + layout.gap;
  const width = isQuery ? layout.leftWidth : layout.rightWidth;
  const y = layout.top + index * layout.rowHeight;
  const group = svg("g", { class: "token", "data-side": side, "data-index": index, "data-token": token },
    svg("rect", { x, y, width, height: layout.rowHeight, rx: 3 }),
    svg("text", { x: isQuery ? x + width - 6 : x + 6, y: y + layout.rowHeight / 2 + 4,
      "text-anchor": isQuery ? "end" : "start", text: shortLabel(token) }));
  group.append(svg("title", { text: token }));
  return group;
}

function headLines(weights, head, rows, columns, layout) {
  const group = svg("g", { class: "head", "data-head": head, stroke: headColour(head) });
  const x1 = layout.leftWidth + 2, x2 = layout.leftWidth + layout.gap - 2;
  for (let i = 0; i < rows; i += 1) {
    for (let j = 0; j < columns; j += 1) {
      const weight = weights[i * columns + j];
      if (weight < 10) continue;  // below 1%: invisible anyway, and fewer lines draw faster
      group.append(svg("line", { "data-head": head, "data-from": i, "data-to": j,
        x1, x2, y1: layout.top + (i + 0.5) * layout.rowHeight, y2: layout.top + (j + 0.5) * layout.rowHeight,
        "stroke-opacity": (weight / 1000).toFixed(3) }));
    }
  }
  return group;
}

// Hovering a token keeps only its lines: a query's lines out, or a key's lines in. The
// matrix beside them (matrixTarget) shows the same: that row or column, the rest faded.
function addTokenFocus(target, matrixTarget) {
  for (const token of target.querySelectorAll(".token")) {
    const isQuery = token.dataset.side === "query";
    const attribute = isQuery ? "from" : "to";
    const index = Number(token.dataset.index);
    token.addEventListener("mouseenter", () => {
      target.classList.add("focusing");
      token.classList.add("active");
      for (const line of target.querySelectorAll("line")) {
        line.classList.toggle("focus", Number(line.dataset[attribute]) === index);
      }
      focusMatrix(matrixTarget, isQuery ? "row" : "column", index);
    });
    token.addEventListener("mouseleave", () => {
      target.classList.remove("focusing");
      token.classList.remove("active");
      focusMatrix(matrixTarget, null, null);
    });
  }
}

// Fades every cell of a matrix but those of one row or column (axis null: none faded), and
// marks that row's or column's label.
function focusMatrix(matrixTarget, axis, index) {
  for (const cell of matrixTarget.querySelectorAll("rect.cell")) {
    const inFocus = axis === null || Number(cell.dataset[axis]) === index;
    cell.classList.toggle("faded", !inFocus);
  }
  for (const label of matrixTarget.querySelectorAll(".row-label, .column-label")) {
    const labelAxis = label.classList.contains("row-label") ? "row" : "column";
    label.classList.toggle("active", labelAxis === axis && Number(label.dataset.index) === index);
  }
}

// heads: [{head, weights}], the heads to draw; matrixTarget: the matrix drawn beside them.
function drawLines(target, heads, rowTokens, columnTokens, matrixTarget) {
  clear(target);
  const layout = linesLayout(rowTokens, columnTokens);
  setAttributes(target, { class: "lines", width: layout.width, height: layout.height,
    viewBox: `0 0 ${layout.width} ${layout.height}` });
  target.append(
    svg("text", { class: "axis-title", x: layout.leftWidth - 6, y: 12, "text-anchor": "end", text: "queries" }),
    svg("text", { class: "axis-title", x: layout.leftWidth + layout.gap + 6, y: 12, text: "keys" }));
  for (const { head, weights } of heads) {
    target.append(headLines(weights, head, rowTokens.length, columnTokens.length, layout));
  }
  rowTokens.forEach((token, i) => target.append(lineToken(token, i, "query", layout)));
  columnTokens.forEach((token, j) => target.append(lineToken(token, j, "key", layout)));
  addTokenFocus(target, matrixTarget);
  return layout;
}

// ---- Attention: head toggles and the overview -----------------------------------------------

function drawHeadToggles(headCount) {
  const container = document.getElementById("head-toggles");
  clear(container);
  for (let head = 0; head < headCount; head += 1) {
    const box = html("input", { type: "checkbox", class: "head-toggle", "data-head": head });
    box.checked = !state.hiddenHeads.has(head);
    box.addEventListener("change", () => {
      if (box.checked) state.hiddenHeads.delete(head); else state.hiddenHeads.add(head);
      chip.classList.toggle("off", !box.checked);
      showHeadLines();
    });
    const chip = html("label", { class: "chip", style: `--chip-colour:${headColour(head)}`, "data-head": head },
      box, html("span", { class: "swatch" }), `head ${head + 1}`);
    chip.classList.toggle("off", !box.checked);
    chip.classList.toggle("selected", head === state.head);
    container.append(chip);
  }
  const all = html("button", { type: "button", class: "chip-action", text: "all" });
  all.addEventListener("click", () => setAllHeads(headCount, true));
  const none = html("button", { type: "button", class: "chip-action", text: "none" });
  none.addEventListener("click", () => setAllHeads(headCount, false));
  container.append(all, none);
}

function setAllHeads(headCount, visible) {
  state.hiddenHeads.clear();
  if (!visible) for (let head = 0; head < headCount; head += 1) state.hiddenHeads.add(head);
  for (const box of document.querySelectorAll("input.head-toggle")) {
    box.checked = visible;
    box.closest(".chip").classList.toggle("off", !visible);
  }
  showHeadLines();
}

// Hidden heads keep their lines in the document, out of sight, so that toggling is instant.
function showHeadLines() {
  for (const group of document.querySelectorAll("#lines g.head")) {
    group.style.display = state.hiddenHeads.has(Number(group.dataset.head)) ? "none" : "";
  }
}

// A small matrix drawn as pixels, one per weight, scaled up by the browser without blurring.
function matrixCanvas(matrix, side) {
  const rows = matrix.rowTokens.length, columns = matrix.columnTokens.length;
  const canvas = html("canvas", { width: columns, height: rows });
  const scale = side / Math.max(rows, columns, 1);
  canvas.style.width = `${Math.round(columns * scale)}px`;
  canvas.style.height = `${Math.round(rows * scale)}px`;
  const context = canvas.getContext("2d");
  const image = context.createImageData(columns, rows);
  for (let i = 0; i < rows; i += 1) {
    for (let j = 0; j < columns; j += 1) {
      const rgb = matrix.masked && j > i ? MASKED_RGB : VIRIDIS[matrix.weights[i * columns + j]];
      image.data.set([rgb[0], rgb[1], rgb[2], 255], 4 * (i * columns + j));
    }
  }
  context.putImageData(image, 0, 0);
  return canvas;
}

// width: the room beside the matrix and the lines, or below them when there is too little.
function drawOverview(maps, width) {
  const container = document.getElementById("overview");
  clear(container);
  const layers = maps[state.kind];
  const headCount = Math.max(...layers.map((heads) => heads.length));
  const available = (width < 340 ? sectionWidth : width) - 70;  // 70: the row titles
  const side = clamp(Math.floor(available / headCount) - 10, 48, 110);
  container.style.gridTemplateColumns = `auto repeat(${headCount}, ${side + 8}px)`;
  container.append(html("span"));
  for (let head = 0; head < headCount; head += 1) {
    container.append(html("span", { class: "column-title", text: `head ${head + 1}` }));
  }
  layers.forEach((heads, layer) => {
    container.append(html("span", { class: "row-title", text: `layer ${layer + 1}` }));
    for (let head = 0; head < headCount; head += 1) {
      if (head >= heads.length) { container.append(html("span")); continue; }
      const panel = html("div", { class: "panel", "data-layer": layer, "data-head": head,
        title: `layer ${layer + 1}, head ${head + 1}` }, matrixCanvas(matrixOf(maps, state.kind, layer, head), side));
      panel.addEventListener("click", () => select({ layer, head }));
      container.append(panel);
    }
  });
  markSelectedPanel();
}

function markSelectedPanel() {
  for (const panel of document.querySelectorAll("#overview .panel")) {
    const selected = Number(panel.dataset.layer) === state.layer && Number(panel.dataset.head) === state.head;
    panel.classList.toggle("selected", selected);
  }
}

// ---- Attention: the explorer ----------------------------------------------------------------

function currentExample() {
  return EXAMPLES[state.example];
}

// Fills the kind, layer and head menus of one section from maps and a selection in them.
function fillSelectors(maps, { kind, layer, head }, kindSelect, layerSelect, headSelect) {
  fillSelect(kindSelect, kindsIn(maps).map((k) => [k.key, k.name]), kind);
  fillSelect(layerSelect, maps[kind].map((_, l) => [l, `layer ${l + 1}`]), layer);
  fillSelect(headSelect, maps[kind][layer].map((_, h) => [h, `head ${h + 1}`]), head);
}

function drawExplorer(redrawOverview) {
  if (EXAMPLES.length === 0) return;
  const maps = currentExample();
  Object.assign(state, selectionIn(maps));  // the explorer's example decides what exists
  document.getElementById("example").value = String(state.example);
  fillSelectors(maps, state, ...["kind", "layer", "head"].map((id) => document.getElementById(id)));
  document.getElementById("kind-explain").textContent = kindOf(state.kind).explain;
  const matrix = matrixOf(maps, state.kind, state.layer, state.head);
  const matrixBox = drawMatrix(document.getElementById("matrix"), matrix, matrixRoom());
  const heads = maps[state.kind][state.layer].map((weights, head) => ({ head, weights }));
  const linesBox = drawLines(document.getElementById("lines"), heads, matrix.rowTokens, matrix.columnTokens,
    document.getElementById("matrix"));
  drawHeadToggles(heads.length);
  showHeadLines();
  if (redrawOverview) {
    // What the two views take, estimated rather than measured (see sectionWidth): each is as
    // wide as its drawing or its caption (or chips: about 85 pixels a head), 28-pixel gaps.
    const taken = Math.max(matrixBox.width, 300) + Math.max(linesBox.width, 85 * heads.length + 70) + 2 * 28;
    drawOverview(maps, sectionWidth - taken - 20);
  } else {
    markSelectedPanel();
  }
}

// Changes the selection and redraws what depends on it. The overview changes only with the
// sentence or the kind; a new layer or head just moves its frame.
function select(changes) {
  const redrawOverview = "example" in changes || "kind" in changes;
  Object.assign(state, changes);
  if (Object.keys(changes).some((key) => key !== "snapshot")) drawExplorer(redrawOverview);
  drawSnapshot();
}

function setUpExplorer() {
  if (EXAMPLES.length === 0) {
    markEmpty("attention", "No attention was recorded for this run.");
    return;
  }
  fillSelect(document.getElementById("example"),
    EXAMPLES.map((example, i) => [i, example.label || `example ${i + 1}`]), 0);
  const onChange = (id, key) => document.getElementById(id).addEventListener("change", (event) => {
    const value = key === "kind" ? event.target.value : Number(event.target.value);
    select({ [key]: value });
  });
  onChange("example", "example");
  for (const key of ["kind", "layer", "head"]) {
    onChange(key, key);
    onChange(`snapshot-${key}`, key);
  }
  // The last layer first: in a trained model its cross-attention holds the clearest alignment.
  state.kind = selectionIn(currentExample()).kind;
  state.layer = currentExample()[state.kind].length - 1;
  drawExplorer(true);
}

// ---- Attention through training --------------------------------------------------------------

// The mean over rows of each row's largest weight: 1/n for attention spread evenly over n
// keys, 1 when every query looks at a single key.
function sharpness(matrix) {
  const rows = matrix.rowTokens.length, columns = matrix.columnTokens.length;
  let total = 0;
  for (let i = 0; i < rows; i += 1) {
    total += Math.max(...matrix.weights.slice(i * columns, (i + 1) * columns)) / 1000;
  }
  return rows === 0 ? 0 : total / rows;
}

// One head's sharpness at each snapshot (null where a snapshot lacks that head).
function sharpnessThroughTraining({ kind, layer, head }) {
  return SNAPSHOTS.map((snapshot) => {
    const heads = snapshot[kind][layer];
    if (heads === undefined || heads[head] === undefined) return null;
    return sharpness(matrixOf(snapshot, kind, layer, head));
  });
}

// A small chart of sharpness (0 to 1) against step, with the shown snapshot marked.
function drawSharpness(target, selection, now) {
  clear(target);
  const width = 300, height = 170, left = 40, right = 12, top = 10, bottom = 34;
  setAttributes(target, { width, height, viewBox: `0 0 ${width} ${height}` });
  const values = sharpnessThroughTraining(selection);
  const steps = SNAPSHOTS.map((s) => s.step);
  const xTicks = linearTicks(Math.min(...steps), Math.max(...steps), 4);
  const x = (v) => left + ((v - xTicks.lo) / (xTicks.hi - xTicks.lo || 1)) * (width - left - right);
  const y = (v) => top + (1 - v) * (height - top - bottom);
  for (const t of [0, 0.5, 1]) {
    target.append(svg("line", { x1: left, x2: width - right, y1: y(t), y2: y(t), stroke: "#eef1f4" }));
    target.append(svg("text", { x: left - 6, y: y(t) + 4, "text-anchor": "end", text: String(t) }));
  }
  for (const t of xTicks.ticks) {
    target.append(svg("text", { x: x(t), y: height - bottom + 15, "text-anchor": "middle",
      text: tickLabel(t, xTicks.step) }));
  }
  target.append(svg("text", { x: left + (width - left - right) / 2, y: height - 4,
    "text-anchor": "middle", text: "step" }));
  const points = values.map((v, i) => (v === null ? null : { x: steps[i], y: v }));
  target.append(svg("path", { class: "line", d: seriesPath(points, { x, y }) }));
  if (values[now] !== null) {
    target.append(svg("circle", { class: "now", cx: x(steps[now]), cy: y(values[now]), r: 4.5 }));
  }
}

function drawSnapshot() {
  if (SNAPSHOTS.length === 0) return;
  const snapshot = SNAPSHOTS[state.snapshot];
  // The explorer's selection where this sentence has it; not written back, so that the
  // explorer keeps its own when a snapshot lacks a kind.
  const selection = selectionIn(snapshot);
  const menus = ["kind", "layer", "head"].map((id) => document.getElementById(`snapshot-${id}`));
  fillSelectors(snapshot, selection, ...menus);
  document.getElementById("snapshot-step").textContent = `step ${snapshot.step}`;
  document.getElementById("snapshot-slider").value = String(state.snapshot);
  const matrix = matrixOf(snapshot, selection.kind, selection.layer, selection.head);
  drawMatrix(document.getElementById("snapshot-matrix"), matrix, matrixRoom());
  drawLines(document.getElementById("snapshot-lines"), [{ head: selection.head, weights: matrix.weights }],
    matrix.rowTokens, matrix.columnTokens, document.getElementById("snapshot-matrix"));
  drawSharpness(document.getElementById("snapshot-sharpness"), selection, state.snapshot);
}

// Plays the snapshots in order, about eight a second, from the first when at the last.
let playing = null;
function togglePlay() {
  const button = document.getElementById("snapshot-play");
  if (playing !== null) {
    clearInterval(playing);
    playing = null;
    button.textContent = "▶ play";
    return;
  }
  if (state.snapshot === SNAPSHOTS.length - 1) select({ snapshot: 0 });
  button.textContent = "❚❚ pause";
  playing = setInterval(() => {
    if (state.snapshot >= SNAPSHOTS.length - 1) { togglePlay(); return; }
    select({ snapshot: state.snapshot + 1 });
  }, 125);
}

// Tokens back into text, for reading: SentencePiece-style pieces ("▁Ein", "▁klein", "er")
// join at their word-start marks, other tokens with spaces.
function detokenize(tokens) {
  if (!tokens.some((t) => t.startsWith("▁"))) return tokens.join(" ");
  return tokens.join("").replaceAll("▁", " ").trim();
}

function explainSnapshots() {
  document.getElementById("snapshot-explain").textContent =
    `One sentence ("${detokenize(SNAPSHOTS[0].source_tokens)}"), as the model attended to it at ` +
    `${SNAPSHOTS.length} points of training. The kind, layer and head are those chosen above.`;
}

function setUpSnapshots() {
  if (SNAPSHOTS.length === 0) {
    markEmpty("training-attention", "No attention snapshots were taken during this run.");
    return;
  }
  const first = SNAPSHOTS[0];
  explainSnapshots();
  const slider = document.getElementById("snapshot-slider");
  slider.max = String(SNAPSHOTS.length - 1);
  slider.addEventListener("input", () => select({ snapshot: Number(slider.value) }));
  document.getElementById("snapshot-play").addEventListener("click", togglePlay);
  if (EXAMPLES.length === 0) {
    // The explorer's menus are absent, so this section's own menus drive the state.
    for (const key of ["kind", "layer", "head"]) {
      document.getElementById(`snapshot-${key}`).addEventListener("change", (event) => {
        select({ [key]: key === "kind" ? event.target.value : Number(event.target.value) });
      });
    }
    state.kind = selectionIn(first).kind;
    state.layer = first[state.kind].length - 1;
  }
  drawSnapshot();
}

// ---- Live updates ---------------------------------------------------------------------------
//
// Inside gradformer's playground (web/page/) this page shows the run being trained there, and the
// playground sends it the run's data again as training goes on: a message
// {type: "gradformer-run-data", data}. The page redraws with it and keeps the learner's choices
// (sentence, kind, layer, head, the snapshot, or the newest one if that was shown) and its
// scroll position. A page opened from its file gets no such message.
function refresh(data) {
  const newest = state.snapshot === SNAPSHOTS.length - 1;
  RUN = data;
  EXAMPLES = RUN.attention.filter((maps) => kindsIn(maps).length > 0);
  SNAPSHOTS = RUN.snapshots.filter((maps) => kindsIn(maps).length > 0);
  drawHeader();
  drawFacts();
  drawCurves();
  drawSamples();
  if (EXAMPLES.length > 0) drawExplorer(true);
  if (SNAPSHOTS.length > 0) {
    const slider = document.getElementById("snapshot-slider");
    slider.max = String(SNAPSHOTS.length - 1);
    state.snapshot = newest ? SNAPSHOTS.length - 1 : Math.min(state.snapshot, SNAPSHOTS.length - 1);
    explainSnapshots();
    drawSnapshot();
  }
  window.runPageRefreshedAt = RUN.snapshots.length;  // for the playground's browser test
}

window.addEventListener("message", (event) => {
  if (event.source === window.parent && event.data?.type === "gradformer-run-data") refresh(event.data.data);
});

// ---- Start ----------------------------------------------------------------------------------

function drawHeader() {
  document.getElementById("title").textContent = RUN.title || "training run";
  document.getElementById("subtitle").textContent = RUN.subtitle;
}

// Redraws what depends on the window's width, once the resizing stops.
let resizeTimer = null;
window.addEventListener("resize", () => {
  clearTimeout(resizeTimer);
  resizeTimer = setTimeout(() => {
    measureSectionWidth();
    drawCurves();
    if (EXAMPLES.length > 0) drawExplorer(true);
    drawSnapshot();
  }, 150);
});

document.addEventListener("DOMContentLoaded", () => {
  measureSectionWidth();
  for (const [name, draw] of [["header", drawHeader], ["facts", drawFacts], ["curves", drawCurves],
    ["samples", drawSamples], ["explorer", setUpExplorer], ["snapshots", setUpSnapshots]]) {
    draw();
    performance.mark(`run-page:${name}`);
  }
  // For the browser test (tests/browser/check_run_page.py) and anyone timing the page.
  window.runPageDrawnAt = performance.now();
  document.documentElement.dataset.drawn = "true";
});
