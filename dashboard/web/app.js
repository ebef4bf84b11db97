// The spore dashboard: scalar curves, histograms, compiled graphs and the
// compiler's pass-by-pass IR of a log dir, read from the server's JSON
// endpoints. Everything it needs is served by the spore binary; nothing
// is fetched from elsewhere, so it works offline.

import { diffLines, formatNs, niceTicks, profileRows, rebin, smooth, toDot, yRange } from "./lib.js";

const POLL_MS = 2000;
const SVGNS = "http://www.w3.org/2000/svg";
const PALETTE = ["#e8710a", "#1a73e8", "#12b5cb", "#e52592", "#9334e6", "#7cb342", "#f9ab00", "#5f6368"];

const state = {
  view: "scalars",
  status: null,        // the last /api/runs answer
  runs: [],            // its runs
  selected: new Set(), // runs drawn in the scalar view
  colors: new Map(),   // run name -> colour
  scalarKey: "",       // what the scalar charts were last drawn from
  histKey: "",
  graphKey: "",
  passKey: "",
  records: new Map(),  // "run\0file" -> compile record
  nodeProfile: new Map(), // node id -> its profile row, for the graph shown
};

const $ = (id) => document.getElementById(id);

// getJSON fetches a JSON endpoint, turning an error answer into an Error
// carrying the server's message.
async function getJSON(url) {
  const resp = await fetch(url, { cache: "no-store" });
  let body;
  try {
    body = await resp.json();
  } catch {
    throw new Error(`${url}: ${resp.status} ${resp.statusText}`);
  }
  if (!resp.ok) throw new Error(body.error || `${url}: ${resp.status}`);
  return body;
}

function el(tag, attrs = {}, ...children) {
  const e = tag.startsWith("svg:") ? document.createElementNS(SVGNS, tag.slice(4)) : document.createElement(tag);
  for (const [k, v] of Object.entries(attrs)) {
    if (k === "text") e.textContent = v;
    else if (k.startsWith("on")) e.addEventListener(k.slice(2), v);
    else e.setAttribute(k, v);
  }
  for (const c of children) if (c != null) e.append(c);
  return e;
}

function q(params) {
  return new URLSearchParams(params).toString();
}

// ---------- polling and the run list ----------

async function poll() {
  try {
    const v = await getJSON("api/runs");
    $("live").textContent = `live · ${new Date().toLocaleTimeString()}`;
    $("live").classList.remove("down");
    applyStatus(v);
    await drawView();
  } catch (err) {
    $("live").textContent = "server unreachable (stopped?)";
    $("live").classList.add("down");
    console.warn("spore dashboard:", err.message);
  }
  setTimeout(poll, POLL_MS);
}

function applyStatus(v) {
  const before = state.status ? state.status.status + state.status.message : "";
  state.status = v;
  $("logdir").textContent = v.logdir;
  const banner = $("banner");
  if (v.status !== "ok") {
    banner.hidden = false;
    banner.className = v.status === "error" ? "error" : "warn";
    banner.textContent = v.message;
    if (before !== v.status + v.message) console.warn(`spore dashboard: ${v.message}`);
  } else {
    banner.hidden = true;
  }
  const names = v.runs.map((r) => r.name);
  const old = state.runs.map((r) => r.name);
  state.runs = v.runs;
  for (const n of names) {
    if (!state.colors.has(n)) state.colors.set(n, PALETTE[state.colors.size % PALETTE.length]);
    if (!old.includes(n)) state.selected.add(n);
  }
  for (const n of [...state.selected]) if (!names.includes(n)) state.selected.delete(n);
  if (names.join("\0") !== old.join("\0")) drawRunList();
  drawWarnings();
  fillSelect($("hist-run"), names);
  const withGraphs = v.runs.filter((r) => r.graphs.length > 0).map((r) => r.name);
  fillSelect($("graph-run"), withGraphs);
  fillSelect($("pass-run"), withGraphs);
}

function drawRunList() {
  const box = $("runs");
  box.replaceChildren();
  if (state.runs.length === 0) {
    box.append(el("p", { class: "muted", text: "no runs yet" }));
    return;
  }
  for (const r of state.runs) {
    const cb = el("input", { type: "checkbox", "data-run": r.name });
    cb.checked = state.selected.has(r.name);
    cb.addEventListener("change", () => {
      if (cb.checked) state.selected.add(r.name);
      else state.selected.delete(r.name);
      state.scalarKey = "";
      drawView();
    });
    box.append(el("label", {}, cb, el("span", { class: "swatch", style: `background:${state.colors.get(r.name)}` }), r.name));
  }
}

