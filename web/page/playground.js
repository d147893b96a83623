// The playground's own thread: the settings, the buttons, the status line, the loss curve and
// the attention map. Training runs in a Web Worker (worker.js) that this file starts from the
// source build_page.py put in the page; this thread only sends it orders and draws what it
// sends back, so a click is handled while a step is being computed.
//
// For scripts and tests: window.gradformer = {start(config), pause(), resume(), step(), status(),
// attention(), decode(source, beam), sample(settings), samples(), checkpoint(), page(),
// open(bytes, name)}.
// The URL fragment presets the knobs, and starts a run with "autostart":
//   playground.html#task=reverse&heads=2&autostart
"use strict";

// ---- The settings -------------------------------------------------------------------------

const LESSONS = "../lessons/";
const LM_LESSON = "13_decoder_only/README.md";

const TASKS = {
  copy: {text: "copy the source letters, in order", lesson: "08_training/README.md"},
  reverse: {text: "write the source letters backwards", lesson: "06_positions/README.md"},
  "toy-translation": {text: "translate a toy language; scored by BLEU",
                      lesson: "09_translation/README.md"},
  translate: {text: "your own pairs, pasted below; scored by BLEU on them",
              lesson: "09_translation/README.md"},
  lm: {label: "lm (language model)", text: "predict the next token of a text; perplexity",
       lesson: LM_LESSON},
};

// Each knob is a `transformer train` flag without its dashes (training/run_options.h), shown
// with that command's default. An empty knob is left out of the options, so the engine uses
// the same default. A knob with `tasks` is shown for those tasks only. `lm` holds what differs
// for a language model: its defaults are the engine's (web/engine.cpp, kLanguageModelDefaults)
// and, for the rest, the recipe's (training/recipe.h, lm_recipe), whose warm-up is a tenth of
// the steps (at most 200) and whose peak rate falls as 1/sqrt(d-model): placeholders that
// follow the steps and d-model knobs.
const KNOBS = [
  {key: "layers", placeholder: "2", hint: "encoder layers, and as many decoder ones",
   lesson: "07_encoder_decoder/README.md",
   lm: {hint: "decoder layers (there is no encoder)", lesson: LM_LESSON}},
  {key: "d-model", placeholder: "64", hint: "width of every token's vector",
   lesson: "07_encoder_decoder/README.md"},
  {key: "heads", placeholder: "4", hint: "attention heads; they must divide d-model",
   lesson: "04_multi_head/README.md"},
  {key: "d-ff", placeholder: "256", hint: "inner width of the feed-forward layers",
   lesson: "05_ffn_residual_norm/README.md"},
  {key: "max-len", placeholder: "64", hint: "context: tokens of each window read",
   lesson: LM_LESSON, tasks: ["lm"]},
  {key: "tokenizer", choices: ["bpe", "char", "word"], hint: "byte pairs, characters or words",
   lesson: "09_translation/README.md", tasks: ["lm"]},
  {key: "vocab-size", placeholder: "auto", hint: "byte-pair tokens; auto: grows with the text",
   lesson: "09_translation/README.md", tasks: ["lm"]},
  {key: "dropout", placeholder: "0", hint: "share of activations zeroed in training",
   lesson: "08_training/part2_training.md", lm: {placeholder: "0.1"}},
  {key: "label-smoothing", placeholder: "0.1", hint: "target weight spread over other tokens",
   lesson: "08_training/part5_label_smoothing.md", lm: {placeholder: "0"}},
  {key: "warmup", placeholder: "200", hint: "steps of rising learning rate (eq. 3)",
   lesson: "08_training/part1_warm_up_and_teacher_forcing.md",
   lm: {placeholder: () => String(Math.min(200, Math.max(1, Math.floor(knobNumber("steps", 600) / 10)))),
        hint: "steps of rising rate: a tenth of the run"}},
  // 0 asks for the schedule's own factor, which is 0.3 for eq. 3 (training/run_config.h).
  {key: "lr", placeholder: "0.3", hint: "factor on eq. 3's learning rate",
   lesson: "08_training/part1_warm_up_and_teacher_forcing.md",
   lm: {placeholder: () => String(Number((2e-3 * Math.sqrt(128 / knobNumber("d-model", 64))).toPrecision(3))),
        hint: "peak rate of the cosine schedule"}},
  {key: "norm", choices: ["post", "pre"], hint: "LayerNorm after each sub-layer, or before",
   lesson: "05_ffn_residual_norm/README.md", lm: {choices: ["pre", "post"]}},
  {key: "positions", choices: ["sinusoidal", "learned"], hint: "how positions are told apart",
   lesson: "06_positions/README.md"},
  {key: "batch", placeholder: "64", hint: "sequences per step (copy, reverse)",
   lesson: "08_training/part2_training.md", lm: {placeholder: "16", hint: "windows of text per step"}},
  {key: "seed", placeholder: "1", hint: "the weights and batches follow from it",
   lesson: "08_training/README.md"},
  {key: "steps", placeholder: "600", hint: "training steps of the run",
   lesson: "08_training/part2_training.md"},
];

// A knob as the task shows it: its own fields, with the task's own where it has them.
function knobFor(knob, task) {
  return task === "lm" && knob.lm ? {...knob, ...knob.lm} : knob;
}

// A number knob's value, or its default when it is empty or not a number.
function knobNumber(key, fallback) {
  const value = Number($(`knob-${key}`)?.value.trim() || NaN);
  return Number.isFinite(value) && value > 0 ? value : fallback;
}

const $ = (id) => document.getElementById(id);

function lessonLink(path) {
  const a = document.createElement("a");
  a.href = LESSONS + path;
  a.textContent = `lesson ${path.slice(0, 2)}`;
  return a;
}

// A hint's words, cut short with "…" where the line is too narrow (the knob's title has them all).
function hintText(text) {
  const span = document.createElement("span");
  span.textContent = text;
  return span;
}

