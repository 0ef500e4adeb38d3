// The mcpvisor operations page: every server's state, restarts, calls/s,
// error rate, p50/p99 latency and pending calls over the last hour, as
// small charts that move with /v1/ops/stream, and one click to restart,
// disable or enable a server. Plain JavaScript, no build step.
//
// The bearer token comes from the URL fragment (#token=...), the login
// form, or the inbox page (both keep it in sessionStorage). Everything a
// server sent is rendered with textContent or as SVG attributes: never as
// HTML.
"use strict";

(() => {
  const RETRY_MIN = 1000;
  const RETRY_MAX = 15000;
  const LOG_LINES = 20;
  const SVG = "http://www.w3.org/2000/svg";

  // The colour of each state on the timeline; the state's name is also in
  // each segment's tooltip and in the badge, so colour is never alone.
  const STATE_CLASS = {
    ready: "ready", starting: "starting", initializing: "starting", backoff: "backoff",
    failed: "failed", needs_auth: "failed", disabled: "off", stopped: "off",
  };

  const { $, el, setAttrs, sleep, Unauthorized } = mcpvisorUI;
  const { api, readSSE, setConn } = mcpvisorUI.session(start);
  let session = null; // the AbortSignal of the page's loops

  function start(signal) {
    session = signal;
    follow(signal);
  }

  function svg(tag, attrs, text) {
    const e = document.createElementNS(SVG, tag);
    setAttrs(e, attrs);
    if (text !== undefined && text !== null) e.textContent = String(text);
    return e;
  }

  // The view: the last snapshot's servers, each with its points by time.
  const view = { time: 0, stepMs: 10000, windowMs: 3600000, servers: new Map() };
  let selected = ""; // the server in the detail panel
  let detailSeen = ""; // its state and restarts when its log was last read

  // --- the stream --------------------------------------------------------

  // follow reads /v1/ops/stream until signal aborts, reconnecting with a
  // growing delay when it drops; each reconnection asks for the whole
  // window again.
  async function follow(signal) {
    let delay = RETRY_MIN;
    while (!signal.aborted) {
      try {
        await readSSE("/v1/ops/stream", (name, data) => {
          if (name !== "ops") return;
          delay = RETRY_MIN;
          setConn("live", "live");
          onOps(data);
        }, signal);
        setConn("connection lost: reconnecting", "down");
      } catch (e) {
        if (e instanceof Unauthorized || signal.aborted) return;
        setConn("connection lost: " + e.message, "down");
      }
      await sleep(delay, signal);
      delay = Math.min(delay * 2, RETRY_MAX);
    }
  }

  // onOps merges one snapshot: the servers' figures replace the old ones,
  // their points are merged by time (the step under way is sent again as
  // it fills), and points older than the window are dropped.
  function onOps(data) {
    view.time = Date.parse(data.time);
    view.stepMs = data.stepMs || view.stepMs;
    view.windowMs = data.windowMs || view.windowMs;
    const from = view.time - view.windowMs;
    const next = new Map();
    for (const s of data.servers || []) {
      const old = view.servers.get(s.name);
      const points = old ? old.points : new Map();
      for (const p of s.points || []) points.set(Date.parse(p.t), p);
      for (const t of points.keys()) if (t < from) points.delete(t);
      next.set(s.name, Object.assign({}, s, { points }));
    }
    view.servers = next;
    render();
  }

  // --- rendering -------------------------------------------------------

  function render() {
    const list = [...view.servers.values()];
    renderTotals(list);
    const q = $("filter").value.trim().toLowerCase();
    const shown = list.filter((s) => !q || s.name.toLowerCase().includes(q) || String(s.state).includes(q));
    shown.sort(sorter($("sort").value));
    $("servers").replaceChildren(...shown.map(card));
    $("servers-empty").hidden = shown.length > 0 || list.length === 0;
    renderDetail();
  }

  // health ranks a server for sorting, what needs a look first: 0 an
  // enabled server that is not ready (failed, backing off after a crash,
  // waiting for a sign-in, starting), 1 a ready one whose calls fail, 2 a
  // healthy one, 3 one disabled on purpose.
  function health(s) {
    if (!s.enabled || s.state === "disabled") return 3;
    if (s.state !== "ready") return 0;
    return s.recent.errorRate > 0 ? 1 : 2;
  }

  // sorter orders the cards by key within health (but by name alone):
  // a failing server never hides below the healthy ones.
  function sorter(key) {
    const name = (a, b) => a.name.localeCompare(b.name);
    const by = (f) => (a, b) => health(a) - health(b) || f(b) - f(a) || name(a, b);
    switch (key) {
      case "errors": return by((s) => s.recent.errorRate);
      case "rate": return by((s) => s.recent.rate);
      case "restarts": return by((s) => s.restarts);
      case "name": return name;
      default: return by((s) => s.recent.p99);
    }
  }

  function renderTotals(list) {
    $("total-servers").textContent = list.length;
    const states = new Map();
    let rate = 0, errors = 0, pending = 0;
    for (const s of list) {
      states.set(s.state, (states.get(s.state) || 0) + 1);
      rate += s.recent.rate;
      errors += s.recent.errors;
      pending += s.pending;
    }
    $("total-states").replaceChildren(...[...states.entries()].sort().map(([st, n]) =>
      el("span", { class: "badge state " + stateClass(st) }, st + " " + n)));
    $("total-rate").textContent = fmtRate(rate);
    $("total-errors").textContent = errors;
    $("total-pending").textContent = pending;
  }

  function stateClass(state) {
    return "st-" + (STATE_CLASS[state] || "off");
  }

  function fmtRate(r) {
    return r >= 100 ? r.toFixed(0) : r >= 1 ? r.toFixed(1) : r.toFixed(2);
  }

  function fmtMs(ms) {
    if (!ms) return "–";
    return ms >= 1000 ? (ms / 1000).toFixed(2) + " s" : ms >= 10 ? ms.toFixed(0) + " ms" : ms.toFixed(1) + " ms";
  }

  function fmtPct(x) {
    return (x * 100).toFixed(x > 0 && x < 0.01 ? 2 : 1) + "%";
  }

  // series returns the window's steps, oldest first, each the point of
  // that step or null when the server had none.
  function series(s) {
    const n = Math.max(1, Math.round(view.windowMs / view.stepMs));
    const last = Math.floor(view.time / view.stepMs) * view.stepMs;
    const out = new Array(n);
    for (let i = 0; i < n; i++) out[i] = s.points.get(last - (n - 1 - i) * view.stepMs) || null;
    return out;
  }

  function card(s) {
    const c = el("article", { class: "srv" + (s.name === selected ? " selected" : ""), "data-server": s.name, tabindex: "0" });
    const head = el("div", { class: "srv-head" });
    head.append(el("h3", { class: "name" }, s.name));
    head.append(el("span", { class: "badge state " + stateClass(s.state) }, s.state));
    c.append(head);
    const fig = el("p", { class: "figures" });
    fig.append(figure("calls/s", fmtRate(s.recent.rate)), figure("errors", fmtPct(s.recent.errorRate)),
      figure("p50", fmtMs(s.recent.p50)), figure("p99", fmtMs(s.recent.p99)),
      figure("pending", s.pending), figure("restarts", s.restarts));
    c.append(fig);
    const pts = series(s);
    c.append(scaled(timeline(s, 300, 10), ""));
    c.append(scaled(latencyChart(s.name, pts, 300, 36), "p99 " + fmtMs(maxOf(pts, "p99"))));
    c.append(scaled(rateChart(s.name, pts, 300, 28), fmtRate(maxOf(pts, "rate")) + "/s"));
    c.append(scaled(pendingChart(s.name, pts, 300, 16), maxOf(pts, "pending") + " pending"));
    c.append(timeAxis());
    if (s.lastError) c.append(el("p", { class: "err last-error" }, s.lastError));
    const open = () => { select(s.name); };
    c.addEventListener("click", open);
    c.addEventListener("keydown", (e) => { if (e.key === "Enter" || e.key === " ") { e.preventDefault(); open(); } });
    return c;
  }

  // maxOf is the highest value of a field over the points: the top of its
  // chart's y scale.
  function maxOf(pts, field) {
    return Math.max(0, ...pts.map((p) => (p ? Number(p[field]) || 0 : 0)));
  }

  // scaled puts a chart beside its y scale: the value its top line stands
  // for, with its unit (the bottom is 0).
  function scaled(chart, top) {
    const row = el("div", { class: "chart-row" });
    row.append(chart, el("span", { class: "axis y", title: "the top of the chart; its bottom is 0" }, top));
    return row;
  }

  // timeAxis labels the charts' x axis: the window's start, its middle
  // and now, the charts' right edge.
  function timeAxis() {
    const axis = el("div", { class: "axis time", "aria-hidden": "true" });
    const ticks = el("span", { class: "ticks" });
    ticks.append(el("span", {}, "\u2212" + fmtSpan(view.windowMs)), el("span", {}, "\u2212" + fmtSpan(view.windowMs / 2)),
      el("span", {}, "now"));
    axis.append(ticks, el("span", { class: "axis y" }, ""));
    return axis;
  }

  function fmtSpan(ms) {
    const min = ms / 60000;
    if (min >= 120) return +(min / 60).toFixed(1) + " h";
    if (min >= 1) return +min.toFixed(1) + " min";
    return +(ms / 1000).toFixed(0) + " s";
  }

  function figure(label, value) {
    const f = el("span", { class: "fig" });
    f.append(el("span", { class: "label" }, label + " "), el("strong", {}, value));
    return f;
  }

  // timeline draws the server's states over the window as coloured bands,
  // each with its state and start as a tooltip.
  function timeline(s, w, h) {
    const from = view.time - view.windowMs;
    const box = svg("svg", { class: "chart timeline", viewBox: `0 0 ${w} ${h}`, preserveAspectRatio: "none",
      role: "img", "aria-label": s.name + " state over the last hour" });
    box.append(svg("rect", { x: 0, y: 0, width: w, height: h, class: "none" }));
    const tl = s.timeline || [];
    const x = (t) => Math.max(0, Math.min(w, ((t - from) / view.windowMs) * w));
    for (let i = 0; i < tl.length; i++) {
      const t0 = Math.max(Date.parse(tl[i].time), from);
      const t1 = i + 1 < tl.length ? Date.parse(tl[i + 1].time) : view.time;
      if (t1 <= from) continue;
      const x0 = x(t0), x1 = Math.max(x(t1), x0 + 0.75); // a blip stays visible
      const r = svg("rect", { x: x0, y: 0, width: x1 - x0, height: h, class: "seg " + stateClass(tl[i].state), "data-state": tl[i].state });
      r.append(svg("title", {}, tl[i].state + " from " + new Date(Date.parse(tl[i].time)).toLocaleTimeString() +
        (tl[i].error ? ": " + tl[i].error : "")));
      box.append(r);
    }
    return box;
  }

  // line is an SVG polyline of values (null: no data, drawn as a gap) scaled
  // to max over the box.
  function lines(box, pts, pick, max, w, h, cls) {
    const n = pts.length;
    let run = [];
    const flush = () => {
      if (run.length > 0) box.append(svg("polyline", { class: cls, points: run.join(" ") }));
      run = [];
    };
    pts.forEach((p, i) => {
      if (!p || !p.calls && pick !== "pending") {
        flush();
        return;
      }
      const v = Number(p[pick]) || 0;
      const xx = n === 1 ? w : (i / (n - 1)) * w;
      const yy = h - 1 - (max > 0 ? (v / max) * (h - 2) : 0);
      run.push(xx.toFixed(1) + "," + yy.toFixed(1));
    });
    flush();
  }

  function chartBox(cls, label, w, h) {
    return svg("svg", { class: "chart " + cls, viewBox: `0 0 ${w} ${h}`, preserveAspectRatio: "none", role: "img", "aria-label": label });
  }

  function latencyChart(name, pts, w, h) {
    const max = Math.max(0, ...pts.map((p) => (p ? p.p99 : 0)));
    const box = chartBox("latency", name + " latency p50 and p99, highest " + fmtMs(max), w, h);
    box.append(svg("title", {}, "latency: p99 highest " + fmtMs(max)));
    lines(box, pts, "p99", max, w, h, "p99");
    lines(box, pts, "p50", max, w, h, "p50");
    return box;
  }

  function rateChart(name, pts, w, h) {
    const max = Math.max(0, ...pts.map((p) => (p ? p.rate : 0)));
    const box = chartBox("rate", name + " calls per second, highest " + fmtRate(max) + ", and error rate", w, h);
    box.append(svg("title", {}, "calls/s: highest " + fmtRate(max) + "; errors in red"));
    const n = pts.length;
    const bw = w / n;
    pts.forEach((p, i) => {
      if (!p || !p.calls) return;
      const bh = Math.max(1, max > 0 ? (p.rate / max) * (h - 1) : 0);
      box.append(svg("rect", { class: "bar", x: (i * bw).toFixed(2), y: (h - bh).toFixed(2), width: Math.max(bw, 0.8).toFixed(2), height: bh.toFixed(2) }));
      if (p.errorRate > 0) {
        const eh = Math.max(1, bh * p.errorRate);
        box.append(svg("rect", { class: "errbar", x: (i * bw).toFixed(2), y: (h - eh).toFixed(2), width: Math.max(bw, 0.8).toFixed(2), height: eh.toFixed(2) }));
      }
    });
    return box;
  }

  function pendingChart(name, pts, w, h) {
    const max = Math.max(0, ...pts.map((p) => (p ? p.pending : 0)));
    const box = chartBox("pending", name + " pending calls, most " + max, w, h);
    box.append(svg("title", {}, "pending calls: most " + max));
    lines(box, pts, "pending", max, w, h, "pending");
    return box;
  }

  // --- the detail panel ------------------------------------------------

  function select(name) {
    selected = name;
    detailSeen = "";
    $("detail-error").textContent = "";
    render();
    $("detail").scrollIntoView({ block: "nearest" });
  }

  function renderDetail() {
    const s = view.servers.get(selected);
    $("detail").hidden = !s;
    if (!s) return;
    $("detail-name").textContent = s.name;
    const badge = $("detail-state");
    badge.textContent = s.state;
    badge.className = "badge state " + stateClass(s.state);
    $("detail-figures").textContent = `${s.transport} · pid ${s.pid || "–"} · ${s.tools} tools · restarts ${s.restarts} · ` +
      `hour: ${s.hour.calls} calls, ${fmtPct(s.hour.errorRate)} errors, p50 ${fmtMs(s.hour.p50)}, p99 ${fmtMs(s.hour.p99)}`;
    $("detail-lasterror").textContent = s.lastError || "";
    $("detail-restart").disabled = !s.enabled;
    $("detail-disable").hidden = !s.enabled;
    $("detail-enable").hidden = s.enabled;
    const pts = series(s);
    $("detail-charts").replaceChildren(
      labelled("State", timeline(s, 720, 16), ""),
      labelled("Latency (p99, p50)", latencyChart(s.name, pts, 720, 80), fmtMs(maxOf(pts, "p99"))),
      labelled("Calls/s and errors", rateChart(s.name, pts, 720, 60), fmtRate(maxOf(pts, "rate")) + "/s"),
      labelled("Pending calls", pendingChart(s.name, pts, 720, 40), String(maxOf(pts, "pending"))));
    $("detail-events").replaceChildren(...(s.events || []).slice().reverse().map((ev) => {
      const li = el("li", { class: "event" });
      li.append(el("time", { datetime: ev.time }, new Date(ev.time).toLocaleTimeString()), " ",
        el("span", { class: "badge state " + stateClass(ev.state) }, ev.state));
      if (ev.error) li.append(" ", el("span", { class: "err" }, ev.error));
      return li;
    }));
    const seen = s.state + "/" + s.restarts + "/" + s.pid;
    if (seen !== detailSeen) {
      detailSeen = seen;
      readLog(s.name);
    }
  }

  function labelled(text, chart, top) {
    const f = el("figure", { class: "big" });
    f.append(el("figcaption", {}, text), scaled(chart, top), timeAxis());
    return f;
  }

  async function readLog(name) {
    try {
      const data = await api("GET", "/v1/servers/" + encodeURIComponent(name) + "/log?lines=" + LOG_LINES, undefined, session);
      if (name === selected) $("detail-log").textContent = (data.lines || []).join("\n") || "(no lines yet)";
    } catch (e) {
      if (!(e instanceof Unauthorized) && name === selected) $("detail-log").textContent = "could not read the log: " + e.message;
    }
  }

  // act runs one control on the selected server; the stream shows what
  // follows.
  async function act(action, button) {
    const name = selected;
    if (!name) return;
    $("detail-error").textContent = "";
    button.disabled = true;
    try {
      await api("POST", "/v1/servers/" + encodeURIComponent(name) + "/" + action, undefined, session);
    } catch (e) {
      if (!(e instanceof Unauthorized)) $("detail-error").textContent = action + " " + name + ": " + e.message;
    } finally {
      button.disabled = false;
      render();
    }
  }

  // --- wiring ----------------------------------------------------------

  document.addEventListener("DOMContentLoaded", () => {
    $("sort").addEventListener("change", render);
    $("filter").addEventListener("input", render);
    $("detail-close").addEventListener("click", () => { selected = ""; render(); });
    $("detail-restart").addEventListener("click", (e) => act("restart", e.currentTarget));
    $("detail-disable").addEventListener("click", (e) => act("disable", e.currentTarget));
    $("detail-enable").addEventListener("click", (e) => act("enable", e.currentTarget));
  });
})();