function drawWarnings() {
  const all = state.runs.flatMap((r) => r.warnings.map((w) => `${r.name}: ${w}`));
  const box = $("warnings");
  const key = all.join("\n");
  if (box.dataset.key === key) return;
  box.dataset.key = key;
  box.replaceChildren();
  if (all.length === 0) return;
  box.append(el("details", {}, el("summary", { text: `${all.length} warning(s)` }), el("ul", {}, ...all.map((w) => el("li", { text: w })))));
}

// fillSelect sets a select's options to values, keeping the current
// choice when it is still offered.
function fillSelect(sel, values, labels = values) {
  const cur = sel.value;
  const key = values.join("\0");
  if (sel.dataset.key === key) return;
  sel.dataset.key = key;
  sel.replaceChildren(...values.map((v, i) => el("option", { value: v, text: labels[i] })));
  if (values.includes(cur)) sel.value = cur;
}

function drawView() {
  switch (state.view) {
    case "scalars": return drawScalars();
    case "histograms": return drawHistograms();
    case "graphs": return drawGraph();
    case "passes": return drawPasses();
  }
}

// ---------- scalars ----------

function fmt(v) {
  if (v == null) return "–";
  const a = Math.abs(v);
  if (a !== 0 && (a >= 1e5 || a < 1e-3)) return v.toExponential(2);
  return Number(v.toPrecision(4)).toString();
}

async function drawScalars() {
  const tags = [...new Set(state.runs.flatMap((r) => r.scalarTags))].sort(tagOrder);
  const weight = Number($("smoothing").value);
  const raw = $("show-raw").checked;
  const sel = [...state.selected].sort();
  const key = JSON.stringify([tags, weight, raw, sel, state.runs.map((r) => [r.name, r.lastStep])]);
  if (key === state.scalarKey) return;
  const answers = await Promise.all(tags.map((t) => getJSON(`api/scalars?${q({ tag: t })}`).catch((e) => ({ tag: t, error: e.message }))));
  state.scalarKey = key;
  const box = $("charts");
  box.replaceChildren();
  if (tags.length === 0) {
    box.append(el("p", { class: "muted", text: state.runs.length ? "no scalars recorded yet" : "no runs to show" }));
    return;
  }
  for (const a of answers) box.append(scalarChart(a, weight, raw, new Set(sel)));
}

// tagOrder puts the training curves first: loss, then accuracy, then the
// rest alphabetically.
function tagOrder(a, b) {
  const rank = (t) => (t === "loss" ? 0 : t.includes("accuracy") ? 1 : 2);
  return rank(a) - rank(b) || a.localeCompare(b);
}

