// The peer server of bench/serve.sh: ONNX Runtime (onnxruntime-node) behind
// the same Open Inference Protocol v2 JSON endpoint that spore serve
// speaks, so that one load generator can drive both the same way.
//
// Each MODEL gets one InferenceSession (every graph optimisation on,
// THREADS intra-op threads, one inter-op thread). A request is decoded with
// JSON.parse, its tensors copied into Float32Arrays and checked against the
// model's inputs, the session run, and the outputs written back as JSON.
// onnxruntime-node runs a session on the event loop's thread, so requests
// are served one at a time with no batching: that is what this peer is, and
// what a Node service built on it does.
//
// Endpoints: GET /v2/health/live, GET /v2/health/ready, GET /v2/models/{m}
// (metadata), POST /v2/models/{m}[/versions/{v}]/infer. Errors come back as
// {"error": "..."} with 400 (bad request), 404 (unknown model or path), 413
// (body over --max-body bytes) or 500 (a failed run).
//
// Setup (npm registry), from the repository root:
//   npm install --prefix bench/ort --ignore-scripts onnxruntime-node@1.30.0
// Usage:
//   NODE_PATH=bench/ort/node_modules node bench/ort_server.js \
//     [--port 8100] [--host 127.0.0.1] [--threads 1] [--max-body BYTES] NAME=MODEL.onnx...
// It prints "ready HOST:PORT" on stdout once every model is loaded, and
// stops on SIGTERM or SIGINT.
'use strict';

const http = require('http');
const ort = require('onnxruntime-node');

function parseArgs(argv) {
  const opts = { port: 8100, host: '127.0.0.1', threads: 1, maxBody: 64 << 20, models: [] };
  for (let i = 0; i < argv.length; i++) {
    const a = argv[i];
    const value = () => {
      if (i + 1 >= argv.length) throw new Error(`${a} needs a value`);
      return argv[++i];
    };
    const int = (name, s) => {
      const n = Number(s);
      if (!Number.isInteger(n) || n < 0) throw new Error(`${name} must be a non-negative integer, got ${s}`);
      return n;
    };
    if (a === '--port') opts.port = int(a, value());
    else if (a === '--host') opts.host = value();
    else if (a === '--threads') opts.threads = int(a, value());
    else if (a === '--max-body') opts.maxBody = int(a, value());
    else if (a.includes('=') && !a.startsWith('-')) {
      const eq = a.indexOf('=');
      const name = a.slice(0, eq);
      if (!/^[A-Za-z0-9_.-]+$/.test(name)) throw new Error(`model name ${JSON.stringify(name)}: want letters, digits, _ . -`);
      opts.models.push({ name, path: a.slice(eq + 1) });
    } else throw new Error(`unknown argument ${a}`);
  }
  if (opts.models.length === 0) throw new Error('want at least one NAME=MODEL.onnx');
  if (opts.threads < 1) throw new Error('--threads must be at least 1');
  return opts;
}

// HTTPError is an error a client sees: a status and a message.
class HTTPError extends Error {
  constructor(status, message) {
    super(message);
    this.status = status;
  }
}

// load creates a model's session and records what its inputs must look
// like: float32 with the model's static dimensions (a symbolic one, such as
// the batch axis, takes any size).
async function load(m, threads) {
  const session = await ort.InferenceSession.create(m.path, {
    intraOpNumThreads: threads, interOpNumThreads: 1, graphOptimizationLevel: 'all',
  });
  const inputs = new Map();
  session.inputNames.forEach((name, i) => {
    const md = session.inputMetadata[i];
    if (md.type !== 'float32') throw new Error(`${m.path}: input ${name} is ${md.type}; this server takes float32 models only`);
    inputs.set(name, md.shape.map((d) => (typeof d === 'number' ? d : -1)));
  });
  const outputs = session.outputNames.map((name, i) => ({
    name, datatype: 'FP32',
    shape: session.outputMetadata[i].shape.map((d) => (typeof d === 'number' ? d : -1)),
  }));
  return { name: m.name, session, inputs, outputs };
}

// flatten returns the numbers of a flat or nested JSON array.
function flatten(data, what) {
  if (!Array.isArray(data)) throw new HTTPError(400, `${what}: data must be an array`);
  return data.length > 0 && Array.isArray(data[0]) ? data.flat(Infinity) : data;
}

