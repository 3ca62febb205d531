// The read-only fleet page: log in once with the link's one-time code, then poll /fleet.json and render the
// daemons with their sessions. All text goes in with textContent (names come from remote daemons).
"use strict";
(() => {
  const KEY = "litbridge.fleet.credential";
  const conn = document.getElementById("conn");
  const root = document.getElementById("fleet");
  const none = document.getElementById("no-daemons");

  function status(state, text) {
    conn.dataset.state = state;
    conn.textContent = text;
  }

  async function login() {
    const m = /#code=([A-Za-z0-9_-]+)/.exec(location.hash);
    history.replaceState(null, "", location.pathname); // the code is spent: never leave it in the address bar
    if (!m) return sessionStorage.getItem(KEY);
    const r = await fetch("/login", {
      method: "POST",
      headers: {"Content-Type": "application/json"},
      body: JSON.stringify({code: m[1]}),
    });
    const body = await r.json();
    if (!r.ok) throw new Error(body.error || "login failed");
    sessionStorage.setItem(KEY, body.credential);
    return body.credential;
  }

  function cell(row, text, cls) {
    const td = document.createElement("td");
    td.textContent = text == null ? "" : String(text);
    if (cls) td.className = cls;
    row.append(td);
  }

  function render(state) {
    document.getElementById("fleet-name").textContent = state.fleet;
    root.replaceChildren();
    none.hidden = state.daemons.length > 0;
    for (const d of state.daemons) {
      const box = document.createElement("section");
      box.className = "daemon";
      box.dataset.daemon = d.daemon;
      box.dataset.available = d.available ? "1" : "0";
      const h = document.createElement("h2");
      h.textContent = `${d.daemon} on ${d.host || "?"} ${d.available ? "" : "(gone: not renewing its entry)"}`;
      box.append(h);
      const table = document.createElement("table");
      const head = table.createTHead().insertRow();
      for (const t of ["session", "state", "cli", "cwd", "question", "available"]) cell(head, t);
      const body = table.createTBody();
      for (const s of d.session_list) {
        const row = body.insertRow();
        row.dataset.session = s.name;
        cell(row, s.name);
        cell(row, s.state);
        cell(row, s.cli);
        cell(row, s.cwd);
        cell(row, s.question && s.question.text);
        cell(row, s.available ? "yes" : "no", s.available ? "" : "muted");
      }
      box.append(table);
      root.append(box);
    }
  }

  async function poll(credential) {
    for (;;) {
      try {
        const r = await fetch("/fleet.json", {headers: {"X-Litbridge-Credential": credential}});
        const body = await r.json();
        if (r.status === 401) { status("closed", body.error); return; }
        if (!r.ok) status("error", body.error || `HTTP ${r.status}`);
        else { render(body); status("open", `live · ${new Date(body.at * 1000).toLocaleTimeString()}`); }
      } catch (e) {
        status("error", `unreachable: ${e.message}`);
      }
      await new Promise(res => setTimeout(res, 2000));
    }
  }

  login().then(c => c ? poll(c) : status("closed", "open a fresh `litbridge web --nats` link"))
    .catch(e => status("closed", e.message));
  window.litbridgeFleet = {render};
})();
