// The playground's Web Worker: it owns the engine (web/engine.cpp) and trains, so that the
// page's own thread only draws. build_page.py puts this file after the engine's JavaScript, which
// defines createGradformer, in the Blob the page starts the worker from.
//
// The page sends:                  the worker answers:
//   {type: "start", options, data, run}  "started" {options, running, settings, status} and the
//                                    untrained model's "attention" (and a language model's
//                                    "sample"); then, if run, it trains. data: task translate's
//                                    pairs, or task lm's text ("": the built-in text)
//   {type: "pause"}                  "paused"
//   {type: "resume"}                 "resumed", and trains on (nothing if the run is over)
//   {type: "step"}                   "paused", then one step and what follows it
//   {type: "example", index}         "attention" of that example
//   {type: "decode", id, source, beam}  "decoded" {id, output, step, maps}: the model's output
//                                    for a typed source and its attention (gf_decode)
//   {type: "sampling", settings}     nothing: the settings of the samples a language model's
//                                    run draws as it trains, {prompt, temperature, top_k, top_p,
//                                    length, seed, auto} (auto false: none)
//   {type: "sample", id, settings}   "sample" {id, settings, text, prompt, step, maps}: one
//                                    sample now (gf_sample)
//   {type: "page", id}               "page" {id, html}: the run's page as it stands
//   {type: "save", id}               "checkpoint" {id, bytes}: the model as a safetensors file
//   {type: "open", id, name, bytes}  "opened" {id, name, settings, status}: a checkpoint to
//                                    decode with, which ends the run
// A failure of one of those with an id is "error" {id, message}.
// While it trains it sends "progress" {status, losses: {from, losses}} after every slice,
// "score" {status} every SCORE_EVERY steps, followed for a language model by a "sample" {auto:
// true, text, prompt, step, maps} drawn with the sampling settings (sampling as it trains: the
// same seed each time, so that only the model changes), "attention" {example, step, maps} every
// ATTENTION_EVERY_MS, and "finished" {status} at the end. Also "ready" once the engine is
// loaded, and "error" {message} for any failure, which also stops the training.
"use strict";

// gf_step trains until this many milliseconds are used (or the run ends), finishing the step
// under way. Messages such as "pause" are read between two slices, so training stops at most a
// slice and a step after the click (the page's own thread answers the click at once).
const SLICE_MS = 80;
const SCORE_EVERY = 50;  // steps between two scores for the status line
const ATTENTION_EVERY_MS = 400;  // between two attention maps sent while training

let engine = null;
let running = false;
let sliceQueued = false;
let lossesSent = 0;  // the losses the page has: those of steps [0, lossesSent)
let scoredAt = -1;
let example = 0;
let attentionSentAt = 0;
let languageModel = false;  // the run's model is a decoder alone, which samples
let sampling = {prompt: "", temperature: 1, top_k: 0, top_p: 1, length: 64, seed: 1, auto: true};

class EngineError extends Error {}

function call(name, types, args) {
  const answer = JSON.parse(engine.ccall(name, "string", types, args));
  if (answer.error) throw new EngineError(answer.error);
  return answer;
}

// A zero-delay turn of the event loop: setTimeout(f, 0) waits at least 4 ms once nested, which
// is 5% of a slice; a message to ourselves waits only behind the messages already queued.
const loop = new MessageChannel();
loop.port1.onmessage = () => {
  sliceQueued = false;
  guarded(slice);
};

function queueSlice() {
  if (running && !sliceQueued) {
    sliceQueued = true;
    loop.port2.postMessage(null);
  }
}

function sendProgress(status) {
  const losses = call("gf_losses", ["number"], [lossesSent]);
  lossesSent = losses.from + losses.losses.length;
  postMessage({type: "progress", status, losses: {from: losses.from, losses: losses.losses}});
}

function sendScore() {
  const status = call("gf_score", [], []);
  scoredAt = status.scored_at;
  postMessage({type: "score", status});
}

function sampled(settings) {
  return call("gf_sample", ["string", "number", "number", "number", "number", "number"],
              [settings.prompt, settings.temperature, settings.top_k, settings.top_p,
               settings.length, settings.seed]);
}

// The sample of this step, as the run trains. A bad setting (a top-p of 2, say) is reported
// once, and stops the samples but not the training.
function sendSample() {
  if (!languageModel || !sampling.auto) return;
  try {
    postMessage({type: "sample", auto: true, settings: sampling, ...sampled(sampling)});
  } catch (e) {
    sampling = {...sampling, auto: false};
    postMessage({type: "sample-failed", message: e.message});
  }
}

