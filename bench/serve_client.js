// Helpers of bench/serve.sh that need no package: the request bodies, and
// the first-request measurement.
//
//   node bench/serve_client.js body BATCH
//     prints a v2 infer request for input "x", FP32 [BATCH, 1, 28, 28]
//     (both served models take MNIST-sized images), whose data are N(0, 1)
//     from a fixed seed, written with 6 significant digits.
//
//   node bench/serve_client.js binbody BATCH FILE
//     writes the same request in Triton's binary-data extension to FILE (a
//     JSON header, then the tensor's raw little-endian float32s) and prints
//     the header's length, the request's Inference-Header-Content-Length.
//
//   node bench/serve_client.js first URL BATCH...
//     opens one keep-alive connection (a GET of /v2/health/ready on URL's
//     host) and warms both ends up with 20 one-row requests to URL, so that
//     what is left to measure is the batch size. Then for each BATCH it
//     POSTs a BATCH-row request once (the first at that batch size, if the
//     server has not seen it) and 30 more times, and prints one JSON line:
//     batch, first_us, warm_us (the median of the 30), and the first
//     response's outputs. A response that is not 200, or whose first output
//     has not BATCH rows, is an error.
'use strict';

const http = require('http');

// normals returns n N(0, 1) numbers from a fixed seed (mulberry32 and
// Box-Muller), so that every run and both servers get the same data.
function normals(n, seed) {
  let s = seed >>> 0;
  const uniform = () => {
    s = (s + 0x6d2b79f5) >>> 0;
    let t = s;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return (((t ^ (t >>> 14)) >>> 0) + 1) / 4294967297;
  };
  const out = new Array(n);
  for (let i = 0; i < n; i += 2) {
    const r = Math.sqrt(-2 * Math.log(uniform()));
    const a = 2 * Math.PI * uniform();
    out[i] = Number((r * Math.cos(a)).toPrecision(6));
    if (i + 1 < n) out[i + 1] = Number((r * Math.sin(a)).toPrecision(6));
  }
  return out;
}

function body(batch) {
  return JSON.stringify({
    inputs: [{ name: 'x', shape: [batch, 1, 28, 28], datatype: 'FP32', data: normals(batch * 784, 1) }],
  });
}

function batchArg(s) {
  const b = Number(s);
  if (!Number.isInteger(b) || b < 1) throw new Error(`BATCH must be a positive integer, got ${s}`);
  return b;
}

// request sends one request on agent's connection and resolves to its
// status, body and time in microseconds.
function request(agent, url, method, payload) {
  return new Promise((resolve, reject) => {
    const start = process.hrtime.bigint();
    const req = http.request(url, {
      agent, method, headers: payload ? { 'Content-Type': 'application/json', 'Content-Length': Buffer.byteLength(payload) } : {},
    }, (res) => {
      const chunks = [];
      res.on('data', (c) => chunks.push(c));
      res.on('end', () => resolve({
        status: res.statusCode,
        body: Buffer.concat(chunks).toString('utf8'),
        us: Number(process.hrtime.bigint() - start) / 1000,
      }));
      res.on('error', reject);
    });
    req.on('error', reject);
    req.end(payload);
  });
}

async function first(url, batches, warm) {
  const agent = new http.Agent({ keepAlive: true, maxSockets: 1 });
  const ready = new URL('/v2/health/ready', url);
  const r = await request(agent, ready, 'GET');
  if (r.status !== 200) throw new Error(`${ready}: status ${r.status}: ${r.body}`);
  const check = (res, batch) => {
    if (res.status !== 200) throw new Error(`${url}: status ${res.status}: ${res.body.slice(0, 300)}`);
    const out = JSON.parse(res.body);
    const o = out.outputs && out.outputs[0];
    if (!o || !Array.isArray(o.shape) || o.shape[0] !== batch) {
      throw new Error(`${url}: want an output of ${batch} rows, got ${res.body.slice(0, 300)}`);
    }
    return out.outputs;
  };
  const one = body(1);
  for (let i = 0; i < 20; i++) check(await request(agent, url, 'POST', one), 1);
  const results = [];
  for (const batch of batches) {
    const payload = body(batch);
    const f = await request(agent, url, 'POST', payload);
    const outputs = check(f, batch);
    const times = [];
    for (let i = 0; i < warm; i++) {
      const w = await request(agent, url, 'POST', payload);
      check(w, batch);
      times.push(w.us);
    }
    times.sort((a, b) => a - b);
    results.push({ batch, first_us: Math.round(f.us), warm_us: Math.round(times[times.length >> 1]), outputs });
  }
  agent.destroy();
  return results;
}

// binBody returns a BATCH-row request in the binary-data extension and
// the length of its JSON header.
function binBody(batch) {
  const n = batch * 784;
  const header = Buffer.from(JSON.stringify({
    inputs: [{ name: 'x', shape: [batch, 1, 28, 28], datatype: 'FP32', parameters: { binary_data_size: 4 * n } }],
  }));
  const data = Buffer.alloc(4 * n);
  normals(n, 1).forEach((v, i) => data.writeFloatLE(v, 4 * i));
  return { bytes: Buffer.concat([header, data]), headerLength: header.length };
}

async function main() {
  const [cmd, ...args] = process.argv.slice(2);
  if (cmd === 'body' && args.length === 1) {
    process.stdout.write(body(batchArg(args[0])) + '\n');
  } else if (cmd === 'binbody' && args.length === 2) {
    const { bytes, headerLength } = binBody(batchArg(args[0]));
    require('fs').writeFileSync(args[1], bytes);
    console.log(headerLength);
  } else if (cmd === 'first' && args.length >= 2) {
    for (const r of await first(args[0], args.slice(1).map(batchArg), 30)) console.log(JSON.stringify(r));
  } else {
    throw new Error('usage: node serve_client.js body BATCH | binbody BATCH FILE | first URL BATCH...');
  }
}

main().catch((err) => {
  console.error(`serve_client.js: ${err.message}`);
  process.exit(1);
});
