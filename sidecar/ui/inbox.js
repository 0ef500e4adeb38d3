// The mcpvisor inbox page: server status, recent events, pending
// elicitations, host-tool calls waiting for approval and tool definitions
// no person approved yet, answered in place. Plain JavaScript, no build
// step.
//
// Every API call sends the bearer token, taken from the URL fragment
// (#token=...) or the login form and kept in sessionStorage. Everything a
// server sent is rendered with textContent: never as HTML.
"use strict";

(() => {
  const EVENTS_KEEP = 20;
  const RETRY_STREAM = 2000;

  const { $, el, sleep, Unauthorized } = mcpvisorUI;
  const { api, readSSE, setConn } = mcpvisorUI.session(start);

  // start runs the page's loops for a token, until signal aborts.
  function start(signal) {
    follow(() => "/v1/inbox/stream", onInbox, signal);
    events(signal);
  }

  // follow reads the SSE stream at path() and hands each event to onEvent,
  // reconnecting after RETRY_STREAM when it ends or fails, until signal
  // aborts. A 401 stops it (the session aborts the signal). EventSource
  // cannot send the Authorization header, so the stream is read with fetch.
  async function follow(path, onEvent, signal) {
    while (!signal.aborted) {
      try {
        await readSSE(path(), onEvent, signal);
      } catch (e) {
        if (e instanceof Unauthorized || signal.aborted) return;
        setConn("reconnecting: " + e.message, "down");
      }
      await sleep(RETRY_STREAM, signal);
    }
  }

  // onInbox takes one snapshot of the servers, the pending elicitations,
  // the pending approvals and the tool definitions awaiting review.
  function onInbox(name, data) {
    if (name !== "inbox") return;
    setConn("live", "live");
    lastServers = data.servers || [];
    renderServers(lastServers);
    renderInbox(data.elicitations || []);
    renderApprovals(data.approvals || []);
    renderToolReviews(data.toolReviews || []);
    const changes = data.transitions || [];
    for (const tr of changes) addTransition(tr);
    if (changes.length > 0) renderEvents();
  }

  // --- servers ---------------------------------------------------------

  function renderServers(servers) {
    const body = $("servers").tBodies[0];
    const rows = servers.map((s) => {
      const tr = el("tr");
      const name = el("td");
      name.append(el("strong", {}, s.name));
      if (s.friendlyName && s.friendlyName !== s.name) name.append(" ", el("span", { class: "empty" }, s.friendlyName));
      tr.append(name);
      tr.append(el("td", { class: "state state-" + String(s.state).replace(/[^a-z_-]/g, "") }, s.state));
      tr.append(el("td", {}, s.restarts));
      tr.append(el("td", {}, s.tools));
      tr.append(el("td", { class: "err" }, s.lastError || ""));
      tr.append(authCell(s));
      return tr;
    });
    body.replaceChildren(...rows);
  }

  // --- sign-in ---------------------------------------------------------

  // signIns keeps, by server, what the page knows of a sign-in it started
  // (the URL, when the browser blocked the new tab; an error), since every
  // snapshot rebuilds the table.
  const signIns = new Map();
  let lastServers = [];

  // authCell shows a remote server's OAuth state: a Sign in button while
  // it needs one, who signed it in (issuer, scopes, expiry) once it is, and
  // nothing for a server without OAuth.
  function authCell(s) {
    const td = el("td", { class: "auth" });
    const a = s.auth;
    if (!a) return td;
    let mine = signIns.get(s.name);
    if (mine && mine.action === "sign-in" && !mine.busy && a.signedIn && s.state !== "needs_auth") {
      signIns.delete(s.name); // done: the link or error of the attempt is stale
      mine = undefined;
    }
    if (a.signedIn) {
      const who = el("p", { class: "signed-in" });
      who.append("Signed in");
      if (a.issuer) who.append(" at ", el("span", { class: "issuer" }, a.issuer));
      td.append(who);
      if (a.scopes && a.scopes.length > 0) td.append(el("p", { class: "scopes" }, "Scopes: " + a.scopes.join(" ")));
      if (a.expiry) {
        const exp = el("p", { class: "expiry" }, "Expires ");
        exp.append(el("time", { datetime: a.expiry }, new Date(a.expiry).toLocaleString()));
        td.append(exp);
      }
    }
    if (a.error) td.append(el("p", { class: "auth-error err" }, a.error));
    const interactive = !a.grant || a.grant === "authorization_code";
    const needs = s.state === "needs_auth" || (a.needsAuth && !a.signedIn);
    if (interactive && needs) {
      const btn = el("button", { type: "button", class: "sign-in" }, "Sign in");
      btn.disabled = Boolean(mine && mine.busy);
      btn.addEventListener("click", () => signIn(s.name));
      td.append(btn);
      // For a person away from the host: a code to enter on any device,
      // where the authorization server offers it.
      const code = el("button", { type: "button", class: "sign-in-code" }, "Sign in with a code");
      code.disabled = btn.disabled;
      code.addEventListener("click", () => signInWithCode(s.name));
      td.append(code);
      if (a.signInPending) td.append(el("p", { class: "pending" }, "Waiting for the sign-in to finish…"));
    }
    if (a.signedIn) {
      const out = el("button", { type: "button", class: "sign-out" }, "Sign out");
      out.disabled = Boolean(mine && mine.busy);
      out.addEventListener("click", () => signOut(s.name));
      td.append(out);
    }
    if (mine && mine.url) {
      const p = el("p", { class: "sign-in-link" }, "The browser blocked the new tab: ");
      p.append(el("a", { class: "sign-in-url", href: mine.url, target: "_blank", rel: "noopener noreferrer" }, "open the sign-in page"));
      td.append(p);
    }
    if (mine && mine.device && a.signInPending) {
      const d = mine.device;
      const p = el("p", { class: "device-code" }, "Open ");
      p.append(el("a", { class: "verification-uri", href: d.uri, target: "_blank", rel: "noopener noreferrer" }, d.uri),
        " on any device and enter ", el("code", { class: "user-code" }, d.userCode));
      td.append(p);
    }
    if (mine && mine.paste && a.signInPending) {
      // The host's loopback redirect cannot load in a browser on another
      // machine: the person pastes the address it ended on.
      const p = el("p", { class: "paste-back" }, "Browser on another machine? When the page after signing in fails to load, ");
      const b = el("button", { type: "button", class: "paste-redirect" }, "paste its address");
      b.addEventListener("click", () => pasteRedirect(s.name));
      p.append(b);
      td.append(p);
    }
    if (mine && mine.error) td.append(el("p", { class: "error", role: "alert" }, mine.error));
    return td;
  }

  // loopbackURL reports whether u is on a loopback host: a redirect there
  // reaches the host only from a browser on the host's machine.
  function loopbackURL(u) {
    try {
      const h = new URL(u).hostname;
      return h === "localhost" || h === "127.0.0.1" || h === "[::1]";
    } catch (_) {
      return false;
    }
  }

  // signInWithCode starts a sign-in with a code and shows the code and
  // where to enter it; the host polls the authorization server and the
  // inbox stream shows the server signed in.
  async function signInWithCode(name) {
    signIns.set(name, { action: "sign-in", busy: true });
    renderServers(lastServers);
    const st = { action: "sign-in" };
    try {
      const r = await api("POST", "/v1/servers/" + encodeURIComponent(name) + "/auth?method=device");
      const d = r && r.device;
      const uri = webURL(d && (d.verificationUriComplete || d.verificationUri));
      if (!uri || !d.userCode) throw new Error("the authorization server gave no usable code");
      st.device = { uri, userCode: d.userCode };
    } catch (e) {
      if (e instanceof Unauthorized) return;
      st.error = "Sign-in failed: " + e.message;
    }
    signIns.set(name, st);
    renderServers(lastServers);
  }

  // pasteRedirect sends the address the person's browser ended on to the
  // host, which checks its state and redeems its code.
  async function pasteRedirect(name) {
    const addr = window.prompt("Paste the whole address the browser ended on after signing in:");
    if (!addr) return;
    const st = signIns.get(name) || { action: "sign-in" };
    try {
      await api("POST", "/v1/servers/" + encodeURIComponent(name) + "/auth/redirect", { url: addr.trim() });
      signIns.delete(name);
    } catch (e) {
      if (e instanceof Unauthorized) return;
      st.error = "Sign-in failed: " + e.message;
      signIns.set(name, st);
    }
    renderServers(lastServers);
  }

  // webURL is u when it is an http or https URL, else "": the URL comes
  // from the authorization server's metadata, and a javascript: one must
  // never be opened or linked.
  function webURL(u) {
    try {
      const p = new URL(u);
      return p.protocol === "https:" || p.protocol === "http:" ? p.href : "";
    } catch (_) {
      return "";
    }
  }

  // signIn asks the host for the server's authorization URL and opens it
  // in a new tab. The host receives the redirect on its own listener and
  // starts the server, which the inbox stream then shows.
  async function signIn(name) {
    signIns.set(name, { action: "sign-in", busy: true });
    renderServers(lastServers);
    const st = { action: "sign-in" };
    try {
      // A page not on loopback is on another machine than the host's
      // loopback listener: its browser goes to the authorization server
      // directly (method=paste), and the person pastes back the address
      // the redirect fails to load there.
      const away = !loopbackURL(window.location.href);
      const r = await api("POST", "/v1/servers/" + encodeURIComponent(name) + "/auth" + (away ? "?method=paste" : ""));
      st.paste = away && loopbackURL(r && r.redirectUri);
      const u = webURL(r && (st.paste && r.authorizationUrl ? r.authorizationUrl : r.url));
      if (!u) throw new Error("the authorization server gave no usable sign-in URL");
      const win = window.open(u, "_blank");
      if (win) win.opener = null; // the sign-in page gets no handle on this one
      else st.url = u;
    } catch (e) {
      if (e instanceof Unauthorized) return;
      st.error = "Sign-in failed: " + e.message;
    }
    signIns.set(name, st);
    renderServers(lastServers);
  }

  async function signOut(name) {
    signIns.set(name, { action: "sign-out", busy: true });
    renderServers(lastServers);
    const st = { action: "sign-out" };
    try {
      await api("DELETE", "/v1/servers/" + encodeURIComponent(name) + "/auth");
    } catch (e) {
      if (e instanceof Unauthorized) return;
      st.error = "Sign-out failed: " + e.message;
    }
    signIns.set(name, st);
    renderServers(lastServers);
  }

  // --- events ----------------------------------------------------------

  // shown holds the journal's events and the servers' lifecycle changes
  // (from the inbox stream), newest first, at most EVENTS_KEEP: a server
  // crashing in a loop shows here as it loops.
  const shown = [];
  let lastEvent = 0;
  let transitionSeq = 0;

  function keep(item) {
    shown.unshift(item);
    shown.sort((a, b) => b.at - a.at || b.seq - a.seq);
    shown.length = Math.min(shown.length, EVENTS_KEEP);
  }

  function addEvent(ev) {
    if (ev.id <= lastEvent && shown.some((e) => e.ev && e.ev.id === ev.id)) return;
    lastEvent = Math.max(lastEvent, ev.id);
    keep({ ev, at: Date.parse(ev.received) || 0, seq: ev.id });
  }

  function addTransition(tr) {
    keep({ tr, at: Date.parse(tr.time) || 0, seq: ++transitionSeq });
  }

  function renderEvents() {
    $("events-empty").hidden = shown.length > 0;
    $("events").replaceChildren(...shown.map((item) => (item.ev ? eventItem(item.ev) : transitionItem(item.tr))));
  }

  function timeSpan(iso) {
    const when = iso ? new Date(iso) : null;
    return el("span", { class: "time", title: iso || "" }, when ? when.toLocaleTimeString() : "");
  }

  function eventItem(ev) {
    const li = el("li", { class: "event" });
    li.append(timeSpan(ev.received));
    li.append(el("strong", { class: "server" }, ev.server));
    li.append(el("span", { class: "method" }, ev.method));
    li.append(el("span", { class: "status" }, ev.status));
    if (ev.params !== undefined) {
      let p = JSON.stringify(ev.params);
      if (p.length > 300) p = p.slice(0, 300) + "…";
      li.append(el("span", { class: "params" }, p));
    }
    return li;
  }

  // transitionItem shows a server's lifecycle change: its new state and,
  // after a crash, why.
  function transitionItem(tr) {
    const state = String(tr.state).replace(/[^a-z_-]/g, "");
    const li = el("li", { class: "lifecycle", "data-server": tr.server, "data-state": state });
    li.append(timeSpan(tr.time));
    li.append(el("strong", { class: "server" }, tr.server));
    li.append(el("span", { class: "method" }, "lifecycle"));
    li.append(el("span", { class: "status state state-" + state }, tr.state));
    let note = tr.error || "";
    if (tr.skipped) note = (note ? note + " · " : "") + tr.skipped + " earlier changes not shown";
    if (note) li.append(el("span", { class: "params" }, note));
    return li;
  }

  // events lists the newest journaled events, then follows the event
  // stream from just after the last one shown.
  async function events(signal) {
    try {
      const data = await api("GET", "/v1/events?newest=1&limit=" + EVENTS_KEEP, undefined, signal);
      for (const ev of data.events || []) addEvent(ev);
      renderEvents();
    } catch (e) {
      if (e instanceof Unauthorized || signal.aborted) return;
    }
    // Without after= the stream starts now; with it, right after what is shown.
    const path = () => "/v1/events/stream" + (lastEvent > 0 ? "?after=" + lastEvent : "");
    await follow(path, (name, ev) => {
      if (name !== "event") return;
      addEvent(ev);
      renderEvents();
    }, signal);
  }

  // --- elicitations ----------------------------------------------------

  const cards = new Map(); // id -> card element; kept so typing survives a refresh

  function renderInbox(list) {
    const live = new Set(list.map((r) => r.id));
    for (const [id, card] of cards) {
      if (!live.has(id)) {
        card.remove();
        cards.delete(id);
      }
    }
    for (const req of list) {
      if (!cards.has(req.id)) {
        const card = renderRequest(req);
        cards.set(req.id, card);
        $("inbox").append(card);
      }
    }
    $("inbox-count").textContent = String(list.length);
    $("inbox-empty").hidden = list.length > 0;
  }

  function renderRequest(req) {
    const card = el("form", { class: "card elicitation", "data-id": req.id, novalidate: false });
    const from = el("p", { class: "from" });
    from.append("From ", el("strong", { class: "server" }, req.server));
    if (req.deadline) from.append(" · answer by " + new Date(req.deadline).toLocaleTimeString());
    card.append(from);
    card.append(askedBy(req));
    card.append(el("p", { class: "message" }, req.message));

    let collect = () => undefined;
    if (req.mode === "url") {
      card.append(urlBlock(req.url));
    } else {
      const inputs = (req.fields || []).map((f, i) => fieldInput(card, req.id, f, i));
      collect = () => {
        const content = {};
        for (const read of inputs) read(content);
        return content;
      };
    }

    const err = el("p", { class: "error", role: "alert" });
    const actions = el("div", { class: "actions" });
    const accept = el("button", { type: "submit", class: "accept" }, req.mode === "url" ? "Accept (opened it)" : "Accept");
    const decline = el("button", { type: "button", class: "decline" }, "Decline");
    const cancel = el("button", { type: "button", class: "cancel" }, "Cancel");
    actions.append(accept, decline, cancel);
    card.append(actions, err);

    const send = async (action) => {
      err.textContent = "";
      const body = { action };
      if (action === "accept" && req.mode !== "url") body.content = collect();
      for (const b of [accept, decline, cancel]) b.disabled = true;
      try {
        await api("POST", "/v1/elicitations/" + encodeURIComponent(req.id), body);
        card.remove();
        cards.delete(req.id);
        $("inbox-count").textContent = String(cards.size);
        $("inbox-empty").hidden = cards.size > 0;
      } catch (e) {
        if (e instanceof Unauthorized) return;
        err.textContent = e.message;
        for (const b of [accept, decline, cancel]) b.disabled = false;
      }
    };
    card.addEventListener("submit", (e) => {
      e.preventDefault();
      send("accept");
    });
    decline.addEventListener("click", () => send("decline"));
    cancel.addEventListener("click", () => send("cancel"));
    return card;
  }

  // askedBy says which call waits for the answer, as far as the host can
  // tell: the tool (mcp__server__tool), the call's id (as the history
  // keeps it) and the session, stack frame and client that made it.
  function askedBy(req) {
    const p = el("p", { class: "caller" });
    if (!req.tool && !req.callId) {
      p.append(el("span", { class: "empty" }, "The host cannot tell which call this is for (several are in flight)."));
      return p;
    }
    p.append("For ", visible(el("code", { class: "tool" }), req.tool || "a call"));
    if (req.callId) p.append(" · call ", el("code", { class: "call-id" }, req.callId));
    if (req.session) {
      p.append(" · session ", el("strong", { class: "session" }, req.session));
      if (req.stack) p.append(" (stack frame ", el("strong", { class: "stack" }, req.stack), ")");
    } else {
      p.append(" · ", el("span", { class: "session" }, "the host's own call (no session)"));
    }
    if (req.client) p.append(" · client ", el("strong", { class: "client" }, req.client));
    return p;
  }

  // urlBlock shows the URL and its host as text, not a link: the person
  // reads where it goes before copying it.
  function urlBlock(u) {
    const box = el("div", { class: "url-request" });
    let host = "";
    try {
      host = new URL(u).host;
    } catch (_) {
      host = "(not a valid URL)";
    }
    const h = el("p");
    h.append("Host: ", el("span", { class: "host" }, host));
    box.append(h, el("code", { class: "url" }, u || ""));
    return box;
  }

  // fieldInput adds a field's input to form and returns a reader that puts
  // its value into content (an empty optional field is left out).
  function fieldInput(form, reqID, f, i) {
    const id = "f-" + reqID.replace(/[^A-Za-z0-9_-]/g, "_") + "-" + i;
    const wrap = el("div", { class: "field", "data-field": f.name });
    const label = el("label", { for: id }, f.title || f.name);
    if (f.required) label.append(el("span", { class: "req", "aria-hidden": "true" }, "*"));
    if (f.sensitive) label.append(el("span", { class: "sens" }, "sensitive"));
    const desc = f.description ? el("span", { class: "desc" }, f.description) : null;
    const def = f.sensitive ? undefined : f["default"]; // the API never sends a secret's default
    let input;
    let read;

    if (f.options && f.options.length > 0) {
      input = el("select", { id, name: f.name, required: f.required, multiple: f.multi });
      if (!f.multi) input.append(el("option", { value: "" }, f.required ? "Choose…" : "(none)"));
      const chosen = new Set(Array.isArray(def) ? def.map(String) : def !== undefined ? [String(def)] : []);
      for (const o of f.options) {
        const opt = el("option", { value: o.value }, o.title || o.value);
        opt.selected = chosen.has(o.value);
        input.append(opt);
      }
      if (f.multi) input.size = Math.min(f.options.length, 6);
      read = (c) => {
        if (f.multi) {
          const vals = Array.from(input.selectedOptions, (o) => o.value);
          if (vals.length > 0 || f.required) c[f.name] = vals;
        } else if (input.value !== "") {
          c[f.name] = input.value;
        }
      };
    } else if (f.type === "boolean") {
      wrap.classList.add("check");
      input = el("input", { id, name: f.name, type: "checkbox" });
      input.checked = def === true;
      read = (c) => { c[f.name] = input.checked; };
      wrap.append(input, " ", label);
      if (desc) wrap.append(desc);
      form.append(wrap);
      return read;
    } else if (f.type === "number" || f.type === "integer") {
      input = el("input", { id, name: f.name, type: "number", step: f.type === "integer" ? "1" : "any", required: f.required });
      if (typeof def === "number") input.value = String(def);
      read = (c) => {
        if (input.value !== "") c[f.name] = Number(input.value);
      };
    } else {
      let type = "text";
      if (f.sensitive) type = "password";
      else if (f.format === "email") type = "email";
      else if (f.format === "uri") type = "url";
      else if (f.format === "date") type = "date";
      input = el("input", {
        id, name: f.name, type, required: f.required,
        autocomplete: f.sensitive ? "new-password" : "off", spellcheck: "false",
      });
      if (typeof def === "string") input.value = def;
      read = (c) => {
        if (input.value !== "" || f.required) c[f.name] = input.value;
      };
    }
    wrap.append(label);
    if (desc) wrap.append(desc);
    wrap.append(input);
    form.append(wrap);
    return read;
  }

  // --- approvals -------------------------------------------------------

  const approvalCards = new Map(); // id -> card element; kept so a reason being typed survives a refresh

  function renderApprovals(list) {
    const live = new Set(list.map((r) => r.id));
    for (const [id, card] of approvalCards) {
      if (!live.has(id)) {
        card.remove();
        approvalCards.delete(id);
      }
    }
    for (const req of list) {
      if (!approvalCards.has(req.id)) {
        const card = renderApproval(req);
        approvalCards.set(req.id, card);
        $("approvals").append(card);
      }
    }
    countApprovals();
  }

  function countApprovals() {
    $("approvals-count").textContent = String(approvalCards.size);
    $("approvals-empty").hidden = approvalCards.size > 0;
  }

  // renderApproval shows what the call would do, never its arguments (the
  // API does not send them): the tool, who asks, the summary and, for a
  // stdio server, the command line one argument per item, as it will run.
  function renderApproval(req) {
    const card = el("form", { class: "card approval", "data-id": req.id });
    const from = el("p", { class: "from" });
    if (req.session) {
      from.append("Session ", el("strong", { class: "session" }, req.session));
      if (req.stack) from.append(" (stack frame ", el("strong", { class: "stack" }, req.stack), ")");
    } else {
      from.append("A call without a session");
    }
    from.append(" wants to run ", el("strong", { class: "tool" }, req.tool));
    if (req.destructive) from.append(" ", el("span", { class: "badge destructive", title: "irreversible" }, "destructive"));
    if (req.deadline) {
      from.append(" · decide by ", el("time", { class: "deadline", datetime: req.deadline },
        new Date(req.deadline).toLocaleTimeString()));
    }
    card.append(from);
    card.append(visible(el("p", { class: "summary" }), req.summary));

    const argv = req.command || [];
    if (argv.length > 0) {
      card.append(el("p", { class: "label" }, "Command line, one argument per line, exactly as it will run:"));
      const list = el("ol", { class: "command", start: "0" });
      for (const arg of argv) {
        const code = el("code");
        if (arg === "") code.append(el("span", { class: "esc" }, "(empty)"));
        else visible(code, arg);
        const li = el("li");
        li.append(code);
        list.append(li);
      }
      card.append(list);
    }

    const reasonID = "reason-" + String(req.id).replace(/[^A-Za-z0-9_-]/g, "_");
    const field = el("div", { class: "field" });
    const reason = el("input", { id: reasonID, name: "reason", type: "text", autocomplete: "off", maxlength: "500" });
    field.append(el("label", { for: reasonID }, "Reason for a denial (optional; the model reads it)"), reason);
    card.append(field);

    const err = el("p", { class: "error", role: "alert" });
    const actions = el("div", { class: "actions" });
    const allow = el("button", { type: "button", class: "allow" }, "Allow");
    // Deny is the form's submit button: Enter in the reason field denies.
    const deny = el("button", { type: "submit", class: "deny" }, "Deny");
    actions.append(allow, deny);
    card.append(actions, err);

    const send = async (decision) => {
      err.textContent = "";
      const body = { decision };
      if (decision === "deny" && reason.value.trim() !== "") body.reason = reason.value.trim();
      for (const b of [allow, deny]) b.disabled = true;
      try {
        await api("POST", "/v1/approvals/" + encodeURIComponent(req.id), body);
        card.remove();
        approvalCards.delete(req.id);
        countApprovals();
      } catch (e) {
        if (e instanceof Unauthorized) return;
        err.textContent = e.message;
        for (const b of [allow, deny]) b.disabled = false;
      }
    };
    card.addEventListener("submit", (e) => {
      e.preventDefault();
      send("deny");
    });
    allow.addEventListener("click", () => send("allow"));
    return card;
  }

  // --- tool definitions ------------------------------------------------

  // reviewCards maps a review's key (reviewKey) to its card; a card is
  // rebuilt only when what it shows changed, so an error shown on it
  // survives the next snapshot.
  const reviewCards = new Map();

  // reviewKey is what a card shows that a snapshot may change: another
  // hash is another definition; held and rejected change its badges and
  // buttons.
  function reviewKey(rv) {
    return [rv.server, rv.tool, rv.hash, Boolean(rv.held), Boolean(rv.rejected)].join("\u0000");
  }

  function renderToolReviews(list) {
    const keys = list.map(reviewKey);
    const live = new Set(keys);
    for (const [key, card] of reviewCards) {
      if (!live.has(key)) {
        card.remove();
        reviewCards.delete(key);
      }
    }
    const ordered = list.map((rv, i) => {
      let card = reviewCards.get(keys[i]);
      if (!card) {
        card = renderToolReview(rv, keys[i]);
        reviewCards.set(keys[i], card);
      }
      return card;
    });
    // In the host's order (server, then tool); untouched when it holds.
    const box = $("tool-reviews");
    if (ordered.length !== box.children.length || ordered.some((c, i) => box.children[i] !== c)) {
      box.replaceChildren(...ordered);
    }
    countToolReviews();
  }

  function countToolReviews() {
    $("tool-reviews-count").textContent = String(reviewCards.size);
    $("tool-reviews-empty").hidden = reviewCards.size > 0;
  }

  // renderToolReview shows one definition as the host pins it: for a
  // changed tool the diff from the approved one, for a new tool its
  // description and schemas, what the checks found, and Approve / Reject
  // for this very definition (by hash), so what is decided is what was
  // read. Every text is the server's: shown as text, invisible characters
  // made visible.
  function renderToolReview(rv, key) {
    const changed = rv.state === "changed";
    const card = el("article", {
      class: "card tool-review" + (rv.rejected ? " rejected" : ""), "data-server": rv.server, "data-tool": rv.tool,
      "data-state": changed ? "changed" : "new", "data-hash": rv.hash,
    });
    const from = el("p", { class: "from" });
    from.append("Server ", visible(el("strong", { class: "server" }), rv.server), " lists ",
      visible(el("strong", { class: "tool" }), rv.tool), " ");
    from.append(el("span", { class: "badge kind-" + (changed ? "changed" : "new"),
      title: changed ? "differs from the definition approved before" : "no definition of this tool was approved" },
    changed ? "changed" : "new"));
    if (rv.held) {
      from.append(" ", el("span", { class: "badge held", title: "withheld from every session until approved" }, "held"));
    } else {
      from.append(" ", el("span", { class: "badge exposed", title: "exposed to models while it waits (warn policy)" }, "exposed"));
    }
    if (rv.rejected) {
      from.append(" ", el("span", { class: "badge rejected", title: "a person rejected this definition: it stays withheld" }, "rejected"));
    }
    if (rv.since) {
      from.append(" · listed since ", el("time", { class: "since", datetime: rv.since }, new Date(rv.since).toLocaleString()));
    }
    card.append(from);
    const name = el("p", { class: "name" }, "Name for models: ");
    name.append(visible(el("code"), rv.name));
    card.append(name);

    const findings = rv.findings || [];
    if (findings.length > 0) {
      card.append(el("p", { class: "label" }, "What the description checks found:"));
      const ul = el("ul", { class: "findings" });
      for (const f of findings) {
        const sev = String(f.severity || "").replace(/[^a-z]/g, "");
        const li = el("li", { class: "finding severity-" + sev });
        li.append(el("span", { class: "badge severity-" + sev }, f.severity), " ", el("strong", { class: "rule" }, f.rule));
        if (f.path) li.append(" at ", visible(el("code", { class: "path" }), f.path));
        if (f.reason) li.append(": ", el("span", { class: "reason" }, f.reason));
        if (f.excerpt) li.append(visible(el("code", { class: "excerpt" }), f.excerpt));
        ul.append(li);
      }
      card.append(ul);
    }

    const def = rv.definition || {};
    if (changed && rv.diff) {
      card.append(el("p", { class: "label" }, "What changed since the approved definition ([-removed-] {+added+}):"));
      card.append(visible(el("pre", { class: "diff" }), rv.diff, true));
      const whole = el("details", { class: "definition" });
      whole.append(el("summary", {}, "The whole new definition"));
      definitionBlock(whole, def);
      card.append(whole);
    } else {
      definitionBlock(card, def);
    }

    const err = el("p", { class: "error", role: "alert" });
    const actions = el("div", { class: "actions" });
    const approve = el("button", { type: "button", class: "approve" }, "Approve");
    const buttons = [approve];
    actions.append(approve);
    if (!rv.rejected) {
      const reject = el("button", { type: "button", class: "reject" }, "Reject");
      reject.addEventListener("click", () => send("reject"));
      buttons.push(reject);
      actions.append(reject);
    }
    card.append(actions, err);

    // The card goes once the host has the decision; a rejected definition
    // comes back, marked, with the next snapshot.
    async function send(decision) {
      err.textContent = "";
      for (const b of buttons) b.disabled = true;
      try {
        await api("POST", "/v1/tools/reviews/decide",
          { server: rv.server, tool: rv.tool, hash: rv.hash, decision, by: "inbox" });
        if (reviewCards.get(key) === card) {
          card.remove();
          reviewCards.delete(key);
          countToolReviews();
        }
      } catch (e) {
        if (e instanceof Unauthorized) return;
        err.textContent = e.message;
        for (const b of buttons) b.disabled = false;
      }
    }
    approve.addEventListener("click", () => send("approve"));
    return card;
  }

  // definitionBlock appends what a model reads of a tool: its title,
  // description and schemas, each exactly as listed.
  function definitionBlock(node, def) {
    if (def.title) {
      node.append(el("p", { class: "label" }, "Title:"), visible(el("p", { class: "title" }), def.title));
    }
    node.append(el("p", { class: "label" }, "Description, exactly as a model reads it:"));
    if (def.description) node.append(visible(el("pre", { class: "description" }), def.description, true));
    else node.append(el("p", { class: "empty" }, "(none)"));
    for (const [field, label] of [["inputSchema", "Input schema:"], ["outputSchema", "Output schema:"], ["annotations", "Annotations:"],
      ["icons", "Icons (as listed; not fetched):"], ["_meta", "_meta (clients act on it: MCP Apps' ui.resourceUri is the interface they render):"]]) {
      if (def[field] === undefined && field !== "inputSchema") continue;
      node.append(el("p", { class: "label" }, label));
      if (def[field] === undefined) node.append(el("p", { class: "empty" }, "(none)"));
      else node.append(visible(el("pre", { class: "schema " + field }), JSON.stringify(def[field], null, 2), true));
    }
  }

  // HIDDEN matches what a person cannot see or tell apart in text: control
  // and format characters (bidi overrides, zero-width) and every space but
  // the plain one. HIDDEN_IN_LINES spares line breaks too, for text shown
  // as lines (a description, a diff, a schema).
  const HIDDEN = /(?! )[\p{Cc}\p{Cf}\p{Z}]/gu;
  const HIDDEN_IN_LINES = /(?![ \n])[\p{Cc}\p{Cf}\p{Z}]/gu;

  // visible appends text to node with each HIDDEN character shown as its
  // code point, so what runs is what is read; with lines, line breaks stay
  // line breaks.
  function visible(node, text, lines) {
    const s = String(text === undefined || text === null ? "" : text);
    let last = 0;
    for (const m of s.matchAll(lines ? HIDDEN_IN_LINES : HIDDEN)) {
      if (m.index > last) node.append(s.slice(last, m.index));
      const cp = "U+" + m[0].codePointAt(0).toString(16).toUpperCase().padStart(4, "0");
      node.append(el("span", { class: "esc", title: "invisible character " + cp }, "\u27e8" + cp + "\u27e9"));
      last = m.index + m[0].length;
    }
    if (last < s.length) node.append(s.slice(last));
    return node;
  }
})();