function sendAttention() {
  const maps = call("gf_attention", ["number"], [example]);
  const step = call("gf_status", [], []).step;
  attentionSentAt = performance.now();
  postMessage({type: "attention", example, step, maps});
}

// After steps were taken: the new losses always, a score each SCORE_EVERY steps, the attention
// each ATTENTION_EVERY_MS, and both at the end.
function report(status, always) {
  sendProgress(status);
  const finished = status.state === "finished";
  if (finished || always || Math.floor(status.step / SCORE_EVERY) > Math.floor(scoredAt / SCORE_EVERY)) {
    sendScore();
    sendSample();
  }
  if (finished || always || performance.now() - attentionSentAt >= ATTENTION_EVERY_MS)
    sendAttention();
  if (finished) {
    running = false;
    postMessage({type: "finished", status: call("gf_status", [], [])});
  }
}

function slice() {
  if (!running) return;
  const status = call("gf_step", ["number", "number"], [1 << 30, SLICE_MS]);
  report(status, false);
  queueSlice();
}

function start(options, data, run) {
  running = false;
  const started = call("gf_start", ["string", "string"], [options, data ?? ""]);
  lossesSent = 0;
  scoredAt = -1;
  languageModel = started.settings.decoder_only;
  // The example shown, as far as the new run has it (a short text has fewer windows).
  example = Math.max(0, Math.min(example, started.settings.examples - 1));
  postMessage({type: "started", options, running: run, settings: started.settings,
               status: started.status});
  sendAttention();  // the untrained model's, to compare with
  sendSample();  // the untrained model's: noise, for the samples to start from
  running = run;
  queueSlice();
}

// The checkpoint files in the engine's file system (memory only): gf_save writes SAVED, and an
// opened file is written to OPENED for gf_open to read, then removed.
const OPENED = "/opened.safetensors";

const handlers = {
  start: (message) => start(message.options, message.data, message.run),
  pause: () => {
    running = false;
    postMessage({type: "paused"});
  },
  resume: () => {
    if (call("gf_status", [], []).state !== "ready") return;  // none, or finished
    running = true;
    postMessage({type: "resumed"});
    queueSlice();
  },
  step: () => {
    running = false;
    postMessage({type: "paused"});
    report(call("gf_step", ["number", "number"], [1, 0]), true);
  },
  example: (message) => {
    example = message.index;
    const state = call("gf_status", [], []).state;
    if (state !== "none" && state !== "opened") sendAttention();
  },
  decode: (message) => {
    const decoded = call("gf_decode", ["string", "number"], [message.source, message.beam]);
    postMessage({type: "decoded", id: message.id, source: message.source, ...decoded});
  },
  sampling: (message) => {
    sampling = message.settings;
  },
  sample: (message) => {
    postMessage({type: "sample", id: message.id, auto: false, settings: message.settings,
                 ...sampled(message.settings)});
  },
  page: (message) => {
    postMessage({type: "page", id: message.id, html: call("gf_page", [], []).html});
  },
  save: (message) => {
    const bytes = engine.FS.readFile(call("gf_save", [], []).path);
    postMessage({type: "checkpoint", id: message.id, bytes}, [bytes.buffer]);
  },
  open: (message) => {
    engine.FS.writeFile(OPENED, new Uint8Array(message.bytes));
    try {
      // A file that is not a checkpoint fails here, and the run, if any, goes on.
      const opened = call("gf_open", ["string", "string"], [OPENED, message.name]);
      running = false;
      languageModel = opened.settings.decoder_only;
      postMessage({type: "opened", id: message.id, name: message.name, ...opened});
    } finally {
      engine.FS.unlink(OPENED);
    }
  },
};

// Any failure goes to the page, which shows it. A failed request (an id: decode, save, open)
// leaves the run as it was; any other failure stops it.
function guarded(action, id) {
  try {
    action();
  } catch (e) {
    if (id === undefined) running = false;
    const message = e instanceof EngineError ? e.message : `the engine failed: ${e}`;
    postMessage({type: "error", id, message});
  }
}

// Resolves to whether the engine loaded; messages that arrive meanwhile wait for it, in order.
const loaded = performance.now();
const ready = createGradformer().then((module) => {
  engine = module;
  postMessage({type: "ready", milliseconds: performance.now() - loaded});
  return true;
}, (e) => {
  postMessage({type: "error", message: `the engine did not load: ${e}`});
  return false;
});

onmessage = (event) => {
  ready.then((ok) => ok && guarded(() => handlers[event.data.type](event.data), event.data.id));
};
