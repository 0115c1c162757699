// npy.js — reading and writing NumPy .npy files (little-endian, C order)
// for the ONNX Runtime peer scripts; strings as NumPy's '<U' (and '|S' read).
'use strict';
const fs = require('fs');

const DESCR = {
  '<f4': ['float32', Float32Array], '<f8': ['float64', Float64Array],
  '<i8': ['int64', BigInt64Array], '<i4': ['int32', Int32Array], '<i2': ['int16', Int16Array],
  '|i1': ['int8', Int8Array], '|u1': ['uint8', Uint8Array], '<u2': ['uint16', Uint16Array],
  '<u4': ['uint32', Uint32Array], '<u8': ['uint64', BigUint64Array], '|b1': ['bool', Uint8Array],
  '<f2': ['float16', Uint16Array],
};

function read(path) {
  const buf = fs.readFileSync(path);
  if (buf.length < 10 || buf.toString('latin1', 1, 6) !== 'NUMPY') throw new Error(`${path}: not a .npy file`);
  const major = buf[6];
  const hlen = major === 1 ? buf.readUInt16LE(8) : buf.readUInt32LE(8);
  const hstart = major === 1 ? 10 : 12;
  const header = buf.toString('latin1', hstart, hstart + hlen);
  const descr = /'descr':\s*'([^']+)'/.exec(header)[1];
  if (/'fortran_order':\s*True/.test(header)) throw new Error(`${path}: fortran order is not supported`);
  const shape = /'shape':\s*\(([^)]*)\)/.exec(header)[1].split(',').map((s) => s.trim()).filter((s) => s).map(Number);
  const start = hstart + hlen;
  // strings: NumPy's fixed-width unicode (UTF-32LE) and bytes, NULs trailing
  const str = /^[<|]([US])(\d+)$/.exec(descr);
  if (str) {
    const width = Number(str[2]), es = str[1] === 'U' ? 4 * width : width;
    const n = shape.reduce((a, b) => a * b, 1);
    const data = [];
    for (let i = 0; i < n; i++) {
      const e = buf.subarray(start + i * es, start + (i + 1) * es);
      let s = '';
      if (str[1] === 'U') {
        for (let k = 0; k < width; k++) {
          const c = e.readUInt32LE(4 * k);
          if (!c) break;
          s += String.fromCodePoint(c);
        }
      } else {
        const z = e.indexOf(0);
        s = e.subarray(0, z < 0 ? width : z).toString('utf8');
      }
      data.push(s);
    }
    return { type: 'string', shape, data };
  }
  const [type, Ctor] = DESCR[descr] || [];
  if (!type) throw new Error(`${path}: unsupported dtype ${descr}`);
  const bytes = buf.subarray(start);
  const aligned = new Uint8Array(bytes.length);
  aligned.set(bytes);
  const data = new Ctor(aligned.buffer, 0, bytes.length / Ctor.BYTES_PER_ELEMENT);
  return { type, shape, data };
}

function write(path, type, shape, data) {
  if (type === 'string') {
    // '<U' of the longest string's length in code points (at least 1, as NumPy)
    const cps = Array.from(data, (s) => Array.from(s));
    const width = Math.max(1, ...cps.map((c) => c.length));
    const body = Buffer.alloc(cps.length * width * 4);
    cps.forEach((c, i) => c.forEach((ch, k) => body.writeUInt32LE(ch.codePointAt(0), (i * width + k) * 4)));
    return writeRaw(path, `<U${width}`, shape, body);
  }
  const descr = Object.keys(DESCR).find((k) => DESCR[k][0] === type);
  if (!descr) throw new Error(`cannot write ${type} to .npy`);
  return writeRaw(path, descr, shape, Buffer.from(data.buffer, data.byteOffset, data.byteLength));
}

function writeRaw(path, descr, shape, body) {
  let header = `{'descr': '${descr}', 'fortran_order': False, 'shape': (${shape.join(', ')}${shape.length === 1 ? ',' : ''}), }`;
  const total = 10 + header.length + 1;
  header += ' '.repeat((64 - (total % 64)) % 64) + '\n';
  const pre = Buffer.alloc(10);
  pre.write('\x93NUMPY', 0, 'latin1');
  pre[6] = 1;
  pre[7] = 0;
  pre.writeUInt16LE(header.length, 8);
  const tmp = `${path}.tmp${process.pid}`;
  fs.writeFileSync(tmp, Buffer.concat([pre, Buffer.from(header, 'latin1'), body]));
  fs.renameSync(tmp, path);
}

module.exports = { read, write };
