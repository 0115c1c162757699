// npy.js — reading and writing NumPy .npy files (little-endian, C order)
// for the ONNX Runtime peer scripts.
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
  const [type, Ctor] = DESCR[descr] || [];
  if (!type) throw new Error(`${path}: unsupported dtype ${descr}`);
  const start = hstart + hlen;
  const bytes = buf.subarray(start);
  const aligned = new Uint8Array(bytes.length);
  aligned.set(bytes);
  const data = new Ctor(aligned.buffer, 0, bytes.length / Ctor.BYTES_PER_ELEMENT);
  return { type, shape, data };
}

function write(path, type, shape, data) {
  const descr = Object.keys(DESCR).find((k) => DESCR[k][0] === type);
  if (!descr) throw new Error(`cannot write ${type} to .npy`);
  let header = `{'descr': '${descr}', 'fortran_order': False, 'shape': (${shape.join(', ')}${shape.length === 1 ? ',' : ''}), }`;
  const total = 10 + header.length + 1;
  header += ' '.repeat((64 - (total % 64)) % 64) + '\n';
  const pre = Buffer.alloc(10);
  pre.write('\x93NUMPY', 0, 'latin1');
  pre[6] = 1;
  pre[7] = 0;
  pre.writeUInt16LE(header.length, 8);
  const body = Buffer.from(data.buffer, data.byteOffset, data.byteLength);
  const tmp = `${path}.tmp${process.pid}`;
  fs.writeFileSync(tmp, Buffer.concat([pre, Buffer.from(header, 'latin1'), body]));
  fs.renameSync(tmp, path);
}

module.exports = { read, write };
