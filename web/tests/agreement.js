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
//   node agreement.js ENGINE.js NATIVE_TRANSFORMER [STEPS]
"use strict";

const { execFileSync } = require("child_process");
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

async function wasmRun() {
  const engine = await require(path.resolve(enginePath))();
  const call = (name, types, args) => {
    const answer = JSON.parse(engine.ccall(name, "string", types, args));
    if (answer.error) throw new Error(`${name}: ${answer.error}`);
    return answer;
  };
  call("gf_start", ["string", "string"], [`task=copy&steps=${steps}`, ""]);
  while (call("gf_step", ["number", "number"], [100, 1e9]).state !== "finished");
  return { losses: call("gf_losses", ["number"], [0]).losses, exact: call("gf_score", [], []).score };
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
  for (const problem of problems) console.error(`FAILED: ${problem}`);
  process.exit(problems.length ? 1 : 0);
})().catch((e) => {
  console.error(e);
  process.exit(1);
});
