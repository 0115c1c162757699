#!/usr/bin/env node
// ort_as_strata.js — the harness's own test: stands in for `strata run`
// (same arguments, same output files) but runs ONNX Runtime, so that
// `zoo.py check ID --strata tests/zoo/ort_as_strata.js` must pass on any
// model, streaming ones included, and must fail when a fault is injected:
//
//   ZOO_FAULT=state   state inputs that come from the previous step's
//                     outputs are replaced by zeros (a runtime that does
//                     not carry its state): the check must fail at step 1
//   ZOO_FAULT=scale   every float output is multiplied by 1 + 1e-3: the
//                     check must fail on tolerance
//
//   ort_as_strata.js run MODEL -o DIR -i NAME=FILE.npy ... [other strata options, ignored]
'use strict';
const fs = require('fs');
const path = require('path');
const npy = require('../../scripts/ort/npy');
const ort = require(path.join(__dirname, '../../node_modules/onnxruntime-node'));

async function main() {
  const args = process.argv.slice(2);
  if (args[0] !== 'run') throw new Error('only `run` is imitated');
  const model = args[1];
  let outdir = '.';
  const inputs = [];
  for (let i = 2; i < args.length; i++) {
    if (args[i] === '-o') outdir = args[++i];
    else if (args[i] === '-i') inputs.push(args[++i]);
    else if (['--threads', '--seed', '--dim', '--precision'].includes(args[i])) i++;
  }
  const fault = process.env.ZOO_FAULT || '';
  const session = await ort.InferenceSession.create(model, { intraOpNumThreads: 1 });
  const feeds = {};
  for (const spec of inputs) {
    const eq = spec.indexOf('=');
    const name = spec.slice(0, eq);
    const file = spec.slice(eq + 1);
    const a = npy.read(file);
    // the harness feeds a state input from the previous step's output directory
    if (fault === 'state' && file.split(path.sep).includes('strata')) a.data.fill(0);
    feeds[name] = new ort.Tensor(a.type, a.data, a.shape);
  }
  const out = await session.run(feeds);
  fs.mkdirSync(outdir, { recursive: true });
  for (const name of session.outputNames) {
    const t = out[name];
    if (fault === 'scale' && t.type === 'float32') for (let i = 0; i < t.data.length; i++) t.data[i] *= 1 + 1e-3;
    npy.write(path.join(outdir, `${name.replace(/[^A-Za-z0-9._-]/g, '_')}.npy`), t.type, t.dims, t.data);
  }
}

main().catch((e) => {
  console.error(`strata: ${e.message}`);
  process.exit(1);
});
