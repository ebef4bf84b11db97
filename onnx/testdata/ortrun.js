// Runs an ONNX model in ONNX Runtime on inputs read from .npy files and
// writes each output as a .npy file: the referee that package onnx's tests
// compare spore against.
//
// Usage:
//   NODE_PATH=DIR/node_modules node ortrun.js MODEL.onnx OUTDIR [NAME=FILE.npy ...]
//   NODE_PATH=DIR/node_modules node ortrun.js --batch JOBS.json
//
// Each NAME=FILE.npy binds a model input; the outputs are written to
// OUTDIR/<output name>.npy (characters outside [A-Za-z0-9_.-] in the name
// become '_'). On success it prints one JSON line: {"outputs":[names...]}.
//
// With --batch, JOBS.json lists many runs, [{"model": M, "outdir": D,
// "inputs": {NAME: FILE.npy, ...}}, ...], done in one process (starting
// node and loading ONNX Runtime once, not once per model). It prints one
// JSON line, {"results": [...]}, with per job {"outputs": [names...]} or
// {"error": message}: one model failing does not stop the others.
// ONNX Runtime runs with its default graph optimisations and one thread, so
// that results are reproducible.
'use strict';

const fs = require('fs');
const path = require('path');
const ort = require('onnxruntime-node');

// npy dtype descr <-> ONNX Runtime tensor type and typed array.
const types = {
  '<f4': ['float32', Float32Array],
  '<f8': ['float64', Float64Array],
  '<i8': ['int64', BigInt64Array],
  '<i4': ['int32', Int32Array],
  '|b1': ['bool', Uint8Array],
  '|u1': ['uint8', Uint8Array],
  '|i1': ['int8', Int8Array],
};

function readNpy(file) {
  const buf = fs.readFileSync(file);
  if (buf.toString('latin1', 0, 6) !== '\x93NUMPY') {
    throw new Error(`${file}: not a .npy file`);
  }
  const major = buf[6];
  const hlen = major === 1 ? buf.readUInt16LE(8) : buf.readUInt32LE(8);
  const hstart = major === 1 ? 10 : 12;
  const header = buf.toString('latin1', hstart, hstart + hlen);
  const descr = /'descr':\s*'([^']+)'/.exec(header)[1];
  if (/'fortran_order':\s*True/.test(header)) {
    throw new Error(`${file}: Fortran order is not supported`);
  }
  const shape = /'shape':\s*\(([^)]*)\)/.exec(header)[1]
    .split(',').map((s) => s.trim()).filter((s) => s !== '').map(Number);
  const t = types[descr];
  if (!t) throw new Error(`${file}: dtype ${descr} not supported`);
  const [ortType, Arr] = t;
  const start = hstart + hlen;
  const bytes = buf.subarray(start);
  const copy = new Uint8Array(bytes.length);
  copy.set(bytes);
  let data = new Arr(copy.buffer, 0, bytes.length / Arr.BYTES_PER_ELEMENT);
  if (ortType === 'bool') data = Uint8Array.from(data, (v) => (v ? 1 : 0));
  return new ort.Tensor(ortType, data, shape);
}

function writeNpy(file, tensor) {
  const entry = Object.entries(types).find(([, [name]]) => name === tensor.type);
  if (!entry) throw new Error(`output type ${tensor.type} has no .npy writer`);
  const [descr, [, Arr]] = entry;
  const dims = tensor.dims.map(Number);
  const shape = dims.length === 1 ? `(${dims[0]},)` : `(${dims.join(', ')})`;
  let header = `{'descr': '${descr}', 'fortran_order': False, 'shape': ${shape}, }`;
  const total = 10 + header.length + 1;
  header += ' '.repeat((64 - (total % 64)) % 64) + '\n';
  const pre = Buffer.alloc(10);
  pre.write('\x93NUMPY', 0, 'latin1');
  pre[6] = 1;
  pre[7] = 0;
  pre.writeUInt16LE(header.length, 8);
  let data = tensor.data;
  if (tensor.type === 'bool') data = Uint8Array.from(data, (v) => (v ? 1 : 0));
  const body = Buffer.from(data.buffer, data.byteOffset, data.length * Arr.BYTES_PER_ELEMENT);
  const tmp = `${file}.tmp`;
  fs.writeFileSync(tmp, Buffer.concat([pre, Buffer.from(header, 'latin1'), body]));
  fs.renameSync(tmp, file);
}

// run runs one model on the inputs (name -> .npy file) and writes its
// outputs to outdir; it returns the output names.
async function run(model, outdir, inputs) {
  const feeds = {};
  for (const [name, file] of Object.entries(inputs)) {
    feeds[name] = readNpy(file);
  }
  const session = await ort.InferenceSession.create(model, {
    intraOpNumThreads: 1, interOpNumThreads: 1,
  });
  const results = await session.run(feeds);
  fs.mkdirSync(outdir, { recursive: true });
  const names = [];
  for (const name of session.outputNames) {
    writeNpy(path.join(outdir, `${name.replace(/[^A-Za-z0-9_.-]/g, '_')}.npy`), results[name]);
    names.push(name);
  }
  return names;
}

async function main() {
  const args = process.argv.slice(2);
  if (args[0] === '--batch') {
    if (!args[1]) throw new Error('usage: node ortrun.js --batch JOBS.json');
    const jobs = JSON.parse(fs.readFileSync(args[1], 'utf8'));
    const results = [];
    for (const job of jobs) {
      try {
        results.push({ outputs: await run(job.model, job.outdir, job.inputs || {}) });
      } catch (e) {
        results.push({ error: String(e && e.message ? e.message : e) });
      }
    }
    console.log(JSON.stringify({ results }));
    return;
  }
  const [model, outdir, ...binds] = args;
  if (!model || !outdir) {
    throw new Error('usage: node ortrun.js MODEL.onnx OUTDIR [NAME=FILE.npy ...]');
  }
  const inputs = {};
  for (const b of binds) {
    const i = b.indexOf('=');
    if (i <= 0) throw new Error(`input binding ${b}: want NAME=FILE.npy`);
    inputs[b.slice(0, i)] = b.slice(i + 1);
  }
  console.log(JSON.stringify({ outputs: await run(model, outdir, inputs) }));
}

main().catch((e) => {
  console.error(`ortrun: ${e.message}`);
  process.exit(1);
});
