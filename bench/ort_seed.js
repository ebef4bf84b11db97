// ONNX Runtime figures for spore's benchmark networks, for bench/compare.sh.
//
// Runs an ONNX model that bench/torch_seed.py or bench/torch_lenet.py
// --onnx writes (the seed network or LeNet-5; input "x", float32
// [batch, 1, 28, 28], all ones) with every graph optimisation on, and
// prints one JSON object per intra-op thread count (1 and 2): infer_us is
// the best, over 5 rounds, of the mean time per inference. BATCH must be
// the batch the model was exported with.
//
// Setup (npm registry), from the repository root:
//   npm install --prefix bench/ort --ignore-scripts onnxruntime-node@1.30.0
//   (--ignore-scripts: the package ships its CPU binaries; its install script
//    only fetches optional GPU parts)
// Usage: NODE_PATH=bench/ort/node_modules node bench/ort_seed.js MODEL.onnx [BATCH]
'use strict';

const ort = require('onnxruntime-node');

async function main() {
  const [model, batchArg] = process.argv.slice(2);
  if (!model) {
    throw new Error('usage: node ort_seed.js MODEL.onnx [BATCH]');
  }
  const batch = batchArg === undefined ? 64 : Number(batchArg);
  if (!Number.isInteger(batch) || batch < 1) {
    throw new Error(`batch must be a positive integer, got ${batchArg}`);
  }
  const x = new ort.Tensor('float32', new Float32Array(batch * 784).fill(1), [batch, 1, 28, 28]);
  for (const threads of [1, 2]) {
    const session = await ort.InferenceSession.create(model, {
      intraOpNumThreads: threads, interOpNumThreads: 1, graphOptimizationLevel: 'all',
    });
    const feeds = { [session.inputNames[0]]: x };
    // About as many samples per round at every batch size, within bounds.
    const calls = Math.max(10, Math.min(300, Math.floor(19200 / batch)));
    for (let i = 0; i < calls; i++) await session.run(feeds);
    let best = Infinity;
    for (let round = 0; round < 5; round++) {
      const start = process.hrtime.bigint();
      for (let i = 0; i < calls; i++) await session.run(feeds);
      best = Math.min(best, Number(process.hrtime.bigint() - start) / calls / 1000);
    }
    console.log(JSON.stringify({ onnxruntime: ort.env.versions.common, threads, batch, infer_us: +best.toFixed(1) }));
  }
}

main().catch((err) => {
  console.error(`ort_seed.js: ${err.message}`);
  process.exit(1);
});
