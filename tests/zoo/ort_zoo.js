#!/usr/bin/env node
// ort_zoo.js — the ONNX Runtime side of the model zoo (tests/zoo/zoo.py).
//
//   node tests/zoo/ort_zoo.js run JOB.json
//   node tests/zoo/ort_zoo.js bench JOB.json
//
// JOB.json (written by zoo.py):
//   { "model": PATH, "threads": N,
//     "steps": [ { "NAME": "FILE.npy", ... }, ... ],   one feed set per step
//     "state": { "OUTPUT": "INPUT", ... },              streaming: fed back
//     "outdir": DIR,                                    run: DIR/<step>/<name>.npy
//     "runs": N, "warmup": N }                          bench
//
// run: step 0 is fed as given; from step 1 on, each INPUT named in "state"
// is fed ONNX Runtime's own OUTPUT of the step before (the feed file of
// that input is ignored), the way a streaming model is used.  Every output
// of every step is written with the same name mangling as `strata run`.
// bench: run i is fed step i mod steps, and a streaming model its own
// state of the run before; `warmup` untimed runs, then `runs` timed
// session.run calls; prints one JSON line with every time in ms (the same
// as st_bench.py does for strata).
'use strict';
const fs = require('fs');
const path = require('path');
const npy = require('../../scripts/ort/npy');
const ort = require(path.join(__dirname, '../../node_modules/onnxruntime-node'));

function tensorOf(file) {
  const a = npy.read(file);
  return new ort.Tensor(a.type === 'bool' ? 'bool' : a.type, a.data, a.shape);
}

async function main() {
  const [mode, jobFile] = process.argv.slice(2);
  if (!['run', 'bench'].includes(mode) || !jobFile) {
    console.error('usage: ort_zoo.js run|bench JOB.json');
    process.exit(2);
  }
  const job = JSON.parse(fs.readFileSync(jobFile, 'utf8'));
  const session = await ort.InferenceSession.create(job.model, {
    intraOpNumThreads: job.threads || 1, interOpNumThreads: 1, graphOptimizationLevel: 'all',
    executionMode: 'sequential',
  });
  const feedsOf = (step) => {
    const feeds = {};
    for (const [name, file] of Object.entries(step)) feeds[name] = tensorOf(file);
    return feeds;
  };
  const state = job.state || {};
  if (mode === 'bench') {
    // run i gets step i mod steps, and its own state outputs of the run before
    const steps = job.steps.map(feedsOf);
    const warmup = job.warmup ?? 1;
    const t = [];
    let prev = null;
    for (let i = 0; i < warmup + (job.runs ?? 5); i++) {
      const feeds = { ...steps[i % steps.length] };
      if (prev) for (const [out, inp] of Object.entries(state)) feeds[inp] = prev[out];
      const t0 = process.hrtime.bigint();
      prev = await session.run(feeds);
      if (i >= warmup) t.push(Number(process.hrtime.bigint() - t0) / 1e6);
    }
    console.log(JSON.stringify({ runtime: 'onnxruntime', threads: job.threads, times_ms: t }));
    return;
  }
  let prev = null;
  for (let k = 0; k < job.steps.length; k++) {
    const feeds = feedsOf(job.steps[k]);
    if (prev) for (const [out, inp] of Object.entries(state)) feeds[inp] = prev[out];
    const out = await session.run(feeds);
    const dir = path.join(job.outdir, String(k));
    fs.mkdirSync(dir, { recursive: true });
    for (const name of session.outputNames) {
      const t = out[name];
      npy.write(path.join(dir, `${name.replace(/[^A-Za-z0-9._-]/g, '_')}.npy`), t.type, t.dims, t.data);
    }
    prev = out;
  }
  console.log(`ort: ${job.steps.length} step(s), outputs ${session.outputNames.join(', ')}`);
}

main().catch((e) => {
  console.error(`ort: ${e.message}`);
  process.exit(1);
});