function scalarChart(answer, weight, showRaw, selected) {
  const card = el("div", { class: "card scalar-card", "data-tag": answer.tag });
  card.append(el("h3", { text: answer.tag }));
  if (answer.error) {
    card.append(el("p", { class: "muted", text: answer.error }));
    return card;
  }
  const series = answer.series.filter((s) => selected.has(s.run));
  const W = 460, H = 260, L = 56, R = 12, T = 10, B = 28;
  const svg = el("svg:svg", { viewBox: `0 0 ${W} ${H}`, role: "img", "aria-label": `${answer.tag} by step` });
  const pts = series.flatMap((s) => s.points);
  const finite = pts.filter((p) => p[2] != null);
  if (finite.length === 0) {
    card.append(el("p", { class: "muted", text: "no points in the selected runs" }));
    return card;
  }
  let x0 = Math.min(...pts.map((p) => p[0])), x1 = Math.max(...pts.map((p) => p[0]));
  if (x1 === x0) { x0 -= 1; x1 += 1; }
  const [y0, y1] = yRange(answer.tag, finite.map((p) => p[2]));
  svg.dataset.ymax = String(y1);
  const sx = (x) => L + ((x - x0) / (x1 - x0)) * (W - L - R);
  const sy = (y) => T + (1 - (y - y0) / (y1 - y0)) * (H - T - B);
  for (const t of niceTicks(y0, y1)) {
    svg.append(el("svg:line", { class: "gridline", x1: L, x2: W - R, y1: sy(t), y2: sy(t) }));
    svg.append(el("svg:text", { x: L - 4, y: sy(t) + 4, "text-anchor": "end", text: fmt(t) }));
  }
  for (const t of niceTicks(x0, x1).filter((t) => Number.isInteger(t))) {
    svg.append(el("svg:text", { x: sx(t), y: H - 8, "text-anchor": "middle", text: String(t) }));
  }
  svg.append(el("svg:line", { class: "axis", x1: L, x2: L, y1: T, y2: H - B }));
  svg.append(el("svg:line", { class: "axis", x1: L, x2: W - R, y1: H - B, y2: H - B }));
  const smoothed = new Map();
  for (const s of series) {
    const color = state.colors.get(s.run) || PALETTE[0];
    const ys = smooth(s.points.map((p) => p[2]), weight);
    smoothed.set(s.run, ys);
    if (showRaw) svg.append(el("svg:path", { class: "raw", stroke: color, d: pathOf(s.points.map((p) => [sx(p[0]), p[2] == null ? null : sy(p[2])])) }));
    svg.append(el("svg:path", {
      class: "curve", stroke: color, "data-run": s.run, "data-points": String(s.points.filter((p) => p[2] != null).length),
      d: pathOf(s.points.map((p, i) => [sx(p[0]), ys[i] == null || !Number.isFinite(ys[i]) ? null : sy(ys[i])])),
    }));
    // A short series (per-epoch accuracy) is marked point by point: a
    // path through one point draws nothing.
    if (s.points.length <= 12) {
      s.points.forEach((p, i) => {
        if (p[2] != null) svg.append(el("svg:circle", { class: "dot", cx: sx(p[0]), cy: sy(ys[i]), r: 3, fill: color }));
      });
    }
  }
  const cursor = el("svg:line", { class: "axis", y1: T, y2: H - B, visibility: "hidden" });
  svg.append(cursor);
  const readout = el("div", { class: "readout" });
  svg.addEventListener("mousemove", (e) => {
    const pt = new DOMPoint(e.clientX, e.clientY).matrixTransform(svg.getScreenCTM().inverse());
    const step = x0 + ((pt.x - L) / (W - L - R)) * (x1 - x0);
    const parts = [];
    for (const s of series) {
      let best = 0;
      s.points.forEach((p, i) => { if (Math.abs(p[0] - step) < Math.abs(s.points[best][0] - step)) best = i; });
      const p = s.points[best];
      if (p) parts.push(`${s.run} step ${p[0]}: ${fmt(p[2])} (smoothed ${fmt(smoothed.get(s.run)[best])})`);
    }
    cursor.setAttribute("x1", pt.x); cursor.setAttribute("x2", pt.x); cursor.setAttribute("visibility", "visible");
    readout.textContent = parts.join(" · ");
  });
  svg.addEventListener("mouseleave", () => { cursor.setAttribute("visibility", "hidden"); readout.textContent = ""; });
  card.append(svg, readout);
  return card;
}

// pathOf is an SVG path through points, with a gap (a new M) where a
// point is missing: one vertex per drawn point.
function pathOf(points) {
  let d = "";
  let pen = false;
  for (const [x, y] of points) {
    if (y == null) { pen = false; continue; }
    d += `${pen ? "L" : "M"}${x.toFixed(2)},${y.toFixed(2)}`;
    pen = true;
  }
  return d;
}

// ---------- histograms ----------

const HIST_BINS = 30;
const HIST_MAX_STEPS = 40;

async function drawHistograms() {
  const runName = $("hist-run").value;
  const run = state.runs.find((r) => r.name === runName);
  const filter = $("hist-filter").value.trim();
  const key = JSON.stringify([runName, filter, run && run.lastStep, run && run.histogramTags]);
  if (key === state.histKey) return;
  const box = $("hists");
  if (!run) {
    state.histKey = key;
    box.replaceChildren(el("p", { class: "muted", text: "no runs to show" }));
    return;
  }
  const tags = run.histogramTags.filter((t) => t.includes(filter));
  const answers = await Promise.all(tags.map((t) => getJSON(`api/histograms?${q({ run: run.name, tag: t })}`).catch((e) => ({ tag: t, error: e.message }))));
  state.histKey = key;
  box.replaceChildren();
  if (tags.length === 0) box.append(el("p", { class: "muted", text: "no histograms recorded in this run" }));
  for (const a of answers) box.append(histogramChart(a));
}