// decode turns a parsed request into the session's feeds, checking each
// input against the model before anything is copied.
function decode(model, req) {
  if (req === null || typeof req !== 'object' || !Array.isArray(req.inputs)) {
    throw new HTTPError(400, 'request: want an object with an "inputs" array');
  }
  const feeds = {};
  for (const [k, inp] of req.inputs.entries()) {
    const what = `input ${k}${inp && typeof inp.name === 'string' ? ` (${inp.name})` : ''}`;
    if (inp === null || typeof inp !== 'object') throw new HTTPError(400, `${what}: want an object`);
    const want = model.inputs.get(inp.name);
    if (!want) throw new HTTPError(400, `${what}: model ${model.name} has no input ${JSON.stringify(inp.name)} (it has ${[...model.inputs.keys()].join(', ')})`);
    if (feeds[inp.name]) throw new HTTPError(400, `${what}: given twice`);
    if (inp.datatype !== 'FP32') throw new HTTPError(400, `${what}: datatype ${JSON.stringify(inp.datatype)}, model wants FP32`);
    const shape = inp.shape;
    if (!Array.isArray(shape) || !shape.every((d) => Number.isInteger(d) && d >= 0)) {
      throw new HTTPError(400, `${what}: shape must be an array of non-negative integers`);
    }
    if (shape.length !== want.length || shape.some((d, i) => want[i] >= 0 && d !== want[i])) {
      throw new HTTPError(400, `${what}: shape [${shape}] does not fit the model's [${want}]`);
    }
    const n = shape.reduce((a, b) => a * b, 1);
    const data = flatten(inp.data, what);
    if (data.length !== n) throw new HTTPError(400, `${what}: shape [${shape}] needs ${n} elements, data has ${data.length}`);
    const x = new Float32Array(n);
    for (let i = 0; i < n; i++) {
      const v = data[i];
      if (typeof v !== 'number') throw new HTTPError(400, `${what}: element ${i} is not a number`);
      x[i] = v;
    }
    feeds[inp.name] = new ort.Tensor('float32', x, shape);
  }
  for (const name of model.inputs.keys()) {
    if (!feeds[name]) throw new HTTPError(400, `request: model ${model.name} needs input ${name}`);
  }
  return feeds;
}

function send(res, status, body) {
  const s = JSON.stringify(body);
  res.writeHead(status, { 'Content-Type': 'application/json', 'Content-Length': Buffer.byteLength(s) });
  res.end(s);
}

async function main() {
  const opts = parseArgs(process.argv.slice(2));
  const models = new Map();
  for (const m of opts.models) models.set(m.name, await load(m, opts.threads));

  const infer = async (model, body) => {
    let req;
    try {
      req = JSON.parse(body);
    } catch (err) {
      throw new HTTPError(400, `request body is not valid JSON: ${err.message}`);
    }
    const results = await model.session.run(decode(model, req));
    const outputs = model.session.outputNames.map((name) => {
      const t = results[name];
      return { name, datatype: 'FP32', shape: t.dims, data: Array.from(t.data) };
    });
    const out = { model_name: model.name, outputs };
    if (typeof req.id === 'string') out.id = req.id;
    return out;
  };

  const server = http.createServer((req, res) => {
    const url = req.url.split('?')[0];
    const fail = (err) => {
      const status = err instanceof HTTPError ? err.status : 500;
      if (!res.headersSent) send(res, status, { error: err.message });
      else res.destroy();
    };
    if (req.method === 'GET') {
      if (url === '/v2/health/live' || url === '/v2/health/ready') return send(res, 200, { live: true, ready: true });
      const m = url.match(/^\/v2\/models\/([^/]+)$/);
      if (m && models.has(m[1])) {
        const model = models.get(m[1]);
        return send(res, 200, {
          name: model.name, platform: 'onnxruntime_onnx',
          inputs: [...model.inputs].map(([name, shape]) => ({ name, datatype: 'FP32', shape })),
          outputs: model.outputs,
        });
      }
      return fail(new HTTPError(404, m ? `unknown model ${m[1]}` : `no endpoint GET ${url}`));
    }
    const m = req.method === 'POST' && url.match(/^\/v2\/models\/([^/]+)(?:\/versions\/[^/]+)?\/infer$/);
    if (!m) {
      req.resume();
      return fail(new HTTPError(404, `no endpoint ${req.method} ${url}`));
    }
    const model = models.get(m[1]);
    if (!model) {
      req.resume();
      return fail(new HTTPError(404, `unknown model ${m[1]}`));
    }
    const chunks = [];
    let size = 0;
    let over = false;
    req.on('data', (c) => {
      size += c.length;
      if (size > opts.maxBody) over = true;
      else chunks.push(c);
    });
    req.on('end', () => {
      if (over) return fail(new HTTPError(413, `request body is over ${opts.maxBody} bytes`));
      infer(model, Buffer.concat(chunks, size).toString('utf8')).then((out) => send(res, 200, out), fail);
    });
    req.on('error', () => res.destroy());
  });
  server.keepAliveTimeout = 60000;
  server.listen(opts.port, opts.host, () => {
    console.log(`ready ${opts.host}:${server.address().port}`);
  });
  const stop = () => server.close(() => process.exit(0));
  process.on('SIGTERM', stop);
  process.on('SIGINT', stop);
}

main().catch((err) => {
  console.error(`ort_server.js: ${err.message}`);
  process.exit(1);
});