function buildKnobs() {
  for (const [name, task] of Object.entries(TASKS)) $("knob-task").add(new Option(task.label ?? name, name));
  for (const knob of KNOBS) {
    const row = document.createElement("div");
    row.className = "knob";
    row.id = `row-${knob.key}`;
    const label = document.createElement("label");
    label.htmlFor = `knob-${knob.key}`;
    label.textContent = knob.key;
    let input;
    if (knob.choices) {
      input = document.createElement("select");
    } else {
      input = document.createElement("input");
      input.inputMode = "decimal";
      input.autocomplete = "off";
      input.spellcheck = false;
    }
    input.id = `knob-${knob.key}`;
    input.name = knob.key;
    const hint = document.createElement("p");
    hint.className = "hint";
    hint.id = `hint-${knob.key}`;
    row.append(label, input, hint);
    $("knobs").append(row);
  }
  $("knob-task").addEventListener("change", showTask);
  // The language model's warm-up and peak rate follow the steps and d-model.
  for (const key of ["steps", "d-model"]) $(`knob-${key}`).addEventListener("input", showKnobs);
  showTask();
}

// Each knob as the chosen task has it: shown or not, its default in grey, its line. A choice's
// first option is the task's default, the select's empty value; a value that is now the
// default becomes that empty value.
function showKnobs() {
  const task = $("knob-task").value;
  for (const base of KNOBS) {
    const knob = knobFor(base, task);
    const input = $(`knob-${knob.key}`);
    $(`row-${knob.key}`).hidden = knob.tasks !== undefined && !knob.tasks.includes(task);
    if (knob.choices) {
      const value = input.value;
      input.replaceChildren(new Option(`${knob.choices[0]} (default)`, ""),
                            ...knob.choices.slice(1).map((choice) => new Option(choice, choice)));
      input.value = knob.choices.slice(1).includes(value) ? value : "";
    } else {
      input.placeholder = typeof knob.placeholder === "function" ? knob.placeholder() : knob.placeholder;
    }
    const label = input.labels[0];
    label.title = input.title = knob.hint;
    $(`hint-${knob.key}`).replaceChildren(hintText(knob.hint), lessonLink(knob.lesson));
  }
}

function showTask() {
  const name = $("knob-task").value;
  const task = TASKS[name];
  $("task-hint").replaceChildren(hintText(task.text), lessonLink(task.lesson));
  const text = name === "toy-translation" || name === "translate";
  $("knob-batch").disabled = text;  // text tasks batch by tokens (batch-tokens)
  $("pairs-box").hidden = name !== "translate";
  $("text-box").hidden = name !== "lm";
  showKnobs();
  drawControls();
}

// Settings the fragment or start() gave that have no knob ("length=8"): passed on as they are,
// and listed under the knobs so that nothing is hidden.
let extras = [];

// Sets every knob from a config: "task=copy&heads=1" or {task: "copy", heads: 1}; the knobs it
// does not name are emptied. Returns false, and says why, for a task the page does not offer.
function setKnobs(config) {
  const pairs = typeof config === "string" ? [...new URLSearchParams(config)]
                                           : Object.entries(config ?? {});
  // The task first: it says which knobs there are, and their defaults.
  const task = pairs.find(([key]) => key === "task")?.[1] ?? "copy";
  let ok = true;
  if (Object.hasOwn(TASKS, String(task))) {
    $("knob-task").value = String(task);
  } else {
    $("knob-task").value = "copy";
    showError(`No task "${task}" here; the playground has ${Object.keys(TASKS).join(", ")}.`);
    ok = false;
  }
  for (const knob of KNOBS) $(`knob-${knob.key}`).value = "";
  showKnobs();
  extras = [];
  for (const [key, value] of pairs) {
    const text = String(value);
    const base = KNOBS.find((k) => k.key === key);
    const knob = base && knobFor(base, $("knob-task").value);
    const shown = knob && (knob.tasks === undefined || knob.tasks.includes($("knob-task").value));
    if (key === "autostart" || key === "task") {
      continue;
    } else if (key === "pairs") {  // task translate's pairs, for scripts: {task: "translate", pairs}
      $("pairs").value = text;
    } else if (key === "text") {  // task lm's text, for scripts: {task: "lm", text}
      $("text").value = text;
    } else if (!shown || (knob.choices && !knob.choices.includes(text))) {
      extras.push([key, text]);  // passed on: the engine says if it is wrong
    } else {
      // A choice's first option is its default, the select's empty value.
      $(`knob-${key}`).value = knob.choices && text === knob.choices[0] ? "" : text;
    }
  }
  showTextSize();
  $("extras").hidden = extras.length === 0;
  $("extras").textContent = `Also from the link: ${extras.map(([k, v]) => `${k}=${v}`).join(", ")}`;
  showTask();
  return ok;
}

// The options line the engine reads (training/run_options.h).
function optionsFromKnobs() {
  const options = new URLSearchParams({task: $("knob-task").value});
  for (const knob of KNOBS) {
    const input = $(`knob-${knob.key}`);
    const value = input.value.trim();
    if (value !== "" && !input.disabled && !$(`row-${knob.key}`).hidden) options.append(knob.key, value);
  }
  for (const [key, value] of extras) options.append(key, value);
  return options.toString();
}

// ---- The run ------------------------------------------------------------------------------

// phase: loading (the engine), idle (no run), running, paused, finished, opened (a checkpoint
// to decode with, no run).
const run = {
  phase: "loading",
  settings: null,
  status: null,
  losses: [],
  scores: [],  // [step, score] of every score the worker sent
  attention: null,  // {example, step, maps}
  decoded: null,  // {source, output, step, maps, sampled} of the last typed source or sample
  samples: [],  // {step, text, prompt} of each sample drawn as the run trains
  opened: null,  // the name of the opened checkpoint
  error: null,
};

let pendingStart = null;  // {resolve, reject} of the promise start() returned

const worker = startWorker();

function startWorker() {
  const source = JSON.parse($("worker-source").textContent);
  const url = URL.createObjectURL(new Blob([source], {type: "text/javascript"}));
  const w = new Worker(url);
  w.onmessage = (event) => received(event.data);
  w.onerror = (event) => {
    event.preventDefault();  // shown in the page instead
    showError(`The worker failed: ${event.message}`);
  };
  return w;
}

function send(message, transfer = []) {
  worker.postMessage(message, transfer);
}

// Requests the worker answers by their id (decode, save, open): a promise of the answer.
const requests = new Map();
let nextRequest = 1;

function request(message, transfer = []) {
  const id = nextRequest++;
  send({...message, id}, transfer);
  return new Promise((resolve, reject) => requests.set(id, {resolve, reject}));
}

