// toolout console: sessions -> outputs -> jobs, and each job's trace live (GET /v1/extractions/{id}/events).
// Plain browser JavaScript, no build step, no external resource: it runs wherever the API runs.
"use strict";

const $ = (sel, root = document) => root.querySelector(sel);
function build(tag, props, kids) {
  const node = Object.assign(document.createElement(tag), props);
  for (const kid of kids) node.append(kid);
  return node;
}

const state = { session: null, output: null, sessions: JSON.parse(localStorage.getItem("toolout.sessions") || "[]") };

function headers(extra = {}) {
  const key = $("#key").value.trim();
  return key ? { Authorization: `Bearer ${key}`, ...extra } : extra;
}

async function api(path, options = {}) {
  const response = await fetch(path, { ...options, headers: headers(options.headers) });
  const body = response.headers.get("content-type")?.includes("json") ? await response.json() : await response.text();
  if (!response.ok) {
    const message = body?.error?.message || `${response.status} ${response.statusText}`;
    notice(message);
    throw new Error(message);
  }
  return body;
}

function notice(text) { $("#notice").textContent = text; }

function remember(sessionId) {
  state.sessions = [sessionId, ...state.sessions.filter((s) => s !== sessionId)].slice(0, 20);
  localStorage.setItem("toolout.sessions", JSON.stringify(state.sessions));
  renderSessions();
}

function renderSessions() {
  $("#session-list").replaceChildren(...state.sessions.map((id) =>
    build("li", {}, [build("a", { textContent: id.slice(0, 8), title: id, onclick: () => openSession(id) }, [])])));
}

async function openSession(id) {
  const session = await api(`/v1/sessions/${id}`);
  state.session = session.id;
  remember(session.id);
  $("#session").hidden = false;
  $("#session-title").textContent = session.id;
  const outputs = await Promise.all(session.outputs.map((h) => api(`/v1/outputs/${h}`)));
  $("#outputs").replaceChildren(...outputs.map((o) => build("li", {}, [
    build("a", { textContent: `${o.tool_name} · ${o.bytes.toLocaleString()} bytes`, onclick: () => openOutput(o) }, []),
  ])));
  const variables = await api(`/v1/sessions/${id}/variables`);
  $("#variables").replaceChildren(...variables.items.map((v) => build("li", { textContent: `$${v.name}` }, [])));
  await listJobs();
}

async function listJobs() {
  const jobs = await api(`/v1/sessions/${state.session}/extractions`);
  $("#jobs").replaceChildren(...jobs.items.map((j) => build("li", {}, [
    build("a", { textContent: `${j.mode_used || j.mode_requested} · ${j.status} · ${j.extract.slice(0, 40)}`,
      onclick: () => showJob(j.id) }, []),
  ])));
}

async function openOutput(output) {
  state.output = output;
  $("#output").hidden = false;
  $("#output-title").textContent = output.handle;
  $("#output-stats").textContent =
    `${output.bytes.toLocaleString()} bytes · ${output.lines.toLocaleString()} lines · ${output.tokens.toLocaleString()} tokens · ${output.content_type}`;
  const head = await api(`/v1/outputs/${output.handle}/lines?offset=1&limit=12`, { headers: { Accept: "application/json" } });
  $("#output-head").textContent = head.text;
}

async function startJob(handle, extract, mode, model) {
  const body = { handle, extract, mode, ...(model ? { model } : {}) };
  const job = await api("/v1/extractions", {
    method: "POST", body: JSON.stringify(body), headers: { "Content-Type": "application/json" } });
  await showJob(job.id);
  if (state.session) listJobs();
}

// --- one job: its tree (maps, reduce levels) or its agent steps, live --------------------------------
async function showJob(jobId) {
  const pane = $("#job-pane").content.firstElementChild.cloneNode(true);
  pane.dataset.job = jobId;
  $("#compare").append(pane);
  $(".close", pane).onclick = () => pane.remove();
  $(".rerun", pane).onsubmit = async (event) => {
    event.preventDefault();
    const job = await api(`/v1/extractions/${jobId}`);
    await startJob(job.handle, job.extract, $(".rerun-mode", pane).value, $(".rerun-model", pane).value.trim());
  };
  const view = { pane, nodes: new Map(), events: [] };
  renderJob(view, await api(`/v1/extractions/${jobId}`));
  await follow(view, jobId);
}

