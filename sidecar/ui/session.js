// What the sidecar's pages share: the bearer token (from the URL fragment,
// #token=..., or the login form, kept in sessionStorage so that one page
// opens the other without asking again), the JSON API and its SSE
// streams read with fetch (EventSource cannot send the Authorization
// header), and the elements they build. Plain JavaScript, no build step.
// Nothing here renders HTML: text goes in as textContent.
"use strict";

window.mcpvisorUI = (() => {
  const TOKEN_KEY = "mcpvisor.token";
  const $ = (id) => document.getElementById(id);

  class Unauthorized extends Error {}

  // setAttrs sets attrs on e: false, null and undefined are left out,
  // true is an empty attribute.
  function setAttrs(e, attrs) {
    for (const [k, v] of Object.entries(attrs || {})) {
      if (v === false || v === undefined || v === null) continue;
      if (k === "class") e.setAttribute("class", v);
      else if (v === true) e.setAttribute(k, "");
      else e.setAttribute(k, String(v));
    }
  }

  // el builds an element; text, when given, is set as textContent.
  function el(tag, attrs, text) {
    const e = document.createElement(tag);
    setAttrs(e, attrs);
    if (text !== undefined && text !== null) e.textContent = String(text);
    return e;
  }

  // sleep resolves after ms, or at once when signal aborts.
  function sleep(ms, signal) {
    return new Promise((resolve) => {
      const t = setTimeout(resolve, ms);
      signal.addEventListener("abort", () => { clearTimeout(t); resolve(); }, { once: true });
    });
  }

  // parseSSE returns the event in one block, its data parsed as JSON, or
  // null for a comment or a block without JSON data.
  function parseSSE(block) {
    let name = "message";
    const data = [];
    for (const line of block.split("\n")) {
      if (line.startsWith(":")) continue;
      const i = line.indexOf(":");
      const field = i < 0 ? line : line.slice(0, i);
      const value = i < 0 ? "" : line.slice(i + 1).replace(/^ /, "");
      if (field === "event") name = value;
      else if (field === "data") data.push(value);
    }
    if (data.length === 0) return null;
    try {
      return { name, data: JSON.parse(data.join("\n")) };
    } catch (_) {
      return null;
    }
  }

  // session wires the page's login form, its Log out button and its
  // connection badge; start(signal) runs the page's loops once there is
  // a token, until signal aborts (logging out, or a refused token).
  function session(start) {
    let token = "";
    let running = null; // AbortController of the current session's loops

    function takeToken() {
      const frag = new URLSearchParams(location.hash.replace(/^#/, ""));
      const t = frag.get("token");
      if (t) {
        sessionStorage.setItem(TOKEN_KEY, t);
        // Keep the token out of the address bar and the history.
        history.replaceState(null, "", location.pathname + location.search);
      }
      return sessionStorage.getItem(TOKEN_KEY) || "";
    }

    function setConn(text, cls) {
      const c = $("conn");
      c.textContent = text;
      c.className = "conn " + (cls || "");
    }

    function loggedOut(reason) {
      if (running) running.abort();
      running = null;
      token = "";
      sessionStorage.removeItem(TOKEN_KEY);
      $("app").hidden = true;
      $("logout").hidden = true;
      $("login").hidden = false;
      $("login-error").textContent = reason || "";
      setConn("not connected", "down");
      $("token-input").focus();
    }

    function begin() {
      $("login").hidden = true;
      $("app").hidden = false;
      $("logout").hidden = false;
      running = new AbortController();
      start(running.signal);
    }

    // refused is a 401: the token is no good, the page goes back to the
    // login form.
    function refused() {
      loggedOut("The token was refused: log in again.");
      return new Unauthorized();
    }

    // api sends a request with body (undefined: none) as JSON and returns
    // the answer's JSON, null for 204; an error answer throws its message,
    // with its status.
    async function api(method, path, body, signal) {
      const headers = { Authorization: "Bearer " + token, Accept: "application/json" };
      const init = { method, headers, signal, cache: "no-store" };
      if (body !== undefined) {
        headers["Content-Type"] = "application/json";
        init.body = JSON.stringify(body);
      }
      const resp = await fetch(path, init);
      if (resp.status === 401) throw refused();
      if (resp.status === 204) return null;
      let data = null;
      try {
        data = await resp.json();
      } catch (_) {
        /* a non-JSON answer: reported below by status */
      }
      if (!resp.ok) {
        const err = new Error(data && data.error ? data.error.message : resp.status + " " + resp.statusText);
        err.status = resp.status;
        throw err;
      }
      return data;
    }

    // readSSE reads the stream at path, handing each event to onEvent,
    // until it ends or signal aborts.
    async function readSSE(path, onEvent, signal) {
      const resp = await fetch(path, {
        headers: { Authorization: "Bearer " + token, Accept: "text/event-stream" },
        signal, cache: "no-store",
      });
      if (resp.status === 401) throw refused();
      if (!resp.ok || !resp.body) {
        let msg = resp.status + " " + resp.statusText;
        try {
          const data = await resp.json();
          if (data && data.error) msg = data.error.message;
        } catch (_) {
          /* the status says it */
        }
        throw new Error(msg);
      }
      const reader = resp.body.getReader();
      const dec = new TextDecoder();
      let buf = "";
      for (;;) {
        const { value, done } = await reader.read();
        if (done) return;
        buf += dec.decode(value, { stream: true }).replace(/\r\n?/g, "\n");
        let cut;
        while ((cut = buf.indexOf("\n\n")) >= 0) {
          const ev = parseSSE(buf.slice(0, cut));
          buf = buf.slice(cut + 2);
          if (ev) onEvent(ev.name, ev.data);
        }
      }
    }

    document.addEventListener("DOMContentLoaded", () => {
      $("login-form").addEventListener("submit", (e) => {
        e.preventDefault();
        const t = $("token-input").value.trim();
        if (!t) return;
        sessionStorage.setItem(TOKEN_KEY, t);
        $("token-input").value = "";
        token = t;
        begin();
      });
      $("logout").addEventListener("click", () => loggedOut(""));
      token = takeToken();
      if (token) begin();
      else loggedOut("");
    });

    return { api, readSSE, setConn, loggedOut };
  }

  return { $, el, setAttrs, sleep, session, Unauthorized };
})();