function answered(id, value, failure) {
  const pending = requests.get(id);
  requests.delete(id);
  if (failure) pending?.reject(failure);
  else pending?.resolve(value);
}

function startRun(config, running) {
  hideError();
  if (config !== undefined && !setKnobs(config)) return Promise.reject(new Error(run.error));
  const options = optionsFromKnobs();
  const task = $("knob-task").value;
  const data = task === "translate" ? $("pairs").value : task === "lm" ? $("text").value : "";
  // The engine reads text as a C string, which ends at the first NUL.
  const nul = data.indexOf("\0");
  if (nul >= 0) {
    const name = task === "lm" ? "your text" : "pasted pairs";  // as the engine names them
    showError(`${name}:${data.slice(0, nul).split("\n").length}: holds the character U+0000 (NUL), ` +
              "which the playground cannot pass to the engine; remove it");
    return Promise.reject(new Error(run.error));
  }
  sendSampling();
  send({type: "start", options, data, run: running});
  return new Promise((resolve, reject) => {
    pendingStart?.reject(new Error("another run was started"));
    pendingStart = {resolve, reject};
  });
}

function pause() {
  if (run.phase !== "running") return;
  send({type: "pause"});
  setPhase("paused");
}

function resume() {
  if (run.phase !== "paused") return;
  send({type: "resume"});
  setPhase("running");
}

function oneStep() {
  if (run.phase !== "running" && run.phase !== "paused") return;
  send({type: "step"});
  setPhase("paused");
}

// ---- Decoding and checkpoints -------------------------------------------------------------

// What the source box holds when the learner has typed nothing: a source of the model's kind.
function exampleSource() {
  if (run.settings?.reads === "text")
    return run.settings.task === "toy-translation" ? "the big red cat sees my dog ." : "";
  return "5 6 7 8 9 10 4 5 6 7 2";  // ids: 10 of 4 to 10 (the tasks' defaults), then 2, the end token
}

// The model's output for a source (empty: the example), greedy or with a beam of `beam`.
function decode(source, beam) {
  const text = source.trim() || exampleSource();
  return request({type: "decode", source: text, beam: Number(beam) || 1});
}

// ---- Sampling (a language model) ----------------------------------------------------------

// The Sample panel's settings, each empty field at its default (its placeholder). Throws an
// Error naming a field that holds no number, or no whole number where one is needed; the
// engine checks the ranges (models/sample.h).
function samplingSettings(overrides = {}) {
  const number = (id, name, fallback, whole) => {
    const text = $(id).value.trim();
    const value = text === "" ? fallback : Number(text);
    if (!Number.isFinite(value) || (whole && !Number.isInteger(value)))
      throw new Error(`${name}: "${text}" is not ${whole ? "a whole number" : "a number"}`);
    return value;
  };
  return {prompt: $("prompt").value,
          temperature: number("temperature", "temperature", 1, false),
          top_k: number("top-k", "top-k", 0, true),
          top_p: number("top-p", "top-p", 1, false),
          length: number("length", "length", 64, true),
          seed: number("sample-seed", "seed", 1, true),
          auto: $("auto-sample").checked, ...overrides};
}

// The worker draws a sample at each score with these settings; a field that holds no number
// stops those samples until it does.
function sendSampling() {
  try {
    send({type: "sampling", settings: samplingSettings()});
  } catch (e) {
    send({type: "sampling", settings: {auto: false}});
    showError(`Sample: ${e.message}`);
  }
}

// A sample of the model now, with the panel's settings and any of overrides ({prompt, seed,
// ...}): a promise of {text, prompt, step, maps}. It is shown in the panel, and its attention
// becomes the example "yours".
function sample(overrides = {}) {
  let settings;
  try {
    settings = samplingSettings(overrides);
  } catch (e) {
    showError(`Sample: ${e.message}`);
    return Promise.reject(e);
  }
  return request({type: "sample", settings});
}

// Text a model sampled, its prompt in bold.
function sampleText(prompt, text) {
  const span = document.createElement("span");
  span.className = "sample-text";
  const bold = document.createElement("b");
  bold.textContent = text.startsWith(prompt) ? prompt : "";
  span.append(bold, text.slice(bold.textContent.length));
  return span;
}

function showSampled(m) {
  const head = document.createElement("div");
  head.className = "sampled-head";
  const settings = m.settings;
  head.textContent = `${run.opened ? "by the checkpoint" : `at step ${m.step}`} · temperature ` +
      `${settings.temperature} · top-k ${settings.top_k} · top-p ${settings.top_p} · seed ${settings.seed}`;
  $("sampled").replaceChildren(head, sampleText(m.prompt, m.text));
  $("sampled").hidden = false;
  if (m.maps) {
    run.decoded = {source: m.prompt, output: m.text, step: m.step, maps: m.maps, sampled: true};
    offerYours();
  }
}

// A sample drawn as the run trains: listed newest first, one for each step.
function addAutoSample(m) {
  const last = run.samples[run.samples.length - 1];
  if (last && last.step === m.step) run.samples.pop();
  run.samples.push({step: m.step, text: m.text, prompt: m.prompt});
  const item = document.createElement("li");
  const step = document.createElement("span");
  step.className = "sample-step";
  step.textContent = `step ${m.step}`;
  item.append(step, sampleText(m.prompt, m.text));
  if (last && last.step === m.step) $("samples").firstElementChild?.remove();
  $("samples").prepend(item);
}

function forgetSamples() {
  run.samples = [];
  $("samples").replaceChildren();
  $("sampled").replaceChildren();
  $("sampled").hidden = true;
}

function hasModel() {
  return ["running", "paused", "finished", "opened"].includes(run.phase);
}

// The model as a safetensors file, downloaded under a name that says what it is.
async function saveCheckpoint() {
  const bytes = await request({type: "save"});
  const name = run.opened ? run.opened.replace(/\.safetensors$/, "") : run.settings.task;
  const step = run.opened ? "" : `-step${run.status?.step ?? 0}`;
  const link = document.createElement("a");
  link.href = URL.createObjectURL(new Blob([bytes], {type: "application/octet-stream"}));
  link.download = `${name}${step}.safetensors`;
  link.click();
  setTimeout(() => URL.revokeObjectURL(link.href), 10000);
  return bytes;
}