function histogramChart(answer) {
  const card = el("div", { class: "card hist-card", "data-tag": answer.tag });
  card.append(el("h3", { text: answer.tag }));
  if (answer.error) {
    card.append(el("p", { class: "muted", text: answer.error }));
    return card;
  }
  let hs = answer.histograms.filter((h) => h.num > 0 && h.min != null && h.max != null);
  if (hs.length === 0) {
    card.append(el("p", { class: "muted", text: "no values recorded" }));
    return card;
  }
  if (hs.length > HIST_MAX_STEPS) {
    const stride = hs.length / HIST_MAX_STEPS;
    hs = Array.from({ length: HIST_MAX_STEPS }, (_, i) => hs[Math.floor(i * stride)]).concat(hs.length % HIST_MAX_STEPS ? [hs[hs.length - 1]] : []);
  }
  let lo = Math.min(...hs.map((h) => h.min)), hi = Math.max(...hs.map((h) => h.max));
  if (hi === lo) { lo -= 0.5; hi += 0.5; }
  const bins = hs.map((h) => rebin(h, lo, hi, HIST_BINS));
  const peak = Math.max(...bins.flat(), 1e-12);
  const W = 460, H = 260, L = 44, R = 12, T = 10, B = 28;
  const rowH = (H - T - B) / (hs.length + 3);
  const ridgeH = rowH * 4;
  const svg = el("svg:svg", { viewBox: `0 0 ${W} ${H}`, role: "img", "aria-label": `${answer.tag} over steps` });
  const sx = (x) => L + ((x - lo) / (hi - lo)) * (W - L - R);
  const bw = (hi - lo) / HIST_BINS;
  hs.forEach((h, k) => {
    const base = T + ridgeH + k * rowH;
    const shade = Math.round(200 - (150 * k) / Math.max(1, hs.length - 1));
    const pts = bins[k].map((c, b) => [sx(lo + (b + 0.5) * bw), base - (c / peak) * ridgeH]);
    const d = `M${sx(lo).toFixed(1)},${base.toFixed(1)}` + pts.map(([x, y]) => `L${x.toFixed(1)},${y.toFixed(1)}`).join("") + `L${sx(hi).toFixed(1)},${base.toFixed(1)}Z`;
    svg.append(el("svg:path", { class: "ridge", d, fill: `rgb(255,${shade},${Math.round(shade * 0.6)})`, "fill-opacity": "0.55", stroke: `rgb(180,${Math.round(shade * 0.5)},0)`, "data-step": String(h.step) }));
    if (k === 0 || k === hs.length - 1 || k % Math.ceil(hs.length / 5) === 0) {
      svg.append(el("svg:text", { x: 2, y: base, text: String(h.step) }));
    }
  });
  for (const t of niceTicks(lo, hi, 5)) svg.append(el("svg:text", { x: sx(t), y: H - 8, "text-anchor": "middle", text: fmt(t) }));
  svg.append(el("svg:line", { class: "axis", x1: L, x2: W - R, y1: H - B, y2: H - B }));
  const last = hs[hs.length - 1];
  const mean = last.sum / last.num;
  const sd = Math.sqrt(Math.max(0, last.sumSquares / last.num - mean * mean));
  card.append(svg, el("div", { class: "readout", text: `${hs.length} step(s), ${hs[0].step}–${last.step}; last: mean ${fmt(mean)}, sd ${fmt(sd)}, range [${fmt(last.min)}, ${fmt(last.max)}], ${last.num} values` }));
  return card;
}

// ---------- compiled graphs ----------

let graphvizPromise = null;

// graphviz loads the layout engine (Graphviz compiled to WebAssembly,
// served from the binary) the first time a graph is drawn.
function graphviz() {
  if (!graphvizPromise) graphvizPromise = import("./vendor/graphviz.js").then((m) => m.Graphviz.load());
  return graphvizPromise;
}

// fillFunctions offers a run's compiled functions, opening on the
// training step's when nothing was chosen yet.
function fillFunctions(sel, run) {
  const files = run ? run.graphs : [];
  const before = sel.value;
  fillSelect(sel, files, fileLabels(files));
  if (!before || !files.includes(before)) {
    const step = files.find((f) => /^graphs\/TrainOneStepCell-/.test(f));
    if (step) sel.value = step;
  }
}

async function record(run, file) {
  const k = `${run}\0${file}`;
  if (!state.records.has(k)) state.records.set(k, await getJSON(`api/graph?${q({ run, file })}`));
  return state.records.get(k);
}

