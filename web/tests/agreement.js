// The library built for WebAssembly trains as the native one does: the copy task with the
// defaults of `transformer train`, seed 1, through the engine (web/engine.cpp) under Node and
// through the native command at one thread, step by step.
//
// Not bit for bit: WebAssembly has no fused multiply-add, keeps subnormal numbers where the
// native kernels flush them to zero (autograd/kernels/cpu.h), and brings another libm. Those
// differences start in the last digits and training amplifies them, so the test holds what they
// cannot change quickly and what they should not change at all:
//   - the first 50 losses agree within a relative 1e-4 (the same weights, batches and
//     arithmetic up to rounding);
//   - the median loss of the last 100 steps agrees within 2% (the same place reached);
//   - both models copy at least 95% of 100 fresh sequences exactly.
//
// Then the same for the playground's language model (task lm, on the engine's built-in text,
// with its defaults, for STEPS / 2 steps): the built-in text is the first column of what
// `transformer generate` writes, the native command given the options the engine reports as
// flags trains on it with the same first 50 losses (within 1e-4) and the same median loss over
// the last 50 steps (within 2%), and the dev perplexity of the step before the last (every
// window of the dev text) is within 2% of the engine's.
//
//   node agreement.js ENGINE.js NATIVE_TRANSFORMER [STEPS]
"use strict";

const { execFileSync, spawnSync } = require("child_process");
const fs = require("fs");
const os = require("os");
const path = require("path");

const [enginePath, nativePath, stepsText = "400"] = process.argv.slice(2);
const steps = Number(stepsText);
if (!enginePath || !nativePath) {
  console.error("usage: node agreement.js ENGINE.js NATIVE_TRANSFORMER [STEPS]");
  process.exit(2);
}
if (!fs.existsSync(nativePath)) {
  console.error(`${nativePath}: no native transformer; build the release preset first ` +
                "(cmake --preset release && cmake --build --preset release)");
  process.exit(1);
}

function nativeRun() {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), "gradformer-agreement-"));
  try {
    const out = execFileSync(nativePath, [
      "train", "--task", "copy", "--steps", String(steps), "--threads", "1", "--snapshots", "0",
      "--save", path.join(dir, "model.safetensors"), "--log-losses", path.join(dir, "losses.tsv"),
    ], { encoding: "utf8", stdio: ["ignore", "pipe", "pipe"] });
    const losses = fs.readFileSync(path.join(dir, "losses.tsv"), "utf8").trim().split("\n")
      .map((line) => Number(line.split("\t")[1]));
    const exact = /exact: ([\d.]+)% of 100 fresh sequences/.exec(out);
    if (!exact) throw new Error(`no exact score in the native output:\n${out}`);
    return { losses, exact: Number(exact[1]) / 100 };
  } finally {
    fs.rmSync(dir, { recursive: true, force: true });
  }
}

async function startEngine() {
  const engine = await require(path.resolve(enginePath))();
  const call = (name, types, args) => {
    const answer = JSON.parse(engine.ccall(name, "string", types, args));
    if (answer.error) throw new Error(`${name}: ${answer.error}`);
    return answer;
  };
  return { engine, call };
}

async function wasmRun() {
  const { call } = await startEngine();
  call("gf_start", ["string", "string"], [`task=copy&steps=${steps}`, ""]);
  while (call("gf_step", ["number", "number"], [100, 1e9]).state !== "finished");
  return { losses: call("gf_losses", ["number"], [0]).losses, exact: call("gf_score", [], []).score };
}

// An options line as `transformer train` flags: key=value is --key value, but norm=pre is the
// flag --norm-first and tied=false is --no-tied (training/run_options.h).
function flagsOf(options) {
  const flags = [];
  for (const [key, value] of new URLSearchParams(options)) {
    if (key === "norm") flags.push(...(value === "pre" ? ["--norm-first"] : []));
    else if (key === "tied") flags.push(...(value === "false" ? ["--no-tied"] : []));
    else flags.push(`--${key}`, value);
  }
  return flags;
}