// The run's page as it stands (the native run page: every curve, samples beside their
// references, the attention explorer and the attention through training), shown in the frame
// below the panels. The first time the frame loads the page; after that it gets the page's
// data by a message and redraws in place (viz/page/run_page.js, "Live updates"), so that the
// learner's choices in it and its scroll position stay. Returns a promise of its HTML.
async function showRunPage() {
  const html = await request({type: "page"});
  const frame = $("run-page");
  if (runPageHtml !== null && frame.dataset.loaded === "true") {
    frame.contentWindow.postMessage({type: "gradformer-run-data", data: runPageData(html)}, "*");
  } else {
    frame.dataset.loaded = "false";
    frame.srcdoc = html;
    frame.hidden = false;
  }
  runPageHtml = html;
  $("run-page-note").textContent = `The run's page at step ${run.status?.step ?? 0}.`;
  return html;
}

// The JSON a run page inlines (docs/run-page.md).
function runPageData(html) {
  const open = '<script type="application/json" id="run-data">';
  const start = html.indexOf(open) + open.length;
  const close = "<" + "/script>";  // split: whole, it would end this page's own script element
  return JSON.parse(html.slice(start, html.indexOf(close, start)));
}

let runPageHtml = null;
let runPageAsked = false;  // a page is on its way from the worker

// While it trains, the run's page is drawn again at each score (every 50 steps), unless the
// learner has unticked "live".
function refreshRunPage() {
  if (runPageAsked || !$("live-page").checked || run.phase !== "running") return;
  runPageAsked = true;
  showRunPage().catch(() => {}).finally(() => { runPageAsked = false; });
}
const RUN_PAGE_NOTE = "The run's page is drawn at each score while the run trains (live), and when it ends.";

function forgetRunPage() {
  runPageHtml = null;
  $("run-page").dataset.loaded = "false";
  $("run-page").hidden = true;
  $("run-page").removeAttribute("srcdoc");
  $("run-page-note").textContent = RUN_PAGE_NOTE;
}

// The same page in a tab of its own, from a Blob URL (nothing leaves the page).
function openRunPage() {
  if (!runPageHtml) return;
  window.open(URL.createObjectURL(new Blob([runPageHtml], {type: "text/html"})), "_blank");
}

// A checkpoint's bytes (an ArrayBuffer or a typed array) under its file name.
function openCheckpoint(bytes, name) {
  const copy = bytes instanceof ArrayBuffer ? bytes.slice(0) : new Uint8Array(bytes).buffer.slice(0);
  return request({type: "open", name, bytes: copy}, [copy]);
}

// The typed source's attention is offered as the example "yours" once there is one.
function showDecoded() {
  const d = run.decoded;
  $("decoded").textContent = `→ ${d.output}`;
  offerYours();
}

function offerYours() {
  if (![...$("example").options].some((o) => o.value === "decoded"))
    $("example").add(new Option("yours", "decoded"));
  $("example").value = "decoded";
}

function forgetDecoded() {
  run.decoded = null;
  $("decoded").textContent = "";
  for (const option of [...$("example").options]) if (option.value === "decoded") option.remove();
}

// A new model in the page, a run's or an opened checkpoint's (name): what the last one showed
// goes.
function showModel(settings, status, name) {
  run.settings = settings;
  run.status = status;
  run.losses = [];
  run.scores = [];
  run.attention = null;
  run.opened = name;
  forgetDecoded();
  forgetSamples();
  forgetRunPage();
  buildPickers(settings.layers, settings.heads);
  // The examples the run has (a short text or a few pasted pairs have fewer than ten).
  // The worker keeps the example shown, as far as the new run has it.
  const examples = Math.min(EXAMPLES, settings.examples ?? EXAMPLES);
  const shown = Math.min(Number($("example").value) || 0, examples - 1);
  $("example").replaceChildren(...Array.from({length: examples}, (_, i) => new Option(String(i + 1), String(i))));
  $("example").value = String(Math.max(0, shown));
  // A decoder alone has self-attention only.
  for (const option of $("kind").options)
    option.disabled = option.hidden = settings.decoder_only && option.value !== "decoder";
  if (settings.decoder_only) $("kind").value = "decoder";
}

const receivers = {
  ready: () => {
    if (run.phase === "loading") setPhase("idle");
  },
  started: (m) => {
    showModel(m.settings, m.status, null);
    // The address then names this run (without autostart), to bookmark or to share.
    try {
      history.replaceState(null, "", `#${m.options}`);
    } catch {
      // A browser that refuses it for a file: URL keeps the old fragment; nothing else changes.
    }
    setPhase(m.running ? "running" : "paused");
    pendingStart?.resolve(m.settings);
    pendingStart = null;
  },
  progress: (m) => {
    run.status = m.status;
    run.losses.length = m.losses.from;
    run.losses.push(...m.losses.losses);
  },
  score: (m) => {
    refreshRunPage();
    run.status = m.status;
    const last = run.scores[run.scores.length - 1];
    if (!last || last[0] !== m.status.scored_at) run.scores.push([m.status.scored_at, m.status.score]);
  },
  attention: (m) => {
    run.attention = m;
  },
  paused: () => {
    if (run.phase === "running") setPhase("paused");
  },
  resumed: () => setPhase("running"),
  finished: (m) => {
    run.status = m.status;
    setPhase("finished");
    showRunPage().catch(() => {});  // the whole run's page, once it has ended
  },
  decoded: (m) => {
    run.decoded = {source: m.source, output: m.output, step: m.step, maps: m.maps};
    showDecoded();
    answered(m.id, m);
  },
  sample: (m) => {
    if (m.auto) {
      addAutoSample(m);
      return;
    }
    showSampled(m);
    answered(m.id, m);
  },
  "sample-failed": (m) => {
    $("auto-sample").checked = false;
    showError(`Sampling at each score stopped: ${m.message}`);
  },
  checkpoint: (m) => answered(m.id, m.bytes),
  page: (m) => answered(m.id, m.html),
  opened: (m) => {
    showModel(m.settings, m.status, m.name);
    setPhase("opened");
    answered(m.id, m.settings);
  },
  error: (m) => {
    showError(m.message);
    if (m.id !== undefined) {  // a request failed; the run is as it was
      answered(m.id, null, new Error(m.message));
      return;
    }
    if (run.phase === "running") setPhase("paused");
    if (run.phase === "loading") setPhase("idle");
    pendingStart?.reject(new Error(m.message));
    pendingStart = null;
  },
};

