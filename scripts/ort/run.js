#!/usr/bin/env node
// run.js — runs a model with ONNX Runtime (onnxruntime-node, CPU) on .npy
// inputs and writes each output as OUTDIR/<name>.npy (the same name
// mangling as `strata run`).  strata's tests use it as the independent
// reference for the real models.
//
//   node scripts/ort/run.js MODEL OUTDIR [NAME=FILE.npy | FILE.npy]... [--threads N]
'use strict';
const path = require('path');
const npy = require('./npy');
const ort = require(path.join(__dirname, '../../node_modules/onnxruntime-node'));

async function main() {
  const args = process.argv.slice(2);
  let threads = 1;
  const pos = [];
  for (let i = 0; i < args.length; i++) {
    if (args[i] === '--threads') threads = Number(args[++i]);
    else pos.push(args[i]);
  }
  const [model, outdir, ...inputs] = pos;
  if (!model || !outdir) {
    console.error('usage: run.js MODEL OUTDIR [NAME=FILE.npy]... [--threads N]');
    process.exit(2);
  }
  const session = await ort.InferenceSession.create(model, {
    intraOpNumThreads: threads, interOpNumThreads: 1, graphOptimizationLevel: 'all',
  });
  const feeds = {};
  let next = 0;
  for (const spec of inputs) {
    // NAME=FILE when '=' comes before any '/'; otherwise the next input in order
    const eq = spec.indexOf('=');
    const slash = spec.indexOf('/');
    const named = eq > 0 && (slash < 0 || slash > eq);
    const name = named ? spec.slice(0, eq) : session.inputNames[next++];
    const a = npy.read(named ? spec.slice(eq + 1) : spec);
    feeds[name] = new ort.Tensor(a.type, a.data, a.shape);
  }
  const out = await session.run(feeds);
  for (const name of session.outputNames) {
    const t = out[name];
    const fname = name.replace(/[^A-Za-z0-9._-]/g, '_');
    npy.write(path.join(outdir, `${fname}.npy`), t.type, t.dims, t.data);
    console.log(`${name}: [${t.dims.join(', ')}] ${t.type}`);
  }
}

main().catch((e) => {
  console.error(`ort: ${e.message}`);
  process.exit(1);
});
