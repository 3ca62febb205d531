// litbridge web view: a protocol-v1 client in the browser.
// /ws/events carries the daemon's JSON-lines events (one or more lines per message) and takes one
// command per message; /ws/attach carries one session's raw terminal bytes (read-only unless the page
// took control). On reconnect the page asks hello{since_seq} and applies the replay in seq order, so it
// catches up with no duplicate and no gap. Its hello asks for deltas: a streamed answer comes as `append`
// (the turn's text cut to `offset` code points, then `text`) instead of the whole text each time.
// Login: `litbridge web` opens /#code=<one-time code>; the page spends the code (POST /login, same origin) for
// a credential that it keeps in sessionStorage (this origin's alone; no cookie) and sends as the first
// message of every WebSocket.
"use strict";
(function () {
  const $ = (sel) => document.querySelector(sel);
  const CREDENTIAL = "litbridge.credential"; // the sessionStorage key
  const UNAUTHORIZED = 4401; // the server's close code for a missing or unknown credential
  // The AI CLIs answer in markdown; a shell or REPL (the generic driver) writes plain text, shown as it is. The
  // daemon says which in each session's `markdown`; this list is the guess for an older daemon that does not.
  const MARKDOWN_CLIS = new Set(["claude", "codex", "gemini", "rift"]);
  const md = window.markdownit({ html: false, linkify: false, breaks: false }); // raw HTML is escaped
  const linkOpen = md.renderer.rules.link_open || ((tokens, i, opts, env, self) => self.renderToken(tokens, i, opts));
  md.renderer.rules.link_open = (tokens, i, opts, env, self) => {
    tokens[i].attrSet("target", "_blank"); // a link in an answer never navigates the page away
    tokens[i].attrSet("rel", "noopener noreferrer");
    return linkOpen(tokens, i, opts, env, self);
  };

  const S = {
    ws: null,
    daemonId: null,
    lastSeq: 0,
    seen: new Set(),
    catchingUp: null, // events held until the hello reply, then applied in seq order
    sessions: new Map(), // key -> list item
    chats: new Map(), // key -> {el, turns: Map(turn_id -> turn), tools: Map, questions: Map}
    pending: new Map(), // command id -> {key, el}
    selected: null,
    clis: [],
    nextId: 1,
    backoff: 250,
    listTimer: null,
  };

  // ------------------------------------------------------------------ events socket
  function wsUrl(path) {
    return (location.protocol === "https:" ? "wss://" : "ws://") + location.host + path;
  }

  function command(obj) {
    if (!S.ws || S.ws.readyState !== WebSocket.OPEN) return null;
    const id = "web-" + S.nextId++;
    S.ws.send(JSON.stringify(Object.assign({ id }, obj)));
    return id;
  }

  // ------------------------------------------------------------------ login
  async function login() {
    const m = /^#code=([A-Za-z0-9_-]+)$/.exec(location.hash);
    if (!m) return !!sessionStorage.getItem(CREDENTIAL) || loggedOut("");
    history.replaceState(null, "", "/"); // the code leaves the address bar and this history entry
    setConn("connecting", "logging in…");
    let body = {};
    try {
      const r = await fetch("/login", {
        method: "POST",
        headers: { "Content-Type": "application/json" },
        body: JSON.stringify({ code: m[1] }),
        credentials: "omit",
        cache: "no-store",
      });
      body = await r.json();
    } catch (e) {
      body = { error: "login failed: " + e };
    }
    if (body.credential) {
      sessionStorage.setItem(CREDENTIAL, body.credential);
      return true;
    }
    if (sessionStorage.getItem(CREDENTIAL)) return true; // an older login of this tab still stands
    return loggedOut(body.error || "login failed");
  }

  function loggedOut(why) {
    sessionStorage.removeItem(CREDENTIAL);
    S.loggedOut = true;
    setConn("login", (why ? why + " — " : "not logged in: ") + "run `litbridge web` to open a fresh one-time link");
    return false;
  }

  function authenticate(ws) {
    ws.send(JSON.stringify({ auth: sessionStorage.getItem(CREDENTIAL) || "" }));
  }

  function connect() {
    if (S.loggedOut) return;
    setConn("connecting", "connecting…");
    const ws = new WebSocket(wsUrl("/ws/events"));
    S.ws = ws;
    let buf = "";
    ws.onmessage = (m) => {
      buf += m.data;
      let nl;
      while ((nl = buf.indexOf("\n")) >= 0) {
        const line = buf.slice(0, nl);
        buf = buf.slice(nl + 1);
        if (line.trim()) {
          let ev;
          try { ev = JSON.parse(line); } catch (e) { continue; }
          receive(ev);
        }
      }
    };
    ws.onopen = () => {
      authenticate(ws);
      S.backoff = 250;
    };
    ws.onclose = (e) => {
      if (S.ws !== ws) return;
      S.ws = null;
      S.catchingUp = null;
      if (e.code === UNAUTHORIZED) {
        loggedOut("this browser session is not logged in (was the daemon restarted?)");
        return;
      }
      setConn("closed", "disconnected — reconnecting…");
      if (S.hold) return; // tests: stay away until reconnect()
      setTimeout(connect, S.backoff);
      S.backoff = Math.min(S.backoff * 2, 5000);
    };
  }

  function setConn(state, text) {
    const el = $("#conn");
    el.dataset.state = state;
    el.textContent = text;
  }

  function receive(ev) {
    window.litbridge.events.push(ev);
    if (ev.event === "monitor_ready") {
      if (S.daemonId !== null && ev.daemon_id && ev.daemon_id !== S.daemonId) resetAll(); // a new daemon
      S.daemonId = ev.daemon_id || S.daemonId;
      S.clis = ev.clis || [];
      fillClis();
      S.catchingUp = [];
      S.helloId = command({ cmd: "hello", since_seq: S.lastSeq, deltas: true });
      return;
    }
    if (S.catchingUp !== null) {
      if ((ev.event === "capabilities" || ev.event === "error") && ev.re === S.helloId) {
        const held = S.catchingUp;
        S.catchingUp = null;
        held.sort((a, b) => (a.seq || 0) - (b.seq || 0));
        held.forEach(apply);
        window.litbridge.caughtUp.push(...held.filter((e) => typeof e.seq === "number").map((e) => e.seq));
        setConn("open", "connected");
        refreshList();
        return;
      }
      S.catchingUp.push(ev);
      return;
    }
    const fresh = typeof ev.seq !== "number" || !S.seen.has(ev.seq);
    apply(ev);
    if (fresh) attention(ev); // live events only: a (re)connect's catch-up is old news
  }

  // ------------------------------------------------------------------ browser notifications
  // While this tab is hidden, a question, a finished or failed turn and an unexpected exit raise a notification
  // (the Notification API), from the events the page receives anyway. One per session and kind is shown at a
  // time (`tag`: a newer one replaces it); clicking it brings the tab back with that session selected.
  const NOTIFY_PREF = "litbridge.notify"; // localStorage: "off" mutes this page's notifications
  const canNotify = typeof window.Notification === "function";

  function notifyOn() {
    return canNotify && Notification.permission === "granted" && localStorage.getItem(NOTIFY_PREF) !== "off";
  }

  function notifyButton() {
    const b = $("#notify");
    b.hidden = !canNotify;
    if (!canNotify) return;
    const perm = Notification.permission;
    b.disabled = perm === "denied";
    b.setAttribute("aria-pressed", String(notifyOn()));
    b.textContent =
      perm === "denied" ? "Notifications blocked" : perm !== "granted" ? "Enable notifications" : notifyOn() ? "Notifications on" : "Notifications off";
  }

  $("#notify").addEventListener("click", async () => {
    if (Notification.permission === "granted") {
      localStorage.setItem(NOTIFY_PREF, notifyOn() ? "off" : "on");
    } else if (Notification.permission === "default") {
      await Notification.requestPermission(); // the browser's prompt: only ever from this click
      localStorage.removeItem(NOTIFY_PREF);
    }
    notifyButton();
  });

  function clip(text) {
    const s = String(text || "").replace(/\s+/g, " ").trim();
    return s.length > 200 ? s.slice(0, 199) + "…" : s;
  }

  // The same kinds, titles and rule as the daemon's `serve --notify` (docs/notify.md); `stuck` is the daemon's
  // alone. A turn that a kill ended is not news: a CLI-gone `turn_error` is held until the session's `exited`
  // (the CLI died: notify both) or `killed` (someone killed it: drop it), one of which always follows it.
  function noticeOf(ev) {
    switch (ev.event) {
      case "question":
        return ["asks a question", clip(ev.text) || "a question"];
      case "complete":
        return ["finished a turn", clip(ev.content) || "(no text)"];
      case "turn_error":
        return ["turn failed", clip(ev.message)];
      case "exited":
        return ev.exit_code === 0 ? null : ["CLI exited", clip("exit code " + ev.exit_code + (ev.stderr_tail ? ": " + ev.stderr_tail : ""))];
    }
    return null;
  }

  const heldErrors = new Map(); // session -> its `turn_error{cli_exited}` events, until `exited` or `killed`

  function attention(ev) {
    const key = ev.session;
    if (!key) return;
    if (ev.event === "turn_error" && ev.kind === "cli_exited") {
      heldErrors.set(key, [...(heldErrors.get(key) || []), ev]);
      return;
    }
    if (["exited", "killed", "ready"].includes(ev.event)) {
      const held = heldErrors.get(key) || [];
      heldErrors.delete(key);
      if (ev.event === "exited") held.forEach(notify);
    }
    notify(ev);
  }

  function notify(ev) {
    if (document.visibilityState !== "hidden" || !notifyOn()) return;
    const what = noticeOf(ev);
    if (!what) return;
    const key = ev.session;
    let n;
    try {
      n = new Notification("litbridge: " + key + " " + what[0], { body: what[1], tag: key + ":" + ev.event });
    } catch (e) {
      return; // a browser that only notifies from a service worker (Android): the events go on regardless
    }
    n.onclick = () => {
      window.focus();
      select(key);
      n.close();
    };
  }

  function apply(ev) {
    if (typeof ev.seq === "number") {
      if (S.seen.has(ev.seq)) return; // already applied (replay overlap)
      S.seen.add(ev.seq);
      if (S.seen.size > 50000) S.seen = new Set([...S.seen].slice(-25000));
      if (ev.seq > S.lastSeq) S.lastSeq = ev.seq;
      window.litbridge.applied.push(ev.seq);
    }
    const key = ev.session;
    switch (ev.event) {
      case "sessions": {
        const fresh = new Map((ev.sessions || []).map((s) => [s.name, s]));
        S.sessions.forEach((s, k) => {
          // a killed or reaped session stays listed as dead until the page is reloaded
          if (!fresh.has(k)) fresh.set(k, Object.assign({}, s, { state: "dead", alive: false, pid: null }));
        });
        S.sessions = fresh;
        renderSessions();
        S.chats.forEach((c, k) => c.turns.forEach((t) => t.answer !== undefined && renderAnswer(t.resp, k, t.answer)));
        return;
      }
      case "error":
        onError(ev);
        return;
      case "replay_gap":
        if (key) notice(key, "some older events were no longer kept by the daemon");
        return;
    }
    if (!key) return;
    const chat = chatOf(key);
    switch (ev.event) {
      case "ready":
        notice(key, ev.reused ? "session reused" : "ready" + (ev.model ? " (" + ev.model + ")" : ""));
        break;
      case "state":
        setState(key, ev.to);
        break;
      case "accepted": {
        const p = S.pending.get(ev.re);
        const el = p ? p.el : bubble(chat, "user", "(a message sent by another client)");
        if (p) S.pending.delete(ev.re);
        const t = turn(chat, ev.turn_id);
        t.user = el;
        el.dataset.turn = ev.turn_id;
        setBadge(el, ev.queued ? "queued" : "");
        break;
      }
      case "replace": {
        const t = turn(chat, ev.turn_id);
        if (t.done) break;
        startTurn(chat, t);
        const el = response(chat, t);
        t.text = ev.text || "";
        t.points = codePoints(t.text);
        el.textContent = t.text;
        break;
      }
      case "append": {
        const t = turn(chat, ev.turn_id);
        if (t.done) break;
        startTurn(chat, t);
        const el = response(chat, t);
        const piece = ev.text || "";
        if (ev.offset === (t.points || 0)) {
          el.append(piece); // growth: only the new text is added to the page
          t.text = (t.text || "") + piece;
          t.points = (t.points || 0) + codePoints(piece);
        } else {
          // earlier text changed: keep its first `offset` code points (not UTF-16 units), then the piece
          t.text = Array.from(t.text || "").slice(0, ev.offset).join("") + piece;
          t.points = ev.offset + codePoints(piece);
          el.textContent = t.text;
        }
        break;
      }
      case "thinking":
        break;
      case "tool_use": {
        const t = turn(chat, ev.turn_id);
        startTurn(chat, t);
        const d = document.createElement("details");
        d.className = "tool";
        const s = document.createElement("summary");
        s.textContent = "tool: " + ev.name;
        const pre = document.createElement("pre");
        pre.textContent = JSON.stringify(ev.input, null, 2);
        d.append(s, pre);
        // collapsed, above the turn's one response bubble (replace/complete carry the whole turn's text)
        if (t.resp) t.resp.before(d);
        else append(chat, d);
        chat.tools.set(ev.tool_use_id, d);
        break;
      }
      case "tool_result": {
        const d = chat.tools.get(ev.tool_use_id);
        const pre = document.createElement("pre");
        const content = typeof ev.content === "string" ? ev.content : JSON.stringify(ev.content, null, 2);
        pre.textContent = (ev.is_error ? "error: " : "result: ") + content;
        if (d) d.append(pre);
        break;
      }
      case "complete": {
        const t = turn(chat, ev.turn_id);
        startTurn(chat, t);
        const el = response(chat, t);
        t.answer = ev.content || "";
        renderAnswer(el, key, t.answer);
        el.classList.add("done");
        t.done = true;
        break;
      }
      case "interrupted": {
        const t = turn(chat, ev.turn_id);
        startTurn(chat, t);
        t.done = true;
        const el = response(chat, t);
        el.textContent = ev.content || "";
        el.classList.add("interrupted");
        setBadge(el, "interrupted");
        break;
      }
      case "turn_error": {
        const t = turn(chat, ev.turn_id);
        t.done = true;
        const el = bubble(chat, "assistant error", "turn failed (" + (ev.kind || "error") + "): " + (ev.message || ""));
        el.dataset.turn = ev.turn_id;
        break;
      }
      case "question":
        question(chat, key, ev);
        break;
      case "question_closed": {
        const q = chat.questions.get(ev.question_id);
        if (q) {
          q.classList.add("closed");
          q.querySelectorAll("button").forEach((b) => (b.disabled = true));
          q.querySelector(".reason").textContent = ev.reason;
        }
        break;
      }
      case "killed":
        setState(key, "dead");
        notice(key, "session killed");
        break;
      case "exited":
        setState(key, "dead");
        notice(key, "the CLI exited (" + ev.exit_code + ")" + (ev.stderr_tail ? ": " + ev.stderr_tail : ""));
        break;
      case "reaped_idle":
        notice(key, "session removed");
        break;
    }
    if (["ready", "state", "accepted", "complete", "interrupted", "turn_error", "killed", "exited", "reaped_idle"].includes(ev.event)) {
      refreshList();
    }
  }

  function writesMarkdown(key) {
    const s = S.sessions.get(key);
    if (s && typeof s.markdown === "boolean") return s.markdown;
    return !!(s && s.cli && MARKDOWN_CLIS.has(s.cli.split("/").pop()));
  }

  // A final answer: markdown from the AI CLIs, preformatted text (line breaks, `*`, `_`, `#` kept) from anything
  // else. Re-run when the sessions list arrives (a replayed answer can come before the session's cli is known).
  function renderAnswer(el, key, content) {
    const format = writesMarkdown(key) ? "markdown" : "plain";
    if (el.dataset.format === format) return;
    el.dataset.format = format;
    if (format === "markdown") {
      el.innerHTML = md.render(content);
      return;
    }
    const pre = document.createElement("pre");
    pre.className = "output";
    pre.textContent = content;
    el.replaceChildren(pre);
  }

  function onError(ev) {
    const p = S.pending.get(ev.re);
    if (p) {
      S.pending.delete(ev.re);
      setBadge(p.el, "not sent: " + ev.message);
      p.el.classList.add("error");
      return;
    }
    if (ev.re && ev.re === S.createId) {
      const e = $("#create-error");
      e.textContent = ev.message;
      e.hidden = false;
      return;
    }
    if (ev.session) notice(ev.session, "error: " + ev.message);
  }

  function resetAll() {
    S.lastSeq = 0;
    S.seen = new Set();
    S.chats.forEach((c) => c.el.remove());
    S.chats = new Map();
    S.pending = new Map();
  }

  function refreshList() {
    if (S.listTimer) return;
    S.listTimer = setTimeout(() => {
      S.listTimer = null;
      command({ cmd: "list" });
    }, 100);
  }

  // ------------------------------------------------------------------ sessions list
  function setState(key, state) {
    const s = S.sessions.get(key);
    if (s) {
      s.state = state;
      if (state === "dead") s.alive = false;
      renderSessions();
    }
  }

  // Rows are updated in place, never rebuilt: a row replaced between a click's mousedown and mouseup loses the
  // click, and states change many times a second while a CLI works.
  const rowEls = new Map(); // session key -> its <tr>

  function sessionRow(key) {
    const tr = document.createElement("tr");
    tr.dataset.session = key;
    const st = document.createElement("span");
    st.className = "state";
    const stTd = document.createElement("td");
    stTd.append(st);
    const kill = document.createElement("button");
    kill.type = "button";
    kill.className = "kill";
    kill.textContent = "Kill";
    kill.title = "kill " + key;
    kill.onclick = (e) => {
      e.stopPropagation();
      if (confirm("Kill session " + key + "?")) command({ cmd: "kill", session: key });
    };
    const killTd = document.createElement("td");
    killTd.append(kill);
    tr.append(td(key, "name"), stTd, td("", "cli"), td("", "cwd"), td("", "queued"), killTd);
    tr.onclick = () => select(key);
    return tr;
  }

  function setText(el, text, title) {
    if (el.textContent !== text) el.textContent = text;
    if (title !== undefined && el.title !== title) el.title = title;
  }

  function renderSessions() {
    const body = $("#sessions tbody");
    const keys = [...S.sessions.keys()].sort();
    $("#no-sessions").hidden = keys.length > 0;
    for (const [key, tr] of rowEls) {
      if (!S.sessions.has(key)) {
        tr.remove();
        rowEls.delete(key);
      }
    }
    keys.forEach((key, i) => {
      const s = S.sessions.get(key);
      let tr = rowEls.get(key);
      if (!tr) rowEls.set(key, (tr = sessionRow(key)));
      if (body.children[i] !== tr) body.insertBefore(tr, body.children[i] || null);
      tr.className = "row" + (key === S.selected ? " selected" : "");
      const st = tr.querySelector(".state");
      const state = s.state ?? "";
      if (st.dataset.state !== state) st.dataset.state = state;
      setText(st, state);
      setText(tr.querySelector(".cli"), (s.cli || "").split("/").pop(), s.cli || "");
      const cwd = (s.working_dir || "").replace(/\/+$/, "").split("/").pop() || s.working_dir || "";
      setText(tr.querySelector(".cwd"), cwd, s.working_dir || "");
      setText(tr.querySelector(".queued"), String(s.queued || 0));
      tr.querySelector("button.kill").disabled = s.alive === false;
    });
    if (S.selected) showDetail(S.selected);
  }

  function td(text, cls) {
    const el = document.createElement("td");
    el.textContent = text;
    if (cls) el.className = cls;
    return el;
  }

  function fillClis() {
    const list = $("#clis");
    list.textContent = "";
    for (const c of S.clis) {
      const o = document.createElement("option");
      o.value = c;
      list.append(o);
    }
  }

  $("#create").addEventListener("submit", (e) => {
    e.preventDefault();
    const f = e.target;
    $("#create-error").hidden = true;
    const cmd = { cmd: "create", session: f.session.value.trim() };
    if (f.cli.value.trim()) cmd.cli = f.cli.value.trim();
    if (f.working_dir.value.trim()) cmd.working_dir = f.working_dir.value.trim();
    if (f.args.value.trim()) cmd.args = f.args.value.trim().split(/\s+/);
    S.createId = command(cmd);
    select(cmd.session);
    f.session.value = "";
  });

  // ------------------------------------------------------------------ chat
  function chatOf(key) {
    let c = S.chats.get(key);
    if (!c) {
      const el = document.createElement("div");
      el.className = "chat-log";
      el.dataset.session = key;
      el.hidden = key !== S.selected;
      $("#chat").append(el);
      c = { el, turns: new Map(), tools: new Map(), questions: new Map() };
      S.chats.set(key, c);
    }
    return c;
  }

  function append(chat, el) {
    const box = $("#chat");
    const stick = box.scrollTop + box.clientHeight >= box.scrollHeight - 20;
    chat.el.append(el);
    if (stick) box.scrollTop = box.scrollHeight;
  }

  function bubble(chat, cls, text) {
    const el = document.createElement("div");
    el.className = "msg " + cls;
    el.textContent = text;
    append(chat, el);
    return el;
  }

  function notice(key, text) {
    bubble(chatOf(key), "notice", text);
  }

  function setBadge(el, text) {
    let b = el.querySelector(".badge");
    if (!text) {
      if (b) b.remove();
      return;
    }
    if (!b) {
      b = document.createElement("span");
      b.className = "badge";
      el.append(b);
    }
    b.textContent = text;
  }

  function turn(chat, id) {
    let t = chat.turns.get(id);
    if (!t) {
      t = { id, user: null, resp: null, done: false };
      chat.turns.set(id, t);
    }
    return t;
  }

  // The wire counts text in Unicode code points (as Python does); a JavaScript string's length is UTF-16 units.
  function codePoints(text) {
    let n = 0;
    for (const _ of text) n++;
    return n;
  }

  function startTurn(chat, t) {
    chat.current = t;
    if (t.user) setBadge(t.user, ""); // it left the queue
  }

  function response(chat, t) {
    if (!t.resp) {
      t.resp = bubble(chat, "assistant", "");
      t.resp.dataset.turn = t.id;
    }
    return t.resp;
  }

  function question(chat, key, ev) {
    const q = document.createElement("div");
    q.className = "question";
    q.dataset.question = ev.question_id;
    const text = document.createElement("div");
    // `detail`: the text the CLI shows with the question, or its named facts ({command, reason, ...})
    const detail =
      typeof ev.detail === "string"
        ? ev.detail
        : ev.detail && typeof ev.detail === "object"
          ? Object.entries(ev.detail).map(([k, v]) => `${k}: ${typeof v === "string" ? v : JSON.stringify(v)}`).join("\n")
          : "";
    text.textContent = (ev.text || "The CLI asks:") + (detail ? "\n" + detail : "");
    text.style.whiteSpace = "pre-wrap";
    const opts = document.createElement("div");
    opts.className = "options";
    for (const o of ev.options || []) {
      // every driver's option: {digit: "1" (a string, what `answer` takes back), label, selected}
      const b = document.createElement("button");
      b.type = "button";
      b.textContent = o.label;
      b.title = `${o.digit}. ${o.label}`;
      b.dataset.digit = o.digit;
      if (o.selected) b.classList.add("selected"); // where the CLI's cursor is
      b.onclick = () => {
        q.querySelectorAll("button").forEach((x) => (x.disabled = true));
        command({ cmd: "answer", session: key, question_id: ev.question_id, digit: String(o.digit) });
      };
      opts.append(b);
    }
    const reason = document.createElement("span");
    reason.className = "reason muted";
    q.append(text, opts, reason);
    const t = chat.current; // a question has no turn_id: it belongs to the running turn, if any
    if (t && t.resp && !t.done) t.resp.before(q); // with the turn's tools, above its response
    else append(chat, q);
    chat.questions.set(ev.question_id, q);
  }

  $("#send").addEventListener("submit", (e) => {
    e.preventDefault();
    const box = e.target.content;
    const content = box.value;
    if (!S.selected || !content.trim()) return;
    const chat = chatOf(S.selected);
    const el = bubble(chat, "user", content);
    const id = command({ cmd: "send", session: S.selected, content });
    if (id === null) {
      setBadge(el, "not sent: disconnected");
      el.classList.add("error");
      return;
    }
    setBadge(el, "sending…");
    S.pending.set(id, { key: S.selected, el });
    box.value = "";
  });
  $("#send textarea").addEventListener("keydown", (e) => {
    if (e.key === "Enter" && !e.shiftKey && !e.isComposing) {
      e.preventDefault();
      $("#send").requestSubmit();
    }
  });
  $("#interrupt").addEventListener("click", () => {
    if (S.selected) command({ cmd: "interrupt", session: S.selected });
  });

  // ------------------------------------------------------------------ terminal
  const term = new window.Terminal({
    cols: 200,
    rows: 50,
    scrollback: 0,
    fontSize: 11,
    fontFamily: "DejaVu Sans Mono, Menlo, Consolas, monospace",
    convertEol: false,
    allowProposedApi: true,
    theme: { background: "#0b0d10" },
  });
  term.open($("#terminal"));
  const T = { ws: null, key: null, control: false, retry: null };

  function attach(key) {
    if (T.retry) clearTimeout(T.retry);
    T.retry = null;
    if (T.ws) {
      const old = T.ws;
      T.ws = null;
      old.close();
    }
    T.key = key;
    term.reset();
    if (!key) return;
    const ws = new WebSocket(wsUrl("/ws/attach?session=" + encodeURIComponent(key) + (T.control ? "&control=1" : "")));
    ws.binaryType = "arraybuffer";
    T.ws = ws;
    ws.onopen = () => {
      authenticate(ws);
      $("#term-status").textContent = T.control ? "terminal (you type)" : "terminal (read-only)";
    };
    ws.onmessage = (m) => term.write(new Uint8Array(m.data));
    ws.onclose = (e) => {
      if (T.ws !== ws) return;
      T.ws = null;
      if (e.code === UNAUTHORIZED) {
        $("#term-status").textContent = "terminal: not logged in";
        return;
      }
      const s = S.sessions.get(key);
      $("#term-status").textContent = "terminal disconnected";
      if (s && s.alive !== false && s.state !== "dead") T.retry = setTimeout(() => T.key === key && attach(key), 1000);
    };
  }
  const enc = new TextEncoder();
  term.onData((d) => {
    if (T.control && T.ws && T.ws.readyState === WebSocket.OPEN) T.ws.send(enc.encode(d));
  });
  $("#control").addEventListener("click", () => {
    T.control = !T.control;
    $("#control").setAttribute("aria-pressed", String(T.control));
    $("#control").textContent = T.control ? "Release control" : "Take control";
    attach(T.key);
    if (T.control) term.focus();
  });

  // ------------------------------------------------------------------ selection
  function select(key) {
    S.selected = key;
    S.chats.forEach((c, k) => (c.el.hidden = k !== key));
    chatOf(key).el.hidden = false;
    renderSessions();
    showDetail(key);
    if (T.key !== key) attach(key);
  }

  function showDetail(key) {
    $("#detail").hidden = false;
    $("#empty").hidden = true;
    $("#detail-title").textContent = key;
    const s = S.sessions.get(key) || {};
    const st = $("#detail-state");
    st.dataset.state = s.state || "";
    st.textContent = s.state || "starting";
    const meta = [s.cli, s.model, s.working_dir, s.pid ? "pid " + s.pid : null].filter(Boolean);
    $("#detail-meta").textContent = meta.join(" · ");
    if (T.key === key && !T.ws && !T.retry && s.alive !== false && s.state && s.state !== "dead") attach(key);
  }

  // for tests and the curious: the terminal's rendered rows and the events applied so far
  window.litbridge = {
    events: [], // every event received, in arrival order
    applied: [], // the seq of every session event applied, in the order applied
    term,
    rows() {
      const b = term.buffer.active;
      const out = [];
      for (let i = 0; i < term.rows; i++) {
        const line = b.getLine(b.viewportY + i);
        out.push(line ? line.translateToString(true) : "");
      }
      return out;
    },
    state: S,
    caughtUp: [], // the seq of every event applied from a (re)connect's catch-up
    dropConnection(hold) {
      S.hold = !!hold;
      if (S.ws) S.ws.close();
    },
    reconnect() {
      S.hold = false;
      if (!S.ws) connect();
    },
  };

  notifyButton();
  login().then((ok) => ok && connect());
})();