function received(message) {
  receivers[message.type](message);
  drawSoon();
}

// The buttons change at once, in the click's own handler; the rest waits for the next frame.
function setPhase(phase) {
  run.phase = phase;
  drawControls();
  drawSoon();
}

function showError(text) {
  run.error = text;
  $("message-text").textContent = text;
  $("message").hidden = false;
}

function hideError() {
  run.error = null;
  $("message").hidden = true;
}

function status() {
  const s = run.status;
  const metric = s?.metric;
  return {
    state: run.phase,
    step: s?.step ?? 0,
    steps: s?.steps ?? null,
    loss: s?.loss ?? null,
    exact: metric === "exact" ? s.score : null,
    bleu: metric === "bleu" ? s.score : null,
    perplexity: metric === "perplexity" ? s.score : null,
    final: s?.final ?? null,
    scored_at: s && s.scored_at >= 0 ? s.scored_at : null,
    steps_per_s: s?.steps_per_s ?? 0,
    error: run.error,
  };
}

// ---- Drawing ------------------------------------------------------------------------------

// The SVG namespace, taken from an <svg> the HTML parser made, so that the page holds no
// address at all (as the run page does).
const SVG = document.getElementById("loss-chart").namespaceURI;

function svgElement(name, attributes, parent) {
  const element = document.createElementNS(SVG, name);
  for (const [key, value] of Object.entries(attributes)) element.setAttribute(key, value);
  parent?.append(element);
  return element;
}

function svgText(text, attributes, parent) {
  const element = svgElement("text", attributes, parent);
  element.textContent = text;
  return element;
}

// Messages arrive every slice (about 80 ms); the page is drawn at most once a frame.
let drawQueued = false;

function drawSoon() {
  if (drawQueued) return;
  drawQueued = true;
  requestAnimationFrame(() => {
    drawQueued = false;
    drawControls();
    drawStatus();
    drawLoss();
    drawAttention();
  });
}

function drawControls() {
  const phase = run.phase;
  $("pause").textContent = phase === "paused" ? "Resume" : "Pause";
  $("pause").disabled = phase !== "running" && phase !== "paused";
  $("step").disabled = phase !== "running" && phase !== "paused";
  $("state").textContent = {loading: "loading the engine", idle: "no run", running: "training",
                            paused: "paused", finished: "finished", opened: "checkpoint"}[phase];
  $("state").className = `state ${phase}`;
  $("model").hidden = !hasModel() || !run.settings;
  $("save").disabled = $("decode").disabled = $("sample").disabled = !hasModel();
  // A language model samples rather than decodes: the Sample panel replaces Decode.
  const lm = hasModel() && run.settings ? run.settings.decoder_only : $("knob-task").value === "lm";
  $("decode-panel").hidden = lm;
  $("sample-panel").hidden = !lm;
  $("loss-hint").hidden = lm;
  $("loss-hint-lm").hidden = !lm;
  $("sample-hint").textContent = !hasModel()
      ? "Start a run or open a language model's checkpoint, then sample."
      : "Its attention is the example “yours” above.";
  $("update-page").disabled = !["running", "paused", "finished"].includes(phase);
  $("open-page").disabled = runPageHtml === null;
  $("open").disabled = phase === "loading";
  $("source").placeholder = exampleSource();
  $("decode-hint").textContent = !hasModel() ? "Start a run or open a checkpoint, then decode a source of your own."
      : run.settings?.reads === "text"
      ? "A sentence, as transformer translate reads a line. Its attention is the example “yours” above."
      : "Token ids separated by spaces, as transformer decode reads a line: end with 2, the end " +
        "token, as the task's sources do. Its attention is the example “yours” above.";
}

function group(n) {  // 234176 -> "234 176", as the lessons print counts
  return String(n).replace(/\B(?=(\d{3})+(?!\d))/g, "\u2009");
}

function drawStatus() {
  const s = run.status;
  if (s?.state === "opened") {
    $("status").textContent = `${run.opened}: ${run.settings?.decoder_only ? "sample" : "decode a source"} ` +
        "below · one thread, WebAssembly SIMD";
    drawModel(run.settings);
    return;
  }
  $("final").hidden = true;
  if (!s || s.state === "none") {
    $("status").textContent = run.phase === "loading" ? "Loading the engine…"
        : "No run yet: choose the settings, then Start. One thread, WebAssembly SIMD.";
    return;
  }
  const parts = [`step ${s.step} / ${s.steps}`, `loss ${s.loss === null ? "–" : s.loss.toFixed(3)}`];
  const name = SCORE_NAMES[s.metric];
  if (s.score === null || s.scored_at < 0) parts.push(`${name} –`);
  else if (s.metric === "exact") parts.push(`exact ${(100 * s.score).toFixed(0)}% at step ${s.scored_at}`);
  else if (s.metric === "perplexity") parts.push(`perplexity ${s.score.toFixed(2)} at step ${s.scored_at}`);
  else parts.push(`BLEU ${s.score.toFixed(1)} at step ${s.scored_at}`);
  parts.push(`${s.steps_per_s.toFixed(1)} steps/s`, "one thread, WebAssembly SIMD");
  $("status").textContent = parts.join(" · ");
  // A language model's last line, as transformer train prints it: the whole dev text's
  // perplexity beside a bigram model's, the baseline to beat.
  $("final").hidden = !s.final;
  $("final").textContent = s.final ? `At the end: ${s.final}.` : "";
  drawModel(run.settings);
}

const SCORE_NAMES = {exact: "exact", bleu: "BLEU", perplexity: "perplexity"};

function drawModel(m) {
  if (!m) return;
  const parts = [m.task, m.decoder_only ? `${m.layers} decoder-only layers` : `${m.layers} + ${m.layers} layers`,
    `d-model ${m.d_model}`, `${m.heads} heads`, `d-ff ${m.d_ff}`];
  if (m.decoder_only) parts.push(`context ${m.max_len}`);
  parts.push(`dropout ${Number(m.dropout.toPrecision(6))}`, m.norm_first ? "pre-norm" : "post-norm",
    m.learned_positions ? "learned positions" : "sinusoidal positions",
    `${group(m.parameters)} parameters`,
    `vocabulary ${m.vocab_size}${m.decoder_only && m.tokenizer ? ` (${m.tokenizer})` : ""}`);
  if (m.text) parts.push(`on ${m.text === "your text" ? "your text" : "the built-in text"}`);
  $("model").textContent = parts.join(" · ");
}

