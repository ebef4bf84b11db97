// Runs ONNX backend test cases in ONNX Runtime for TestConformanceORT
// (onnx/conformance_ort_test.go): the referee that tells which cases a
// mature runtime passes, so that the ones it fails can be left.
//
// Usage:
//   NODE_PATH=DIR/node_modules node ort_conformance.js JOBS.json FIRST
//
// JOBS.json is a list of cases, [{"model": M, "sets": [{"outdir": D,
// "inputs": [INPUT, ...]}, ...]}, ...]; an INPUT is {"name", "type",
// "dims", "file"} where file holds the elements as little-endian bytes, or
// {"name", "type": "string", "dims", "strings": [...]}. Types are
// onnxruntime's names (float32, int64, bool, float16, ...).
//
// The cases from index FIRST on are run in order, each with the default
// CPU provider, default graph optimisations and one thread. For each one
// a JSON line is printed as soon as it is done: {"index": I, "sets":
// [{"outputs": [OUTPUT, ...]}, ...]} where an OUTPUT is shaped as an
// INPUT (its file written under the set's outdir), or {"index": I,
// "error": message} when ONNX Runtime refuses the model or a run. Lines
// printed case by case let the caller go on after a case that kills the
// process.
'use strict';

const fs = require('fs');
const path = require('path');
const ort = require('onnxruntime-node');

// Typed arrays of the element types onnxruntime-node takes.
const arrays = {
  float32: Float32Array,
  float64: Float64Array,
  float16: Uint16Array,
  int8: Int8Array,
  uint8: Uint8Array,
  int16: Int16Array,
  uint16: Uint16Array,
  int32: Int32Array,
  uint32: Uint32Array,
  int64: BigInt64Array,
  uint64: BigUint64Array,
  bool: Uint8Array,
};

function readInput(inp) {
  if (inp.type === 'string') {
    return new ort.Tensor('string', inp.strings, inp.dims);
  }
  const Arr = arrays[inp.type];
  if (!Arr) throw new Error(`input ${inp.name}: onnxruntime-node has no tensors of type ${inp.type}`);
  const bytes = fs.readFileSync(inp.file);
  const copy = new Uint8Array(bytes.length); // aligned for the typed array
  copy.set(bytes);
  return new ort.Tensor(inp.type, new Arr(copy.buffer, 0, bytes.length / Arr.BYTES_PER_ELEMENT), inp.dims);
}

function writeOutput(outdir, i, name, t) {
  const dims = t.dims.map(Number);
  if (t.type === 'string') {
    return { name, type: 'string', dims, strings: Array.from(t.data) };
  }
  const d = t.data;
  if (!d || !d.buffer) throw new Error(`output ${name}: type ${t.type} has no typed data`);
  const file = path.join(outdir, `out${i}.bin`);
  fs.writeFileSync(file, Buffer.from(d.buffer, d.byteOffset, d.byteLength));
  return { name, type: t.type, dims, file };
}

async function runCase(job) {
  const session = await ort.InferenceSession.create(job.model, {
    intraOpNumThreads: 1,
    interOpNumThreads: 1,
    logSeverityLevel: 3,
  });
  try {
    const sets = [];
    for (const set of job.sets) {
      const feeds = {};
      for (const inp of set.inputs) feeds[inp.name] = readInput(inp);
      const results = await session.run(feeds);
      fs.mkdirSync(set.outdir, { recursive: true });
      const outputs = session.outputNames.map((name, i) => writeOutput(set.outdir, i, name, results[name]));
      sets.push({ outputs });
    }
    return { sets };
  } finally {
    await session.release();
  }
}

async function main() {
  const [jobsFile, first] = process.argv.slice(2);
  if (!jobsFile) throw new Error('usage: node ort_conformance.js JOBS.json FIRST');
  const jobs = JSON.parse(fs.readFileSync(jobsFile, 'utf8'));
  for (let i = Number(first || 0); i < jobs.length; i++) {
    let res;
    try {
      res = await runCase(jobs[i]);
    } catch (e) {
      res = { error: String(e && e.message ? e.message : e) };
    }
    res.index = i;
    process.stdout.write(`${JSON.stringify(res)}\n`);
  }
}

main().catch((e) => {
  console.error(`ort_conformance: ${e.message}`);
  process.exit(1);
});