async function follow(view, jobId) {
  const response = await fetch(`/v1/extractions/${jobId}/events`, { headers: headers() });
  const reader = response.body.pipeThrough(new TextDecoderStream()).getReader();
  let buffer = "";
  for (;;) {
    const { value, done } = await reader.read();
    if (done) break;
    buffer += value;
    let cut;
    while ((cut = buffer.indexOf("\n\n")) >= 0) {
      const block = buffer.slice(0, cut);
      buffer = buffer.slice(cut + 2);
      await onEvent(view, jobId, parseEvent(block));
    }
  }
}

function parseEvent(block) {
  const event = { type: "message", data: "" };
  for (const line of block.split("\n")) {
    if (line.startsWith("event: ")) event.type = line.slice(7);
    else if (line.startsWith("data: ")) event.data += line.slice(6);
  }
  return event;
}

async function onEvent(view, jobId, event) {
  if (event.type === "trace") addStep(view, JSON.parse(event.data));
  if (event.type === "status" || event.type === "end") renderJob(view, await api(`/v1/extractions/${jobId}`));
}

function renderJob(view, job) {
  const { pane } = view;
  pane.dataset.status = job.status;
  $(".job-title", pane).textContent = `${job.mode_used || job.mode_requested} · ${job.extract.slice(0, 60)}`;
  const seconds = job.finished_at && job.started_at ? ` · ${(job.finished_at - job.started_at).toFixed(2)} s` : "";
  const cost = job.usage.cost_usd == null ? "" : ` · $${job.usage.cost_usd.toFixed(4)}`;
  const status = $(".job-status", pane);
  status.className = `job-status status-${job.status}`;
  status.textContent = `${job.status} · ${job.chunks_done}/${job.chunks_total} chunks · ${job.usage.calls} calls · ` +
    `${job.usage.input_tokens.toLocaleString()} in / ${job.usage.output_tokens.toLocaleString()} out tokens${cost}${seconds}`;
  $(".job-route", pane).textContent = job.routing_reason ? `routed: ${job.routing_reason}` : "";
  if (job.chunks_total && !view.nodes.size) drawChunks(view, job.chunks_total);
  if (job.result) $(".result-text", pane).textContent = job.result;
  if (job.status === "succeeded" || job.status === "failed") $(".job-result", pane).open = true;
  renderSources(view, job);
}

// --- an answer's evidence: each source, and its lines highlighted in the output ----------------------
const SOURCE_CONTEXT = 3;

function renderSources(view, job) {
  const items = job.evidence || [];
  const box = $(".job-sources", view.pane);
  box.hidden = !items.length;
  if (!items.length || view.sourcesShown === items.length) return;
  view.sourcesShown = items.length;
  box.open = true;
  $(".sources", view.pane).replaceChildren(...items.map((item) => build("li", {}, [
    build("a", { className: `source ${item.verified ? "verified" : "unverified"}`, textContent: sourceLabel(item),
      title: item.why || item.match, onclick: () => openSource(view, job.handle, item) }, []),
  ])));
}

function sourceLabel(item) {
  if (item.source === "query") return `query ✓ ${item.sql}`;
  const lines = item.start_line === item.end_line ? `L${item.start_line}` : `L${item.start_line}-L${item.end_line}`;
  const mark = item.verified ? "✓" : "✗ not verified";
  return `${lines} ${mark} ${item.source}${item.quote ? ": " + item.quote.slice(0, 80) : ""}`;
}

async function openSource(view, handle, item) {
  const pre = $(".source-lines", view.pane);
  if (item.source === "query") {
    pre.replaceChildren(build("span", { textContent: `${item.sql}\n\n${item.rows || ""}` }, []));
    return;
  }
  const offset = Math.max(1, item.start_line - SOURCE_CONTEXT);
  const limit = Math.min(item.end_line, item.start_line + 200) - offset + 1 + SOURCE_CONTEXT;
  const read = await api(`/v1/outputs/${handle}/lines?offset=${offset}&limit=${limit}`, { headers: { Accept: "application/json" } });
  pre.replaceChildren(...read.text.split("\n").map((line) => {
    const number = Number((line.match(/^\s*(\d+)\t/) || [])[1]);
    const cited = number >= item.start_line && number <= item.end_line;
    const node = build(cited ? "mark" : "span", { className: cited ? "cited" : "", textContent: line + "\n" }, []);
    node.setAttribute("data-line", String(number));
    return node;
  }));
  const first = $("mark.cited", pre);
  if (first) first.scrollIntoView({ block: "nearest" });
}