// ---- The loss curve -----------------------------------------------------------------------

// The span of the loss's moving average: a 50th of the run, at least 10 steps, as on the run
// page and in the PNG (training::smoothing_span).
function smoothingSpan(steps) {
  return Math.max(10, steps / 50);
}

// The exponential moving average over about `span` values, each divided by the weight gathered
// so far so that its start is not pulled towards zero (training::moving_average).
function smoothed(values, span) {
  const past = 1 - 1 / span;
  const out = [];
  let average = 0;
  let weight = 0;
  for (const value of values) {
    average = past * average + (1 - past) * value;
    weight = past * weight + (1 - past);
    out.push(average / weight);
  }
  return out;
}

// Round numbers for the axis: about `count` ticks from 0 to at least top.
function ticks(top, count) {
  const raw = top / count;
  const power = 10 ** Math.floor(Math.log10(raw));
  const step = [1, 2, 2.5, 5, 10].map((f) => f * power).find((s) => s >= raw);
  const out = [];
  for (let t = 0; t <= top + step * 1e-9; t += step) out.push(Number(t.toPrecision(12)));
  if (out[out.length - 1] < top) out.push(Number((out[out.length - 1] + step).toPrecision(12)));
  return out;
}

function pathOf(points) {
  return points.map(([x, y], i) => `${i ? "L" : "M"}${x.toFixed(1)},${y.toFixed(1)}`).join("");
}

// Every kth point, and the last: a path needs no more points than the chart has pixels.
function thinned(values, width) {
  const k = Math.max(1, Math.ceil(values.length / (2 * width)));
  const out = [];
  for (let i = 0; i < values.length; i += k) out.push([i, values[i]]);
  if (values.length && out[out.length - 1][0] !== values.length - 1)
    out.push([values.length - 1, values[values.length - 1]]);
  return out;
}

function drawLoss() {
  const svg = $("loss-chart");
  const width = svg.clientWidth || 480;
  const height = 300;
  svg.setAttribute("viewBox", `0 0 ${width} ${height}`);
  svg.setAttribute("height", height);
  svg.replaceChildren();
  const metric = run.status?.metric ?? "exact";
  const box = {left: 46, right: width - 48, top: 12, bottom: height - 34};
  // Before a run, the axis the knobs' run will have.
  const steps = Math.max(run.status?.steps ?? (Number($("knob-steps").value) || 600), 1);
  const losses = run.losses;
  const top = ticks(Math.max(1, ...losses.slice(0, 50)), 5);
  const yMax = top[top.length - 1];
  const x = (step) => box.left + (box.right - box.left) * step / steps;
  const y = (loss) => box.bottom - (box.bottom - box.top) * Math.min(loss, yMax) / yMax;
  const scoreTop = metric === "exact" ? 1 : 100;
  // A perplexity is e to a cross-entropy: drawn at the height of its logarithm on the loss's
  // axis, it reads against the training loss, and its axis is logarithmic.
  const perplexity = metric === "perplexity";
  const yScore = perplexity ? (p) => y(Math.log(p))
                            : (s) => box.bottom - (box.bottom - box.top) * s / scoreTop;

  for (const t of top) {
    svgElement("line", {x1: box.left, x2: box.right, y1: y(t), y2: y(t), class: "grid"}, svg);
    svgText(String(t), {x: box.left - 6, y: y(t) + 4, class: "tick", "text-anchor": "end"}, svg);
  }
  if (perplexity) {
    for (const p of [1, 2, 5, 10, 20, 50, 100, 200, 500, 1000, 2000, 5000].filter((p) => Math.log(p) <= yMax))
      svgText(String(p), {x: box.right + 6, y: yScore(p) + 4, class: "tick score-tick"}, svg);
  } else {
    for (const f of [0, 0.25, 0.5, 0.75, 1]) {
      const label = metric === "exact" ? `${100 * f}%` : String(100 * f);
      svgText(label, {x: box.right + 6, y: yScore(f * scoreTop) + 4, class: "tick score-tick"}, svg);
    }
  }
  for (const t of ticks(steps, 6).filter((t) => t <= steps && Number.isInteger(t))) {
    svgElement("line", {x1: x(t), x2: x(t), y1: box.bottom, y2: box.bottom + 4, class: "axis"}, svg);
    svgText(String(t), {x: x(t), y: box.bottom + 17, class: "tick", "text-anchor": "middle"}, svg);
  }
  svgElement("line", {x1: box.left, x2: box.right, y1: box.bottom, y2: box.bottom, class: "axis"}, svg);
  svgText("step", {x: (box.left + box.right) / 2, y: height - 2, class: "axis-title", "text-anchor": "middle"}, svg);
  svgText("loss", {x: 12, y: (box.top + box.bottom) / 2, class: "axis-title", "text-anchor": "middle",
                   transform: `rotate(-90 12 ${(box.top + box.bottom) / 2})`}, svg);
  const scoreName = SCORE_NAMES[metric];
  svgText(scoreName, {x: width - 6, y: (box.top + box.bottom) / 2, class: "axis-title score-tick",
                      "text-anchor": "middle", transform: `rotate(90 ${width - 6} ${(box.top + box.bottom) / 2})`}, svg);

  if (losses.length) {
    const plotWidth = box.right - box.left;
    svgElement("path", {d: pathOf(thinned(losses, plotWidth).map(([i, v]) => [x(i + 1), y(v)])),
                        class: "series raw"}, svg);
    svgElement("path", {d: pathOf(thinned(smoothed(losses, smoothingSpan(steps)), plotWidth).map(([i, v]) => [x(i + 1), y(v)])),
                        class: "series smooth"}, svg);
  }
  if (run.scores.length) {
    const points = run.scores.map(([step, score]) => [x(step), yScore(score)]);
    svgElement("path", {d: pathOf(points), class: "series score"}, svg);
    for (const [px, py] of points) svgElement("circle", {cx: px, cy: py, r: 2.5, class: "score-dot"}, svg);
  }
  drawLegend(scoreName, smoothingSpan(steps));
}

