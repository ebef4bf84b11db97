// ONNX Runtime figures for any ONNX model with one float32 input, for
// bench/onnx.sh: a generic variant of bench/ort_seed.js.
//
// Runs MODEL on the float32 C-order array in INPUT.npy (bound to the
// model's first input, or to NAME), with every graph optimisation on, and
// prints one JSON object per intra-op thread count (1 and 2): infer_us is
// the best, over 5 rounds of CALLS runs, of the mean time per inference,
// after a warm-up of a tenth of CALLS.
//
// Setup (npm registry), from the repository root:
//   npm install --prefix bench/ort --ignore-scripts onnxruntime-node@1.30.0
// Usage: NODE_PATH=bench/ort/node_modules node bench/ort_onnx.js MODEL.onnx INPUT.npy [CALLS] [NAME]
'use strict';

const fs = require('fs');
const ort = require('onnxruntime-node');

// readNpyF32 reads a version 1.0 .npy file of little-endian float32 in C
// order, the only kind bench/onnx.sh writes.
function readNpyF32(path) {
  const buf = fs.readFileSync(path);
  if (buf.length < 10 || buf.toString('latin1', 0, 6) !== '\x93NUMPY' || buf[6] !== 1) {
    throw new Error(`${path}: not a version 1.0 .npy file`);
  }
  const hlen = buf.readUInt16LE(8);
  const header = buf.toString('latin1', 10, 10 + hlen);
  if (!header.includes("'descr': '<f4'") || !header.includes("'fortran_order': False")) {
    throw new Error(`${path}: want float32 in C order, header ${header.trim()}`);
  }
  const m = header.match(/'shape': \(([\d, ]*)\)/);
  if (!m) {
    throw new Error(`${path}: no shape in header ${header.trim()}`);
  }
  const shape = m[1].split(',').map((s) => s.trim()).filter((s) => s !== '').map(Number);
  const n = shape.reduce((a, b) => a * b, 1);
  const start = 10 + hlen;
  if (buf.length !== start + 4 * n) {
    throw new Error(`${path}: shape [${shape}] needs ${4 * n} data bytes, the file holds ${buf.length - start}`);
  }
  const data = new Float32Array(n);
  for (let i = 0; i < n; i++) {
    data[i] = buf.readFloatLE(start + 4 * i);
  }
  return { shape, data };
}

async function main() {
  const [model, input, callsArg, name] = process.argv.slice(2);
  if (!model || !input) {
    throw new Error('usage: node ort_onnx.js MODEL.onnx INPUT.npy [CALLS] [NAME]');
  }
  const calls = callsArg === undefined ? 200 : Number(callsArg);
  if (!Number.isInteger(calls) || calls < 1) {
    throw new Error(`CALLS must be a positive integer, got ${callsArg}`);
  }
  const { shape, data } = readNpyF32(input);
  const x = new ort.Tensor('float32', data, shape);
  for (const threads of [1, 2]) {
    const session = await ort.InferenceSession.create(model, {
      intraOpNumThreads: threads, interOpNumThreads: 1, graphOptimizationLevel: 'all',
    });
    const feeds = { [name || session.inputNames[0]]: x };
    for (let i = 0; i < Math.max(calls / 10, 2); i++) await session.run(feeds);
    let best = Infinity;
    for (let round = 0; round < 5; round++) {
      const start = process.hrtime.bigint();
      for (let i = 0; i < calls; i++) await session.run(feeds);
      best = Math.min(best, Number(process.hrtime.bigint() - start) / calls / 1000);
    }
    console.log(JSON.stringify({
      onnxruntime: ort.env.versions.common, threads, batch: shape[0], calls, infer_us: +best.toFixed(1),
    }));
  }
}

main().catch((err) => {
  console.error(`ort_onnx.js: ${err.message}`);
  process.exit(1);
});