function fileLabels(files) {
  return files.map((f) => f.replace(/^graphs\//, "").replace(/\.json$/, ""));
}

async function drawGraph() {
  const runName = $("graph-run").value;
  const run = state.runs.find((r) => r.name === runName);
  fillFunctions($("graph-file"), run);
  const file = $("graph-file").value;
  const vp = $("graph-viewport");
  if (!run || !file) {
    if (state.graphKey !== "none") {
      state.graphKey = "none";
      vp.replaceChildren(el("p", { class: "muted", text: "no compiled functions recorded in this log dir" }));
      $("graph-info").textContent = "";
      $("profile-panel").hidden = true;
    }
    return;
  }
  let rec;
  try {
    rec = await record(run.name, file);
  } catch (err) {
    vp.replaceChildren(el("p", { class: "muted", text: err.message }));
    state.graphKey = "";
    return;
  }
  try {
    await drawRecord(run, file, rec, vp);
  } catch (err) {
    malformed(vp, file, err);
  }
}

// malformed says in box that a record could not be drawn. The server
// refuses records of the wrong shape; this catches what its check does
// not foresee, so that the page shows a reason rather than a script error.
function malformed(box, file, err) {
  box.replaceChildren(el("p", { class: "muted", text: `malformed graph file ${file}: ${err.message || err}` }));
  console.error(`spore dashboard: graph file ${file}:`, err);
}

// drawRecord draws the chosen pass's graph of a compile record.
async function drawRecord(run, file, rec, vp) {
  const passes = rec.passes || [];
  fillSelect($("graph-pass"), passes.map((_, i) => String(i)), passes.map((p, i) => `${i}: ${p.pass}`));
  if ($("graph-pass").dataset.file !== file) {
    $("graph-pass").dataset.file = file;
    $("graph-pass").value = String(passes.length - 1);
  }
  const pi = Number($("graph-pass").value);
  const key = JSON.stringify([run.name, file, pi]);
  if (key === state.graphKey) return;
  state.graphKey = key;
  const pass = passes[pi];
  if (!pass) {
    vp.replaceChildren(el("p", { class: "muted", text: "this record holds no passes" }));
    return;
  }
  vp.replaceChildren(el("p", { class: "muted", text: "laying out…" }));
  let svgText;
  try {
    const gv = await graphviz();
    svgText = gv.layout(toDot(rec.name, pass.graph), "svg", "dot");
  } catch (err) {
    vp.replaceChildren(el("p", { class: "muted", text: `layout failed: ${err.message || err}` }));
    console.error("spore dashboard: graph layout failed:", err);
    return;
  }
  if (state.graphKey !== key) return; // the choice changed while laying out
  const doc = new DOMParser().parseFromString(svgText, "image/svg+xml");
  const svg = document.importNode(doc.documentElement, true);
  svg.removeAttribute("width");
  svg.removeAttribute("height");
  svg.setAttribute("id", "graph-svg");
  svg.setAttribute("data-nodes", String(pass.graph.nodes.length));
  vp.replaceChildren(svg);
  enablePanZoom(vp, svg);
  const nodes = new Map(pass.graph.nodes.map((n) => [n.id, n]));
  svg.addEventListener("click", (e) => {
    if (vp.dataset.dragged === "1") return;
    const g = e.target.closest("g.node");
    if (!g) return;
    svg.querySelectorAll("g.node.selected").forEach((s) => s.classList.remove("selected"));
    g.classList.add("selected");
    showNode(nodes.get(Number(g.id.replace("node-", ""))), nodes, pass.graph);
  });
  $("node-details").hidden = true;
  $("graph-info").textContent = `${rec.name} ${rec.signature || ""} · level ${rec.level || "?"} · ${pass.graph.nodes.length} nodes after ${pass.pass}`;
  await showProfile(run.name, file, pi === passes.length - 1, svg, nodes, pass.graph, key);
}

function showNode(n, nodes, graph) {
  const box = $("node-details");
  if (!n) { box.hidden = true; return; }
  const rows = [
    ["id", `%${n.id}`], ["op", n.op], ["kind", n.kind], ["shape", `[${(n.shape || []).join(", ")}]`], ["dtype", n.dtype || ""],
    ["pass", n.fused && n.fused.length ? `fused by ${n.pass}` : `made by ${n.pass || "trace"}`],
  ];
  if (n.fused && n.fused.length) rows.push(["fused ops", n.fused.join(", ")]);
  rows.push(["inputs", (n.inputs || []).map((i) => `%${i}${nodes.has(i) ? " " + nodes.get(i).op : ""}`).join(", ") || "none"]);
  const users = graph.nodes.filter((m) => (m.inputs || []).includes(n.id)).map((m) => `%${m.id} ${m.op}`);
  rows.push(["used by", users.join(", ") || "none"]);
  if ((graph.outputs || []).includes(n.id)) rows.push(["result", `output ${(graph.outputs || []).indexOf(n.id)}`]);
  for (const a of graph.assigns || []) {
    const p = nodes.get(a.param);
    const name = p && p.attrs && p.attrs.name ? ` ${p.attrs.name}` : "";
    if (a.value === n.id) rows.push(["assigns", `new value of %${a.param}${name}`]);
    if (a.param === n.id) rows.push(["assigned", `from %${a.value} ${nodes.has(a.value) ? nodes.get(a.value).op : ""} each run`]);
  }
  for (const r of n.regions || []) rows.push([`region ${r.name}`, `${(r.graph && r.graph.nodes || []).length} nodes (not drawn), inputs from ${(r.binds || []).map((b) => `%${b}`).join(", ") || "none"}`]);
  for (const [k, v] of Object.entries(n.attrs || {})) rows.push([`attr ${k}`, String(v)]);
  rows.push(["source", n.source || "unknown"]);
  const pr = state.nodeProfile.get(n.id);
  if (pr) {
    rows.push(["time", `${formatNs(pr.totalNs)} in ${pr.calls} calls, ${formatNs(pr.meanNs)} each`]);
    rows.push(["share", `${(100 * pr.share).toFixed(1)}% of the function's steps`]);
    if (pr.gflops) rows.push(["GFLOP/s", pr.gflops.toFixed(1)]);
  }
  box.replaceChildren(
    el("h3", { text: `%${n.id} ${n.op}` }),
    el("table", {}, ...rows.map(([k, v]) => el("tr", { "data-field": k }, el("td", { text: k }), el("td", { text: v })))),
  );
  box.hidden = false;
}

// ---------- profiles ----------

// showProfile shows, below the graph, the profile of the function drawn
// (if the run recorded one): its steps by time. Over the last pass, whose
// nodes the steps are, each step's node is shaded by its share of the
// time, and a click on a row selects its node.
async function showProfile(runName, file, isLast, svg, nodes, graph, key) {
  const box = $("profile-panel");
  state.nodeProfile = new Map();
  let view;
  try {
    view = await getJSON(`api/profile?${q({ run: runName, file })}`);
  } catch (err) {
    if (state.graphKey !== key) return;
    box.dataset.state = "none";
    box.replaceChildren(el("p", { class: "muted", text: err.message }));
    box.hidden = false;
    return;
  }
  if (state.graphKey !== key) return;
  const f = view.function;
  const rows = profileRows(view);
  const maxShare = Math.max(...rows.map((r) => r.share), 1e-9);
  if (isLast) {
    for (const r of rows) {
      state.nodeProfile.set(r.node, r);
      const g = svg.querySelector(`g.node#node-${r.node}`);
      if (!g) continue;
      g.classList.add("profiled");
      g.dataset.share = r.share.toFixed(4);
      const heat = `rgba(232, 113, 10, ${(0.1 + 0.9 * r.share / maxShare).toFixed(3)})`;
      g.querySelectorAll("polygon, path, ellipse").forEach((shape) => shape.setAttribute("fill", heat));
    }
  }
  const perRun = f.runs ? f.timeNs / f.runs : 0;
  const caption = `profile: ${f.runs} run(s), ${formatNs(perRun)} per run, ${rows.length} steps` +
    (isLast ? " · nodes shaded by their share of the time" : " · choose the last pass to see each step's node");
  const head = el("tr", {}, ...["op", "shape", "calls", "total", "mean", "share", "GFLOP/s"].map((h) => el("th", { text: h })));
  const body = rows.map((r) => {
    const tr = el("tr", { "data-node": String(r.node) },
      el("td", { text: r.op }), el("td", { text: r.shape }), el("td", { class: "num", text: String(r.calls) }),
      el("td", { class: "num", text: formatNs(r.totalNs) }), el("td", { class: "num", text: formatNs(r.meanNs) }),
      el("td", { class: "num", text: `${(100 * r.share).toFixed(1)}%` }), el("td", { class: "num", text: r.gflops ? r.gflops.toFixed(1) : "-" }));
    if (isLast) {
      tr.addEventListener("click", () => {
        svg.querySelectorAll("g.node.selected").forEach((s) => s.classList.remove("selected"));
        const g = svg.querySelector(`g.node#node-${r.node}`);
        if (g) g.classList.add("selected");
        showNode(nodes.get(r.node), nodes, graph);
      });
    }
    return tr;
  });
  box.dataset.state = "shown";
  box.replaceChildren(el("p", { class: "muted", text: caption }), el("table", {}, el("thead", {}, head), el("tbody", {}, ...body)));
  box.hidden = false;
}

// enablePanZoom makes the graph draggable and wheel-zoomable by moving
// the SVG's viewBox.
function enablePanZoom(vp, svg) {
  const vb0 = svg.viewBox.baseVal;
  const home = { x: vb0.x, y: vb0.y, w: vb0.width, h: vb0.height };
  let vb = { ...home };
  const apply = () => svg.setAttribute("viewBox", `${vb.x} ${vb.y} ${vb.w} ${vb.h}`);
  const zoomAt = (factor, cx, cy) => {
    vb = { x: cx - (cx - vb.x) * factor, y: cy - (cy - vb.y) * factor, w: vb.w * factor, h: vb.h * factor };
    apply();
  };
  const toSVG = (e) => new DOMPoint(e.clientX, e.clientY).matrixTransform(svg.getScreenCTM().inverse());
  svg.addEventListener("wheel", (e) => {
    e.preventDefault();
    const p = toSVG(e);
    zoomAt(Math.exp(e.deltaY * 0.0015), p.x, p.y);
  }, { passive: false });
  let drag = null;
  svg.addEventListener("pointerdown", (e) => {
    drag = { x: e.clientX, y: e.clientY, vb: { ...vb }, moved: false };
    vp.dataset.dragged = "0";
  });
  svg.addEventListener("pointermove", (e) => {
    if (!drag) return;
    const dx = e.clientX - drag.x, dy = e.clientY - drag.y;
    if (!drag.moved && Math.hypot(dx, dy) < 4) return;
    if (!drag.moved) {
      drag.moved = true;
      try { svg.setPointerCapture(e.pointerId); } catch { /* a pointer already gone: the drag goes on without capture */ }
      vp.classList.add("dragging");
    }
    const scale = svg.getScreenCTM().a;
    vb = { ...drag.vb, x: drag.vb.x - dx / scale, y: drag.vb.y - dy / scale };
    apply();
  });
  const end = () => {
    if (drag && drag.moved) vp.dataset.dragged = "1";
    drag = null;
    vp.classList.remove("dragging");
  };
  svg.addEventListener("pointerup", end);
  svg.addEventListener("pointercancel", end);
  const center = () => [vb.x + vb.w / 2, vb.y + vb.h / 2];
  $("zoom-in").onclick = () => zoomAt(1 / 1.4, ...center());
  $("zoom-out").onclick = () => zoomAt(1.4, ...center());
  $("zoom-fit").onclick = () => { vb = { ...home }; apply(); };
}

// ---------- the pass-by-pass view ----------

const normalise = (s) => s.replace(/%\d+/g, "%_");

function lines(text) {
  const ls = (text || "").split("\n");
  if (ls.length && ls[ls.length - 1] === "") ls.pop();
  return ls;
}

async function drawPasses() {
  const runName = $("pass-run").value;
  const run = state.runs.find((r) => r.name === runName);
  fillFunctions($("pass-file"), run);
  const file = $("pass-file").value;
  const ignore = $("ignore-numbers").checked;
  // The pass shown: the one clicked, else the first that changed the IR.
  const chosen = $("pass-list").dataset.active;
  const key = JSON.stringify([runName, file, ignore, chosen ?? "first change"]);
  if (key === state.passKey) return;
  if (!run || !file) {
    state.passKey = key;
    $("pass-list").replaceChildren();
    $("pass-summary").textContent = "";
    $("pass-diff").replaceChildren(el("p", { class: "muted", text: "no compiled functions recorded in this log dir" }));
    return;
  }
  let rec;
  try {
    rec = await record(run.name, file);
  } catch (err) {
    $("pass-diff").replaceChildren(el("p", { class: "muted", text: err.message }));
    return;
  }
  state.passKey = key;
  try {
    drawPassList(rec, chosen, ignore);
  } catch (err) {
    $("pass-list").replaceChildren();
    $("pass-summary").textContent = "";
    malformed($("pass-diff"), file, err);
  }
}

// drawPassList lists a record's passes and shows the chosen one's
// changes (the first that changed the IR when none was chosen).
function drawPassList(rec, chosen, ignore) {
  const passes = rec.passes || [];
  const keyFn = ignore ? normalise : (s) => s;
  const diffs = passes.map((p, i) => (i === 0 ? null : diffLines(lines(passes[i - 1].text), lines(p.text), keyFn)));
  let pi = chosen === undefined ? diffs.findIndex((d) => d && d.some((o) => o[0] !== "=")) : Number(chosen);
  if (pi < 0) pi = 1;
  pi = Math.max(0, Math.min(pi, passes.length - 1));
  const list = $("pass-list");
  list.replaceChildren(...passes.map((p, i) => {
    const d = diffs[i];
    const del = d ? d.filter((o) => o[0] === "-").length : 0, add = d ? d.filter((o) => o[0] === "+").length : 0;
    const b = el("button", { "data-pass": String(i), class: i === pi ? "active" : "" }, p.pass, el("span", { class: "delta", text: i === 0 ? "input" : del + add === 0 ? "no change" : `−${del} +${add}` }));
    b.addEventListener("click", () => { list.dataset.active = String(i); drawPasses(); });
    return b;
  }));
  const cur = passes[pi];
  const prev = pi > 0 ? passes[pi - 1] : null;
  if (!cur) {
    $("pass-diff").replaceChildren(el("p", { class: "muted", text: "this record holds no passes" }));
    return;
  }
  $("pass-summary").replaceChildren(nodeDelta(prev, cur));
  $("pass-diff").replaceChildren(diffTable(prev ? lines(prev.text) : [], lines(cur.text), prev ? diffs[pi] : lines(cur.text).map((_, j) => ["+", null, j]), prev ? prev.pass : "(nothing)", cur.pass));
}

// nodeDelta says which nodes a pass removed and added, by node id (ids
// survive passes), grouped by op.
function nodeDelta(prev, cur) {
  if (!prev) return el("span", { text: `${cur.graph.nodes.length} nodes as traced` });
  const before = new Map(prev.graph.nodes.map((n) => [n.id, n]));
  const after = new Map(cur.graph.nodes.map((n) => [n.id, n]));
  const removed = [...before.values()].filter((n) => !after.has(n.id));
  const added = [...after.values()].filter((n) => !before.has(n.id));
  // A node a pass rewrote in place keeps its id and names the pass.
  const rewritten = [...after.values()].filter((n) => {
    const b = before.get(n.id);
    return b && (b.op !== n.op || (n.pass === cur.pass && b.pass !== n.pass));
  });
  const count = (ns) => {
    const c = new Map();
    for (const n of ns) c.set(n.op, (c.get(n.op) || 0) + 1);
    return [...c].map(([op, k]) => (k > 1 ? `${op}×${k}` : op)).join(", ");
  };
  const parts = [`${cur.pass}: ${before.size} → ${after.size} nodes`];
  if (removed.length) parts.push(`removed ${removed.length} (${count(removed)})`);
  if (added.length) parts.push(`added ${added.length} (${count(added)})`);
  if (rewritten.length) parts.push(`rewrote ${rewritten.length} (${rewritten.map((n) => `%${n.id} ${before.get(n.id).op} → ${n.op}`).join(", ")})`);
  if (!removed.length && !added.length && !rewritten.length) parts.push("same nodes");
  return el("span", { text: parts.join("; ") });
}

function diffTable(a, b, ops, leftName, rightName) {
  const rows = [];
  let k = 0;
  while (k < ops.length) {
    if (ops[k][0] === "=") {
      const [, i, j] = ops[k++];
      rows.push([i, a[i], "", j, b[j], ""]);
      continue;
    }
    const dels = [], adds = [];
    while (k < ops.length && ops[k][0] !== "=") {
      if (ops[k][0] === "-") dels.push(ops[k][1]);
      else adds.push(ops[k][2]);
      k++;
    }
    for (let r = 0; r < Math.max(dels.length, adds.length); r++) {
      const i = dels[r], j = adds[r];
      rows.push([i, i == null ? "" : a[i], i == null ? "empty" : "del", j, j == null ? "" : b[j], j == null ? "empty" : "add"]);
    }
  }
  const ln = (i) => (i == null ? "" : String(i + 1));
  return el("table", {},
    el("colgroup", {}, el("col", { style: "width:3.5em" }), el("col"), el("col", { style: "width:3.5em" }), el("col")),
    el("tr", {}, el("th", { colspan: "2", text: `before: after ${leftName}` }), el("th", { colspan: "2", text: `after ${rightName}` })),
    ...rows.map(([i, l, lc, j, r, rc]) => el("tr", {},
      el("td", { class: "ln", text: ln(i) }), el("td", { class: lc, text: l }),
      el("td", { class: "ln", text: ln(j) }), el("td", { class: rc, text: r }))));
}

// ---------- wiring ----------

function showView(view) {
  state.view = view;
  for (const b of document.querySelectorAll("#tabs button")) b.classList.toggle("active", b.dataset.view === view);
  for (const s of document.querySelectorAll(".view")) s.hidden = s.id !== `view-${view}`;
  drawView();
}

function init() {
  for (const b of document.querySelectorAll("#tabs button")) b.addEventListener("click", () => showView(b.dataset.view));
  $("smoothing").addEventListener("input", () => {
    $("smoothing-value").textContent = Number($("smoothing").value).toFixed(2);
    drawScalars();
  });
  $("show-raw").addEventListener("change", drawScalars);
  $("hist-run").addEventListener("change", drawHistograms);
  $("hist-filter").addEventListener("input", drawHistograms);
  $("graph-run").addEventListener("change", drawGraph);
  $("graph-file").addEventListener("change", drawGraph);
  $("graph-pass").addEventListener("change", drawGraph);
  $("pass-run").addEventListener("change", drawPasses);
  $("pass-file").addEventListener("change", () => { delete $("pass-list").dataset.active; drawPasses(); });
  $("ignore-numbers").addEventListener("change", drawPasses);
  const initial = location.hash.replace("#", "");
  if (["scalars", "histograms", "graphs", "passes"].includes(initial)) showView(initial);
  poll();
}

init();