function drawLegend(scoreName, span) {
  const items = [["raw", "loss of each step"], ["smooth", `moving average, ~${Math.round(span)} steps`],
                 ["score", `${scoreName}, every 50 steps`]];
  $("loss-legend").replaceChildren(...items.map(([kind, text]) => {
    const item = document.createElement("span");
    item.className = `key ${kind}`;
    item.textContent = text;
    return item;
  }));
}

// ---- The attention map --------------------------------------------------------------------

const EXAMPLES = 10;  // offered of the run's 100 scored pairs; the worker sends one at a time

// Which tokens label the rows (queries) and the columns (keys) of each kind, as on the run page
// (viz/run_page.h): a decoder row is labelled with the token that position is trained to predict.
const KINDS = {
  encoder: {rows: "source_tokens", columns: "source_tokens", text:
    "Encoder self-attention: each source token (row) mixes in the source tokens (columns)."},
  decoder: {rows: "target_next", columns: "target_read", text:
    "Decoder self-attention: each output position (row, named by the token it predicts) looks at " +
    "the tokens read so far (columns); the look-ahead mask hides the rest."},
  cross: {rows: "target_next", columns: "source_tokens", text:
    "Cross-attention: each output position (row, named by the token it predicts) looks at the " +
    "source (columns). Copying, it becomes the diagonal; reversing, the other diagonal."},
};

// The layer and head the learner picked (null: none yet, the last layer and the first head),
// kept across runs as far as the new run has them.
const picked = {layer: null, head: null};

function buildPickers(layers, heads) {
  const fill = (select, count, value) => {
    select.replaceChildren(...Array.from({length: count}, (_, i) => new Option(String(i + 1), String(i))));
    select.value = String(Math.min(value, count - 1));
  };
  fill($("layer"), layers, picked.layer ?? layers - 1);  // the last: the copy task's diagonal
  fill($("head"), heads, picked.head ?? 0);
}

function colour(weight) {  // white to dark blue, one hue so that the order reads at a glance
  const w = Math.min(1, Math.max(0, weight));
  const from = [247, 251, 255], to = [8, 48, 107];
  return `rgb(${from.map((f, i) => Math.round(f + (to[i] - f) * w)).join(",")})`;
}

const measure = document.createElement("canvas").getContext("2d");

function textWidth(text, font) {
  measure.font = font;
  return measure.measureText(text).width;
}

function drawAttention() {
  const svg = $("matrix");
  const kind = KINDS[$("kind").value];
  $("attention-hint").replaceChildren(`${kind.text} · `,
    lessonLink(run.settings?.decoder_only ? LM_LESSON : "07_encoder_decoder/README.md"));
  const yours = $("example").value === "decoded";
  const a = yours ? run.decoded : run.attention;
  if (!a || !a.maps?.[$("kind").value]?.length) {
    svg.replaceChildren();
    svg.setAttribute("width", 0);
    svg.setAttribute("height", 0);
    $("attention-caption").textContent = run.phase === "loading" || run.phase === "idle"
        ? "Start a run to see its attention."
        : run.phase === "opened" ? "Decode a source below to see the checkpoint's attention."
        : "Waiting for the first map…";
    return;
  }
  const maps = a.maps;
  const matrices = maps[$("kind").value];  // [layer][head]
  const layer = Math.min(Number($("layer").value), matrices.length - 1);
  const head = Math.min(Number($("head").value), matrices[0].length - 1);
  let rows = maps[kind.rows], columns = maps[kind.columns];
  let values = matrices[layer][head];  // [rows x columns], row by row
  const font = "11px system-ui, sans-serif";
  if (run.settings?.decoder_only) {
    // A window of a text is longer than the panel is wide: its first tokens, as many as fit at
    // MIN_LABELLED_CELL pixels a cell, so that the slanted labels do not overlap. The top-left
    // corner is exact: under the look-ahead mask, the first n rows attend to the first n
    // columns only.
    const rowLabel = Math.max(...rows.map((t) => textWidth(t, font))) + 8;
    const fit = Math.floor(($("attention-panel").clientWidth - 24 - rowLabel - 60) / MIN_LABELLED_CELL);
    const n = Math.max(8, Math.min(rows.length, fit));
    if (n < rows.length) {
      values = rows.slice(0, n).flatMap((_, r) => values.slice(r * columns.length, r * columns.length + n));
      rows = rows.slice(0, n);
      columns = columns.slice(0, n);
    }
  }
  const when = yours && run.opened ? "by the checkpoint" : `at step ${a.step}`;
  if (run.settings?.decoder_only) {
    // A language model's examples are windows of the text it is scored on.
    const text = run.status?.scored_on?.includes("dev") ? "dev text" : "training text";
    $("attention-caption").textContent = yours
        ? `yours, ${when} · the sample as the model reads it back (its first ${rows.length} tokens)`
        : `window ${a.example + 1} of the ${text}, ${when} (its first ${rows.length} tokens)`;
  } else {
    $("attention-caption").textContent = yours
        ? `yours, ${when} · source: ${maps.source_tokens.join(" ")} · output: ${a.output}`
        : `example ${a.example + 1}, ${when} · source: ${maps.source_tokens.join(" ")}`;
  }

  const rowLabel = Math.max(...rows.map((t) => textWidth(t, font))) + 8;
  const columnLabel = Math.max(...columns.map((t) => textWidth(t, font))) * Math.SQRT1_2 + 14;
  const available = $("attention-panel").clientWidth - 24 - rowLabel - 40;
  const cell = Math.max(8, Math.min(30, Math.floor(available / columns.length)));
  const left = rowLabel, top = columnLabel;
  // The last column's label leans right, past the matrix, by its width times cos 45°.
  const width = left + cell * columns.length + textWidth(columns[columns.length - 1], font) * Math.SQRT1_2 + 4;
  const height = top + cell * rows.length + 4;
  svg.setAttribute("width", width);
  svg.setAttribute("height", height);
  svg.setAttribute("viewBox", `0 0 ${width} ${height}`);
  svg.replaceChildren();
  columns.forEach((token, c) => {
    const cx = left + (c + 0.5) * cell, cy = top - 6;
    svgText(token, {x: cx, y: cy, class: "column-label", "data-token": token,
                    transform: `rotate(-45 ${cx} ${cy})`}, svg);
  });
  rows.forEach((token, r) => {
    svgText(token, {x: left - 6, y: top + (r + 0.5) * cell + 4, class: "row-label", "data-token": token,
                    "text-anchor": "end"}, svg);
    for (let c = 0; c < columns.length; ++c) {
      const weight = values[r * columns.length + c];
      const rect = svgElement("rect", {x: left + c * cell, y: top + r * cell, width: cell, height: cell,
                                       fill: colour(weight), class: "cell"}, svg);
      svgElement("title", {}, rect).textContent = `${token} → ${columns[c]}: ${weight.toFixed(3)}`;
    }
  });
  svgElement("rect", {x: left, y: top, width: cell * columns.length, height: cell * rows.length,
                      class: "frame"}, svg);
}

