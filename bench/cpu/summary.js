#!/usr/bin/env node
// summary.js — the table bench/cpu/run.sh prints, from its results.jsonl:
// per case the median of every timed run of each runtime over all rounds,
// strata / ONNX Runtime, peak RSS (largest over rounds), the FLOP count, the
// floor FLOPs / peak and the fraction of the peak each runtime reaches.
//
//   node bench/cpu/summary.js results.jsonl
'use strict';
const fs = require('fs');

const lines = fs.readFileSync(process.argv[2], 'utf8').split('\n').filter((l) => l.trim());
const rows = lines.map((l) => JSON.parse(l));
const peak = rows.find((r) => r.kind === 'peak').data;
const flops = {};
const runs = {};
const order = [];
for (const r of rows) {
  if (r.kind === 'flops') {
    flops[r.case] = r.data;
    order.push(r.case);
  }
  if (r.kind === 'run') {
    const k = `${r.case}/${r.data.runtime}`;
    (runs[k] = runs[k] || []).push(r.data);
  }
}
const median = (a) => {
  const s = [...a].sort((x, y) => x - y);
  const n = s.length;
  return n % 2 ? s[(n - 1) / 2] : (s[n / 2 - 1] + s[n / 2]) / 2;
};
const mb = (b) => (b / 1e6).toFixed(1);
console.log(`peak: ${peak.peak_gflops} GFLOP/s f32 on ${peak.threads} threads (bench/cpu/peak.c)\n`);
console.log('| case | GFLOP | floor ms | strata ms | ORT ms | strata/ORT | strata % peak | ORT % peak | strata RSS MB | ORT RSS MB (node alone) | RSS strata/ORT |');
console.log('|---|---|---|---|---|---|---|---|---|---|---|');
for (const c of order) {
  const s = runs[`${c}/strata`] || [];
  const o = runs[`${c}/onnxruntime`] || [];
  if (!s.length || !o.length) continue;
  const gf = flops[c].gflop;
  const floor = (gf / peak.peak_gflops) * 1e3;
  const sm = median(s.flatMap((d) => d.times_ms));
  const om = median(o.flatMap((d) => d.times_ms));
  const srss = Math.max(...s.map((d) => d.peak_rss_bytes));
  const orss = Math.max(...o.map((d) => d.peak_rss_bytes));
  const node = median(o.map((d) => d.node_baseline_rss_bytes));
  console.log(`| ${c} | ${gf.toFixed(2)} | ${floor.toFixed(1)} | ${sm.toFixed(1)} | ${om.toFixed(1)} | ` +
    `${(sm / om).toFixed(2)} | ${((100 * floor) / sm).toFixed(0)}% | ${((100 * floor) / om).toFixed(0)}% | ` +
    `${mb(srss)} | ${mb(orss)} (${mb(node)}) | ${(srss / orss).toFixed(2)} |`);
}
