#!/usr/bin/env node
// conformance.js — runs the ONNX backend tests through ONNX Runtime
// (onnxruntime-node, CPU), with the same data and the same comparison as
// strata's tests/conformance runner (|got - want| <= 1e-7 + 1e-3 * |want|,
// exact for integers, bools and strings, NaN matches NaN), so README can
// put the two pass counts side by side.  Each argument is a set of
// /usr/share/libonnx-testdata/data (node, pytorch-converted,
// pytorch-operator, simple: all four when none is given) or a directory;
// one line per set.
//
//   node scripts/ort/conformance.js [SET|DIR]... [-v]
'use strict';
const fs = require('fs');
const path = require('path');
const ort = require(path.join(__dirname, '../../node_modules/onnxruntime-node'));

// --- a minimal protobuf reader for onnx.TensorProto -----------------------
function readVarint(buf, pos) {
  let result = 0n;
  let shift = 0n;
  for (;;) {
    const b = buf[pos.i++];
    result |= BigInt(b & 0x7f) << shift;
    if (!(b & 0x80)) return result;
    shift += 7n;
  }
}

const TYPES = {
  1: ['float32', Float32Array, 4], 2: ['uint8', Uint8Array, 1], 3: ['int8', Int8Array, 1],
  4: ['uint16', Uint16Array, 2], 5: ['int16', Int16Array, 2], 6: ['int32', Int32Array, 4],
  7: ['int64', BigInt64Array, 8], 9: ['bool', Uint8Array, 1], 10: ['float16', Uint16Array, 2],
  11: ['float64', Float64Array, 8], 12: ['uint32', Uint32Array, 4], 13: ['uint64', BigUint64Array, 8],
};

function parseTensor(buf) {
  const pos = { i: 0 };
  const dims = [];
  let dtype = 0;
  let raw = null;
  const typed = { 4: [], 5: [], 6: [], 7: [], 10: [], 11: [] };
  while (pos.i < buf.length) {
    const key = Number(readVarint(buf, pos));
    const field = key >> 3;
    const wire = key & 7;
    if (wire === 0) {
      const v = readVarint(buf, pos);
      if (field === 1) dims.push(Number(BigInt.asIntN(64, v)));
      else if (field === 2) dtype = Number(v);
      else if (typed[field]) typed[field].push(v);
    } else if (wire === 2) {
      const len = Number(readVarint(buf, pos));
      const sub = buf.subarray(pos.i, pos.i + len);
      pos.i += len;
      if (field === 9) raw = sub;
      else if (field === 6) typed[6].push(Buffer.from(sub).toString('utf8'));
      else if (field === 1 || field === 5 || field === 7 || field === 11) {
        const p = { i: 0 };
        while (p.i < sub.length) {
          const v = readVarint(sub, p);
          if (field === 1) dims.push(Number(BigInt.asIntN(64, v)));
          else typed[field].push(v);
        }
      } else if (field === 4) {
        for (let k = 0; k < sub.length; k += 4) typed[4].push(sub.readFloatLE(k));
      } else if (field === 10) {
        for (let k = 0; k < sub.length; k += 8) typed[10].push(sub.readDoubleLE(k));
      }
    } else if (wire === 5) {
      if (field === 4) typed[4].push(buf.readFloatLE(pos.i));
      pos.i += 4;
    } else if (wire === 1) {
      if (field === 10) typed[10].push(buf.readDoubleLE(pos.i));
      pos.i += 8;
    } else {
      throw new Error(`unsupported wire type ${wire}`);
    }
  }
  if (dtype === 8) return { type: 'string', dims, data: typed[6] };
  const t = TYPES[dtype];
  if (!t) throw new Error(`unsupported tensor type ${dtype}`);
  const n = dims.reduce((a, b) => a * b, 1);
  const [name, Ctor, size] = t;
  let data;
  if (raw) {
    const copy = new Uint8Array(raw.length);
    copy.set(raw);
    data = new Ctor(copy.buffer, 0, raw.length / size);
  } else {
    data = new Ctor(n);
    const src = dtype === 1 ? typed[4] : dtype === 11 ? typed[10] : dtype === 7 ? typed[7]
      : dtype === 12 || dtype === 13 ? typed[11] : typed[5];
    for (let k = 0; k < n; k++) {
      const v = src[k];
      if (Ctor === BigInt64Array) data[k] = BigInt.asIntN(64, v);
      else if (Ctor === BigUint64Array) data[k] = BigInt.asUintN(64, v);
      else data[k] = typeof v === 'bigint' ? Number(BigInt.asIntN(64, v)) : v;
    }
  }
  return { type: name, dims, data };
}

function f16ToF32(h) {
  const s = h & 0x8000 ? -1 : 1;
  const e = (h >> 10) & 0x1f;
  const m = h & 0x3ff;
  if (e === 0) return s * m * 2 ** -24;
  if (e === 31) return m ? NaN : s * Infinity;
  return s * (1 + m / 1024) * 2 ** (e - 15);
}