const MIN_LABELLED_CELL = 15;  // pixels: a label of 11 px slanted at 45° needs about 11 * sqrt 2

function askForAttention() {
  const example = $("example").value;
  if (example !== "decoded" && !["loading", "idle", "opened"].includes(run.phase))
    send({type: "example", index: Number(example)});
  drawSoon();
}

// ---- The language model's text ------------------------------------------------------------

function showTextSize() {
  const text = $("text").value;
  $("text-size").textContent = text === "" ? "the built-in text"
      : `${group([...text].length)} characters`;
}

// A file's bytes, shown in the text box to train on. A file that is not UTF-8 is refused by
// name: the library reads UTF-8 text only, and a decoder that replaced the bad bytes would
// train on text that the file does not hold.
function openText(name, bytes) {
  try {
    $("text").value = new TextDecoder("utf-8", {fatal: true}).decode(bytes);
  } catch {
    showError(`${name} is not UTF-8 text: the language model reads UTF-8 text only (save it as UTF-8, ` +
              "or paste it into the box)");
    return;
  }
  hideError();
  showTextSize();
  $("text-size").textContent += ` from ${name}`;
}

// ---- Wiring -------------------------------------------------------------------------------

function wire() {
  $("start").addEventListener("click", () => startRun(undefined, true).catch(() => {}));
  $("pause").addEventListener("click", () => (run.phase === "paused" ? resume() : pause()));
  $("step").addEventListener("click", oneStep);
  $("reset").addEventListener("click", () => startRun(undefined, false).catch(() => {}));
  $("defaults").addEventListener("click", () => setKnobs({task: $("knob-task").value}));
  $("message-close").addEventListener("click", hideError);
  $("save").addEventListener("click", () => saveCheckpoint().catch(() => {}));
  $("update-page").addEventListener("click", () => showRunPage().catch(() => {}));
  $("run-page").addEventListener("load", () => { $("run-page").dataset.loaded = "true"; });
  $("open-page").addEventListener("click", openRunPage);
  $("open").addEventListener("change", async () => {
    const file = $("open").files[0];
    $("open").value = "";  // the same file chosen again is a change too
    if (file) openCheckpoint(await file.arrayBuffer(), file.name).catch(() => {});
  });
  // In the pairs' box Tab types a tab, the pairs' separator; Escape, then Tab, moves on.
  let leaving = false;
  $("pairs").addEventListener("keydown", (event) => {
    if (event.key === "Tab" && !event.shiftKey && !leaving) {
      event.preventDefault();
      $("pairs").setRangeText("\t", $("pairs").selectionStart, $("pairs").selectionEnd, "end");
    }
    leaving = event.key === "Escape";
  });
  $("decode-form").addEventListener("submit", (event) => {
    event.preventDefault();
    decode($("source").value, $("search").value).catch(() => {});
  });
  $("sample-form").addEventListener("submit", (event) => {
    event.preventDefault();
    hideError();
    sample().catch(() => {});
  });
  for (const id of ["prompt", "temperature", "top-k", "top-p", "length", "sample-seed", "auto-sample"])
    $(id).addEventListener("change", sendSampling);
  $("text").addEventListener("input", showTextSize);
  $("text-file").addEventListener("change", async () => {
    const file = $("text-file").files[0];
    $("text-file").value = "";  // the same file chosen again is a change too
    if (file) openText(file.name, await file.arrayBuffer());
  });
  for (const id of ["layer", "head"]) {
    $(id).addEventListener("change", () => {
      picked[id] = Number($(id).value);
      drawSoon();
    });
  }
  $("kind").addEventListener("change", drawSoon);
  $("example").addEventListener("change", askForAttention);
  window.addEventListener("resize", drawSoon);
}

buildKnobs();
buildPickers(2, 4);  // transformer train's default model, until a run says otherwise
for (let i = 0; i < EXAMPLES; ++i) $("example").add(new Option(String(i + 1), String(i)));
wire();
const fragment = location.hash.slice(1);
const presetOk = setKnobs(fragment);
drawSoon();

window.gradformer = {
  // config: "task=copy&heads=1" or {task: "copy", heads: 1}, or none for the knobs as they
  // are; resolves with the run's settings once the engine has started it.
  start: (config) => startRun(config, true),
  pause,
  resume,
  step: oneStep,
  status,
  // The last attention maps the worker sent: {example, step, maps} (web/engine.cpp), or null.
  attention: () => run.attention,
  // The model's output for a source, as transformer decode or translate reads a line ("" for
  // the example source), greedy (beam 1) or with a beam: a promise of {output, step, maps}.
  decode: (source, beam = 1) => decode(source, beam),
  // A language model's sample now, with the Sample panel's settings and any of settings
  // ({prompt, temperature, top_k, top_p, length, seed}): a promise of {text, prompt, step, maps}.
  sample: (settings) => sample(settings),
  // The samples drawn as the run trains, one at each score: [{step, text, prompt}], oldest first.
  samples: () => run.samples.map((s) => ({...s})),
  // The model as it is now, as a safetensors checkpoint (also downloaded): a promise of a
  // Uint8Array.
  checkpoint: saveCheckpoint,
  // The run's page as it stands, also shown in the page's frame: a promise of its HTML.
  page: showRunPage,
  // Opens a checkpoint (an ArrayBuffer or typed array) to decode with, ending the run: a promise
  // of its settings; a file that is not a checkpoint rejects with the engine's message.
  open: (bytes, name = "checkpoint.safetensors") => openCheckpoint(bytes, name),
};

if (presetOk && new URLSearchParams(fragment).has("autostart")) startRun(undefined, true).catch(() => {});
