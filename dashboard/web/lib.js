// Pure functions of the dashboard page, kept apart from the page so that
// tests can run them on their own: smoothing, axis ticks and ranges,
// histogram rebinning, the graph's DOT text and the IR line diff.

// smooth is TensorBoard's debiased exponential moving average: the
// first points are not pulled towards zero, and non-finite values pass
// through without poisoning the average.
export function smooth(values, weight) {
  let last = 0;
  let n = 0;
  return values.map((v) => {
    if (v == null || !Number.isFinite(v)) return v;
    last = last * weight + (1 - weight) * v;
    n++;
    const debias = weight === 1 ? 1 : 1 - Math.pow(weight, n);
    return last / debias;
  });
}

// niceTicks returns about count round numbers spanning [lo, hi].
export function niceTicks(lo, hi, count = 5) {
  if (!(hi > lo)) return [lo];
  const raw = (hi - lo) / count;
  const mag = Math.pow(10, Math.floor(Math.log10(raw)));
  const step = [1, 2, 5, 10].map((m) => m * mag).find((s) => s >= raw);
  const ticks = [];
  for (let t = Math.ceil(lo / step) * step; t <= hi + step * 1e-9; t += step) ticks.push(Number(t.toPrecision(12)));
  return ticks;
}

// isAccuracy says whether a scalar tag names an accuracy: "accuracy" or
// "acc" as a word of it ("eval/accuracy", "train/acc", "val_acc",
// "top1-accuracy"), but not "accumulated".
export function isAccuracy(tag) {
  return /(^|[^a-z])acc(uracy)?([^a-z]|$)/i.test(tag);
}

// yRange is the y axis of a scalar chart of tag over values (the finite
// ones): their range, widened when flat, padded by 5% each side. An
// accuracy's axis stops at 0 and at 100% (1, or 100 for one in percent),
// which the padding would cross: no accuracy lies beyond. A tag is
// needed as well as values in [0, 1]: a loss can lie there too, and
// cutting its axis at 1 would hide nothing but look like a bound.
export function yRange(tag, values) {
  let min = Infinity, max = -Infinity;
  for (const v of values) { min = Math.min(min, v); max = Math.max(max, v); }
  let lo = min, hi = max;
  if (hi === lo) { const d = Math.abs(lo) * 0.1 || 1; lo -= d; hi += d; }
  const pad = (hi - lo) * 0.05;
  lo -= pad; hi += pad;
  if (isAccuracy(tag) && min >= 0) {
    const top = max <= 1 ? 1 : max <= 100 ? 100 : Infinity;
    hi = Math.min(hi, top);
    lo = Math.max(lo, 0);
  }
  return [lo, hi];
}

// rebin spreads a histogram's buckets over uniform bins of [lo, hi],
// each bucket's count shared by overlap, as TensorBoard does: writers'
// bucket edges differ, and narrow buckets would otherwise spike.
export function rebin(h, lo, hi, bins) {
  const out = new Array(bins).fill(0);
  const width = (hi - lo) / bins;
  let left = h.min;
  h.bucket.forEach((count, i) => {
    const right = Math.min(h.bucketLimit[i], h.max);
    const l = Math.max(left, h.min);
    left = h.bucketLimit[i];
    if (count === 0) return;
    if (!(right > l)) { // a point mass
      const b = Math.min(bins - 1, Math.max(0, Math.floor((l - lo) / width)));
      out[b] += count;
      return;
    }
    for (let b = Math.max(0, Math.floor((l - lo) / width)); b < bins; b++) {
      const bl = lo + b * width, br = bl + width;
      if (bl >= right) break;
      const overlap = Math.min(br, right) - Math.max(bl, l);
      if (overlap > 0) out[b] += (count * overlap) / (right - l);
    }
  });
  return out;
}

const KIND_STYLE = {
  input: { fill: "#cfe8ff" }, param: { fill: "#fff2cc" }, const: { fill: "#eeeeee" },
  op: { fill: "#ffffff" }, fused: { fill: "#ffd8b0" }, output: { fill: "#d4f4d4" },
};

function dotString(s) {
  return `"${String(s).replace(/\\/g, "\\\\").replace(/"/g, '\\"').replace(/\n/g, "\\n")}"`;
}

function shapeText(n) {
  const dims = Array.isArray(n.shape) ? n.shape.join(",") : "";
  return `${n.dtype || ""}[${dims}]`;
}

function nodeTitle(n) {
  const name = n.attrs && (n.attrs.name || n.attrs.param);
  return name ? `${n.op} ${name}` : n.op;
}