// The language model: the engine's run on its built-in text, then the native run of the same
// options on the files `transformer generate` writes.
async function languageModelRuns(lmSteps, problems) {
  const { engine, call } = await startEngine();
  const started = call("gf_start", ["string", "string"], [`task=lm&steps=${lmSteps}`, ""]);
  // Scored one step before the end, where the native run checks (a check at the last step is
  // left to the end, which scores the weights it chooses).
  call("gf_step", ["number", "number"], [lmSteps - 1, 1e9]);
  const perplexity = call("gf_score", [], []).score;
  while (call("gf_step", ["number", "number"], [100, 1e9]).state !== "finished");
  const wasm = { losses: call("gf_losses", ["number"], [0]).losses, perplexity };
  const builtIn = ["toy English (train)", "toy English (dev)"]
    .map((name) => engine.FS.readFile(name, { encoding: "utf8" }));

  const dir = fs.mkdtempSync(path.join(os.tmpdir(), "gradformer-agreement-lm-"));
  try {
    execFileSync(nativePath, ["generate", "--out", dir], { stdio: "ignore" });
    const files = ["train", "dev"].map((part) => {
      const lines = fs.readFileSync(path.join(dir, `${part}.tsv`), "utf8").split("\n").filter((l) => l);
      const text = lines.map((line) => `${line.split("\t")[0]}\n`).join("");
      fs.writeFileSync(path.join(dir, `${part}.txt`), text);
      return text;
    });
    if (files[0] !== builtIn[0] || files[1] !== builtIn[1])
      problems.push("the engine's built-in text is not the first column of transformer generate's files");
    const done = spawnSync(nativePath, [
      "train", ...flagsOf(started.settings.options), "--data", path.join(dir, "train.txt"),
      "--dev", path.join(dir, "dev.txt"), "--threads", "1", "--snapshots", "0", "--eval-every", String(lmSteps - 1),
      "--save", path.join(dir, "model.safetensors"), "--log-losses", path.join(dir, "losses.tsv"),
    ], { encoding: "utf8" });
    const out = `${done.stdout}${done.stderr}`;  // the checks' lines go with the progress, to stderr
    if (done.status !== 0) throw new Error(`the native language model failed:\n${out}`);
    const losses = fs.readFileSync(path.join(dir, "losses.tsv"), "utf8").trim().split("\n")
      .map((line) => Number(line.split("\t")[1]));
    const checked = new RegExp(`step ${lmSteps - 1}: perplexity ([\\d.]+)`).exec(out);
    if (!checked) throw new Error(`no perplexity at step ${lmSteps - 1} in the native output:\n${out}`);
    return { wasm, native: { losses, perplexity: Number(checked[1]) }, options: started.settings.options };
  } finally {
    fs.rmSync(dir, { recursive: true, force: true });
  }
}

function median(values) {
  const sorted = [...values].sort((a, b) => a - b);
  const half = sorted.length >> 1;
  return sorted.length % 2 ? sorted[half] : (sorted[half - 1] + sorted[half]) / 2;
}

(async () => {
  const native = nativeRun();
  const wasm = await wasmRun();
  const problems = [];
  if (native.losses.length !== steps || wasm.losses.length !== steps)
    problems.push(`losses: ${native.losses.length} native and ${wasm.losses.length} WebAssembly, ` +
                  `${steps} asked`);
  let worst = 0;
  for (let i = 0; i < 50; ++i)
    worst = Math.max(worst, Math.abs(wasm.losses[i] - native.losses[i]) / native.losses[i]);
  const last = (losses) => median(losses.slice(-100));
  const apart = Math.abs(last(wasm.losses) - last(native.losses)) / last(native.losses);
  console.log(`first 50 losses: largest relative difference ${worst.toExponential(2)} (1e-4 allowed)`);
  console.log(`median loss of the last 100 steps: native ${last(native.losses).toFixed(4)}, ` +
              `WebAssembly ${last(wasm.losses).toFixed(4)}, ${(100 * apart).toFixed(2)}% apart ` +
              "(2% allowed)");
  console.log(`exact copies of 100 fresh sequences: native ${native.exact}, ` +
              `WebAssembly ${wasm.exact} (0.95 asked of each)`);
  if (!(worst <= 1e-4)) problems.push("the first 50 losses differ by more than 1e-4");
  if (!(apart <= 0.02)) problems.push("the last 100 steps' median losses differ by more than 2%");
  if (!(native.exact >= 0.95 && wasm.exact >= 0.95)) problems.push("a model copies under 95%");

  const lmSteps = Math.max(100, Math.round(steps / 2));
  const lm = await languageModelRuns(lmSteps, problems);
  let lmWorst = 0;
  for (let i = 0; i < 50; ++i)
    lmWorst = Math.max(lmWorst, Math.abs(lm.wasm.losses[i] - lm.native.losses[i]) / lm.native.losses[i]);
  const tail = (losses) => median(losses.slice(-50));
  const lmApart = Math.abs(tail(lm.wasm.losses) - tail(lm.native.losses)) / tail(lm.native.losses);
  console.log(`language model (${lm.options}, ${lmSteps} steps): first 50 losses within ` +
              `${lmWorst.toExponential(2)} (1e-4 allowed); median loss of the last 50 steps: native ` +
              `${tail(lm.native.losses).toFixed(4)}, WebAssembly ${tail(lm.wasm.losses).toFixed(4)}, ` +
              `${(100 * lmApart).toFixed(2)}% apart (2% allowed)`);
  if (lm.native.losses.length !== lmSteps || lm.wasm.losses.length !== lmSteps)
    problems.push(`language model losses: ${lm.native.losses.length} native and ${lm.wasm.losses.length} ` +
                  `WebAssembly, ${lmSteps} asked`);
  if (!(lmWorst <= 1e-4)) problems.push("the language model's first 50 losses differ by more than 1e-4");
  const lmPerplexity = Math.abs(lm.wasm.perplexity - lm.native.perplexity) / lm.native.perplexity;
  console.log(`language model: dev perplexity at step ${lmSteps - 1}: native ${lm.native.perplexity}, ` +
              `WebAssembly ${lm.wasm.perplexity.toFixed(2)}, ${(100 * lmPerplexity).toFixed(2)}% apart (2% allowed)`);
  if (!(lmApart <= 0.02)) problems.push("the language model's last 50 steps' median losses differ by more than 2%");
  if (!(lmPerplexity <= 0.02)) problems.push("the language model's dev perplexities differ by more than 2%");
  for (const problem of problems) console.error(`FAILED: ${problem}`);
  process.exit(problems.length ? 1 : 0);
})().catch((e) => {
  console.error(e);
  process.exit(1);
});
