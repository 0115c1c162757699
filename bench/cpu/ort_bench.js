#!/usr/bin/env node
// ort_bench.js — the ONNX Runtime side of bench/cpu/run.sh: times one model
// with onnxruntime-node on the CPU (intraOpNumThreads N, interOpNumThreads
// 1, all graph optimisations) and prints one JSON line: the median, min and
// max milliseconds of the timed runs, every run's time, peak RSS (VmHWM)
// of this process, and node's own RSS before onnxruntime was loaded.
//
//   node bench/cpu/ort_bench.js MODEL INPUT.npy [--threads N] [--runs N] [--warmup N]
'use strict';
const fs = require('fs');
const path = require('path');

function status(key) {
  const m = new RegExp(`^${key}:\\s+(\\d+) kB`, 'm').exec(fs.readFileSync('/proc/self/status', 'utf8'));
  return m ? Number(m[1]) * 1024 : 0;
}

const baseline = status('VmRSS');
const npy = require('../../scripts/ort/npy');
const ort = require(path.join(__dirname, '../../node_modules/onnxruntime-node'));

async function main() {
  const args = process.argv.slice(2);
  const opt = { threads: 2, runs: 20, warmup: 3 };
  const pos = [];
  for (let i = 0; i < args.length; i++) {
    if (args[i].startsWith('--')) opt[args[i].slice(2)] = Number(args[++i]);
    else pos.push(args[i]);
  }
  const [model, input] = pos;
  if (!model || !input) {
    console.error('usage: ort_bench.js MODEL INPUT.npy [--threads N] [--runs N] [--warmup N]');
    process.exit(2);
  }
  const session = await ort.InferenceSession.create(model, {
    intraOpNumThreads: opt.threads, interOpNumThreads: 1, graphOptimizationLevel: 'all',
    executionMode: 'sequential',
  });
  const a = npy.read(input);
  const feeds = { [session.inputNames[0]]: new ort.Tensor(a.type, a.data, a.shape) };
  for (let i = 0; i < opt.warmup; i++) await session.run(feeds);
  const t = [];
  for (let i = 0; i < opt.runs; i++) {
    const t0 = process.hrtime.bigint();
    await session.run(feeds);
    t.push(Number(process.hrtime.bigint() - t0) / 1e6);
  }
  const s = [...t].sort((x, y) => x - y);
  const n = s.length;
  const median = n % 2 ? s[(n - 1) / 2] : (s[n / 2 - 1] + s[n / 2]) / 2;
  console.log(JSON.stringify({
    runtime: 'onnxruntime', version: ort.env.versions ? ort.env.versions.common : '1.30', model, threads: opt.threads,
    runs: n, median_ms: median, min_ms: s[0], max_ms: s[n - 1], times_ms: t,
    peak_rss_bytes: status('VmHWM'), node_baseline_rss_bytes: baseline,
  }));
}

main().catch((e) => {
  console.error(`ort_bench: ${e.message}`);
  process.exit(1);
});