function close(type, got, want) {
  if (got.length !== want.length) return false;
  const isFloat = type === 'float32' || type === 'float64' || type === 'float16';
  if (type === 'string') return want.every((w, i) => got[i] === w);
  for (let i = 0; i < want.length; i++) {
    let g = got[i];
    let w = want[i];
    if (type === 'float16') {
      g = f16ToF32(g);
      w = f16ToF32(w);
    }
    if (!isFloat) {
      if (g !== w) return false;
      continue;
    }
    if (Number.isNaN(w)) {
      if (!Number.isNaN(g)) return false;
      continue;
    }
    if (!Number.isFinite(w)) {
      if (g !== w) return false;
      continue;
    }
    if (!(Math.abs(g - w) <= 1e-7 + 1e-3 * Math.abs(w))) return false;
  }
  return true;
}

async function runCase(dir) {
  const session = await ort.InferenceSession.create(path.join(dir, 'model.onnx'), {
    intraOpNumThreads: 1, interOpNumThreads: 1, logSeverityLevel: 4,
  });
  const sets = fs.readdirSync(dir).filter((d) => d.startsWith('test_data_set_')).sort();
  if (!sets.length) throw new Error('no test data sets');
  for (const set of sets) {
    const sdir = path.join(dir, set);
    const feeds = {};
    for (let k = 0; ; k++) {
      const f = path.join(sdir, `input_${k}.pb`);
      if (!fs.existsSync(f)) break;
      const t = parseTensor(fs.readFileSync(f));
      feeds[session.inputNames[k]] = new ort.Tensor(t.type, t.data, t.dims);
    }
    const out = await session.run(feeds);
    for (let k = 0; ; k++) {
      const f = path.join(sdir, `output_${k}.pb`);
      if (!fs.existsSync(f)) break;
      const want = parseTensor(fs.readFileSync(f));
      const got = out[session.outputNames[k]];
      if (!got) throw new Error(`no output ${k}`);
      if (got.dims.join(',') !== want.dims.join(',')) throw new Error(`output ${k}: shape [${got.dims}] != [${want.dims}]`);
      if (!close(want.type, got.data, want.data)) throw new Error(`output ${k}: values differ`);
    }
  }
}

// ONNX Runtime's StringNormalizer builds std::locale("en_US.UTF-8"), and
// a fresh Debian 12 machine has the locale's sources (package locales) but
// not the compiled locale, so every StringNormalizer case would fail on the
// machine's set-up rather than on what ONNX Runtime implements.  Compile it
// into a private directory (localedef needs no root there) and point glibc
// at it with LOCPATH, which it reads whenever a locale is made.
function ensureLocale() {
  const { spawnSync } = require('child_process');
  if (process.env.LOCPATH) return;
  const have = spawnSync('locale', ['-a'], { encoding: 'utf8' });
  if (have.status === 0 && /^en_US\.utf-?8$/im.test(have.stdout)) return;
  const dir = path.join(require('os').tmpdir(), 'strata-ort-locales');
  if (!fs.existsSync(path.join(dir, 'en_US.UTF-8'))) {
    fs.mkdirSync(dir, { recursive: true });
    const r = spawnSync('localedef', ['-i', 'en_US', '-f', 'UTF-8', path.join(dir, 'en_US.UTF-8')], { encoding: 'utf8' });
    if (r.status !== 0 && r.status !== 1) { // 1: warnings only
      console.error(`conformance.js: cannot compile en_US.UTF-8 for StringNormalizer: ${r.stderr || r.error}`);
      return;
    }
  }
  process.env.LOCPATH = dir;
}

const ROOT = '/usr/share/libonnx-testdata/data';
const SETS = ['node', 'pytorch-converted', 'pytorch-operator', 'simple'];

async function runSet(dir, verbose) {
  const cases = fs.readdirSync(dir).filter((d) => d.startsWith('test_')).sort();
  let pass = 0;
  let fail = 0;
  for (const c of cases) {
    try {
      await runCase(path.join(dir, c));
      pass++;
      if (verbose) console.log(`PASS ${c}`);
    } catch (e) {
      fail++;
      if (verbose) console.log(`FAIL ${c}: ${String(e.message).split('\n')[0]}`);
    }
  }
  const version = require(path.join(__dirname, '../../node_modules/onnxruntime-node/package.json')).version;
  console.log(`onnxruntime ${version} (${path.basename(dir)}): ${pass} passed, ${fail} failed or refused of ${cases.length} cases`);
}

async function main() {
  const args = process.argv.slice(2);
  const verbose = args.includes('-v');
  const sets = args.filter((a) => a !== '-v');
  ensureLocale();
  ort.env.logLevel = 'fatal'; // a refusal is reported by its exception (-v)
  for (const s of sets.length ? sets : SETS) await runSet(s.includes('/') ? s : path.join(ROOT, s), verbose);
}

main();