function drawChunks(view, total) {
  const level = build("div", { className: "level maps" }, []);
  for (let i = 0; i < total; i++) {
    const node = build("button", { className: "node", textContent: i + 1, title: `chunk ${i + 1}` }, []);
    node.dataset.chunk = i;
    view.nodes.set(`map:${i}`, node);
    level.append(node);
  }
  $(".tree", view.pane).prepend(level);
  for (const event of view.events) placeStep(view, event);
}

function addStep(view, event) {
  view.events.push(event);
  placeStep(view, event);
}

function placeStep(view, event) {
  if (event.kind === "map") return markNode(view, `map:${event.chunk}`, event, mapFound(event) ? "found" : "done");
  if (event.kind === "failed") return markNode(view, event.level === 0 ? `map:${event.index}` : `reduce:${event.level}:${event.index}`, event, "failed");
  if (event.kind === "reduce") return reduceNode(view, event);
  if (event.kind === "answer") return answerNode(view, event);
  const line = build("li", { textContent: stepLine(event) }, []);
  line.onclick = () => show(view, line, event);
  $(".steps", view.pane).append(line);
}

function mapFound(event) { return event.answer && !/NO RELEVANT DATA/i.test(event.answer) && event.answer.trim() !== ""; }

function markNode(view, key, event, cls) {
  const node = view.nodes.get(key);
  if (!node) return;
  node.classList.add(cls);
  node.onclick = () => show(view, node, event);
}

function reduceNode(view, event) {
  let level = $(`.level[data-level="${event.level}"]`, view.pane);
  if (!level) {
    level = build("div", { className: "level" }, []);
    level.dataset.level = event.level;
    $(".tree", view.pane).append(level);
  }
  const node = build("button", { className: "node reduce done", textContent: `reduce ${event.level}.${event.group + 1}` }, []);
  node.onclick = () => show(view, node, event);
  level.append(node);
}

function answerNode(view, event) {
  const label = event.reduced ? "answer (reduced)" : event.answer ? "answer (one chunk held it: no reduce)" : "answer (nothing found)";
  const node = build("button", { className: "node answer done", textContent: label }, []);
  node.onclick = () => show(view, node, event);
  $(".tree", view.pane).append(build("div", { className: "level" }, [node]));
}

function stepLine(event) {
  if (event.kind === "tool") return `${event.name}(${JSON.stringify(event.args)}) · ${event.seconds} s`;
  if (event.kind === "fallback") return `fell back to ${event.to}: ${event.reason}`;
  if (event.kind === "truncated") return `trace cut at ${event.max_bytes} bytes`;
  return JSON.stringify(event);
}

function show(view, node, event) {
  for (const picked of view.pane.querySelectorAll(".selected")) picked.classList.remove("selected");
  node.classList.add("selected");
  const lines = [];
  if (event.kind === "map") lines.push(`chunk ${event.chunk + 1}: bytes ${event.start}–${event.end}, ${event.lines} lines`);
  if (event.kind === "reduce") lines.push(`reduce level ${event.level}, group ${event.group + 1}: ${event.inputs} inputs`);
  if (event.input_tokens != null) lines.push(`${event.calls} call(s), ${event.input_tokens} in / ${event.output_tokens} out tokens, ${event.seconds} s`);
  if (event.kind === "tool") lines.push(`${event.name} ${JSON.stringify(event.args)}`);
  if (event.reason) lines.push(event.reason);
  lines.push("", event.answer ?? event.result ?? event.error ?? "");
  $(".node-text", view.pane).textContent = lines.join("\n");
}

// --- wiring -----------------------------------------------------------------------------------------
$("#key").value = localStorage.getItem("toolout.key") || "";
$("#key").onchange = () => localStorage.setItem("toolout.key", $("#key").value.trim());
$("#new-session").onclick = async () => openSession((await api("/v1/sessions", { method: "POST" })).id);
$("#open-session").onsubmit = (event) => { event.preventDefault(); openSession($("#session-id").value.trim()); };
$("#upload").onsubmit = async (event) => {
  event.preventDefault();
  const file = $("#upload-file").files[0];
  const body = file ? await file.arrayBuffer() : $("#upload-text").value;
  await api(`/v1/sessions/${state.session}/outputs`, { method: "POST", body, headers: { "X-Tool-Name": $("#tool-name").value } });
  $("#upload-text").value = "";
  await openSession(state.session);
};
$("#extract").onsubmit = (event) => {
  event.preventDefault();
  startJob(state.output.handle, $("#extract-text").value, $("#extract-mode").value, $("#extract-model").value.trim());
};
renderSessions();
const linked = new URLSearchParams(location.search);
if (linked.get("session")) openSession(linked.get("session"));
if (linked.get("job")) showJob(linked.get("job"));