// toDot writes one pass's graph in Graphviz's language: a node per IR
// value (its id as the SVG element id), an edge per operand.
export function toDot(name, graph) {
  const ids = new Set(graph.nodes.map((n) => n.id));
  const outs = new Set(graph.outputs || []);
  const lines = [
    `digraph ${dotString(name)} {`,
    `  rankdir=TB; nodesep=0.25; ranksep=0.35; bgcolor="transparent";`,
    `  node [shape=box, style="rounded,filled", fontname="Helvetica", fontsize=10, color="#8a93a6", margin="0.08,0.04", height=0.3];`,
    `  edge [color="#8a93a6", arrowsize=0.6];`,
  ];
  for (const n of graph.nodes) {
    const st = KIND_STYLE[n.kind] || KIND_STYLE.op;
    const extra = outs.has(n.id) ? ", peripheries=2" : "";
    lines.push(`  n${n.id} [id="node-${n.id}", label=${dotString(`${nodeTitle(n)}\n${shapeText(n)}`)}, fillcolor="${st.fill}"${extra}];`);
  }
  for (const n of graph.nodes) {
    for (const i of n.inputs || []) if (ids.has(i)) lines.push(`  n${i} -> n${n.id};`);
  }
  // Parameter updates run when the graph does: a dashed edge from the
  // new value to its parameter, left out of the ranking (it closes a loop).
  for (const a of graph.assigns || []) {
    if (ids.has(a.param) && ids.has(a.value)) lines.push(`  n${a.value} -> n${a.param} [style=dashed, color="#e8710a", constraint=false];`);
  }
  lines.push("}");
  return lines.join("\n");
}

// diffLines is a longest-common-subsequence line diff of a and b: a list
// of ["=", i, j], ["-", i, null] and ["+", null, j] steps (indices into a
// and b). key maps a line to what is compared.
export function diffLines(a, b, key = (s) => s) {
  const ka = a.map(key), kb = b.map(key);
  let pre = 0;
  while (pre < ka.length && pre < kb.length && ka[pre] === kb[pre]) pre++;
  let suf = 0;
  while (suf < ka.length - pre && suf < kb.length - pre && ka[ka.length - 1 - suf] === kb[kb.length - 1 - suf]) suf++;
  const n = ka.length - pre - suf, m = kb.length - pre - suf;
  const ops = [];
  for (let i = 0; i < pre; i++) ops.push(["=", i, i]);
  if (n * m > 4e7) { // too large for the table: show the middle as replaced
    for (let i = 0; i < n; i++) ops.push(["-", pre + i, null]);
    for (let j = 0; j < m; j++) ops.push(["+", null, pre + j]);
  } else {
    // lcs[i*(m+1)+j] is the LCS length of the middles' suffixes from i and j.
    const lcs = new Uint32Array((n + 1) * (m + 1));
    for (let i = n - 1; i >= 0; i--) {
      for (let j = m - 1; j >= 0; j--) {
        lcs[i * (m + 1) + j] = ka[pre + i] === kb[pre + j] ? lcs[(i + 1) * (m + 1) + j + 1] + 1 : Math.max(lcs[(i + 1) * (m + 1) + j], lcs[i * (m + 1) + j + 1]);
      }
    }
    let i = 0, j = 0;
    while (i < n || j < m) {
      if (i < n && j < m && ka[pre + i] === kb[pre + j]) { ops.push(["=", pre + i, pre + j]); i++; j++; }
      else if (j < m && (i === n || lcs[i * (m + 1) + j + 1] >= lcs[(i + 1) * (m + 1) + j])) { ops.push(["+", null, pre + j]); j++; }
      else { ops.push(["-", pre + i, null]); i++; }
    }
  }
  for (let s = 0; s < suf; s++) ops.push(["=", ka.length - suf + s, kb.length - suf + s]);
  return ops;
}

// profileRows turns an /api/profile answer into table rows, most time
// first: each step's op (with what it absorbed), shape, calls, own time
// (steps of control-flow bodies are their own functions'), mean, share
// of the function's step time, and GFLOP/s (FLOPs per nanosecond).
export function profileRows(view) {
  const steps = view.function.steps || [];
  const total = steps.reduce((s, st) => s + st.selfNs, 0);
  return steps.map((st, i) => ({
    node: view.nodes[i],
    op: st.absorbed && st.absorbed.length ? `${st.op}(${st.absorbed.join("+")})` : st.op,
    shape: st.shape,
    calls: st.calls,
    totalNs: st.selfNs,
    meanNs: st.calls ? st.selfNs / st.calls : 0,
    share: total ? st.selfNs / total : 0,
    gflops: st.selfNs > 0 && st.flops > 0 ? (st.flops * st.calls) / st.selfNs : 0,
  })).sort((a, b) => b.totalNs - a.totalNs);
}

// formatNs prints a duration in nanoseconds with three significant
// digits, in µs, ms or s.
export function formatNs(ns) {
  if (ns >= 1e9) return `${(ns / 1e9).toPrecision(3)}s`;
  if (ns >= 1e6) return `${(ns / 1e6).toPrecision(3)}ms`;
  return `${(ns / 1e3).toPrecision(3)}µs`;
}
