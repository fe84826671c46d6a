// kubectl appservice dashboard's page. No framework: it draws the views
// the server pushes (server-sent events of JSON) with the DOM's own
// functions, and every string of the cluster becomes a text node, never
// markup (no innerHTML anywhere: test/dashboard checks it).
"use strict";

(function () {
  const view = document.getElementById("view");
  const live = document.getElementById("live");
  const notice = document.getElementById("notice");

  // The view the URL names: /appservices/NAMESPACE/NAME, else the list.
  const m = location.pathname.match(/^\/appservices\/([^/]+)\/([^/]+)$/);
  const target = m ? { namespace: decodeURIComponent(m[1]), name: decodeURIComponent(m[2]) } : { namespace: "", name: "" };

  // el makes an element: attrs set as attributes, children appended, a
  // string as a text node.
  function el(tag, attrs, ...children) {
    const e = document.createElement(tag);
    for (const [k, v] of Object.entries(attrs || {})) {
      if (v === false || v === undefined || v === null) continue;
      e.setAttribute(k, v === true ? "" : String(v));
    }
    for (const c of children.flat(Infinity)) {
      if (c === undefined || c === null || c === false) continue;
      e.append(typeof c === "string" || typeof c === "number" ? document.createTextNode(String(c)) : c);
    }
    return e;
  }

  function detailHref(ns, name) {
    return "/appservices/" + encodeURIComponent(ns) + "/" + encodeURIComponent(name);
  }

  function state(v) {
    return el("span", { class: "state-" + v.state }, v.symbol + " " + v.state);
  }

  // table makes a table of rows (arrays of cells: strings or nodes).
  function table(caption, head, rows, cls) {
    return el("div", { class: "scroll" },
      el("table", { class: cls },
        el("caption", {}, caption),
        el("thead", {}, el("tr", {}, head.map((h) => el("th", { scope: "col", class: h.wide ? "wide" : null }, h.text || h)))),
        el("tbody", {}, rows.map((r) => el("tr", {}, r.map((c, i) =>
          el("td", { class: [head[i].wide ? "wide" : "", head[i].msg ? "msg" : ""].join(" ").trim() || null }, c)))))));
  }

  function drawList(v) {
    const all = v.namespace === "";
    document.title = "AppServices" + (all ? "" : " in " + v.namespace);
    const head = [{ text: "Name" }, { text: "Status" }, { text: "Step" }, { text: "Weight" }, { text: "Age", wide: true }, { text: "Message", wide: true, msg: true }];
    if (all) head.unshift({ text: "Namespace" });
    const rows = v.items.map((it) => {
      const r = [el("a", { href: detailHref(it.namespace, it.name) }, it.name), state(it), it.step, it.weight, it.age, it.message || ""];
      if (all) r.unshift(it.namespace);
      return r;
    });
    return [
      el("h1", {}, all ? "AppServices in every namespace" : "AppServices in namespace " + v.namespace),
      v.items.length === 0 ? el("p", {}, "No AppServices.") : table(v.items.length + " AppServices, live", head, rows, "list"),
    ];
  }

  // countdown: the pause's time left, drawn every second from pauseUntil
  // (the server pushes nothing while a pause runs).
  function countdown() {
    for (const e of document.querySelectorAll("[data-until]")) {
      const left = Math.max(0, Math.round((Date.parse(e.dataset.until) - Date.now()) / 1000));
      e.textContent = left >= 60 ? Math.floor(left / 60) + "m" + (left % 60) + "s" : left + "s";
    }
  }
  setInterval(countdown, 1000);

  function drawCanary(v, c) {
    const out = [el("h2", { id: "canary" }, "Canary")];
    out.push(el("p", { class: "canary-line", id: "canary-line" }, c.line));
    out.push(el("ol", { class: "steps", "aria-label": "Steps" }, c.steps.map((s) => {
      let text = "Step " + s.number + ": " + s.weight + "%";
      if (s.pause) text += ", pause " + s.pause;
      if (s.gate) text += ", gate";
      if (s.tests) text += ", tests " + s.tests.join(", ");
      return el("li", { class: s.current ? "current" : s.passed ? "passed" : null, "aria-current": s.current ? "step" : null, "data-number": s.number },
        (s.passed ? "✔ " : "") + text);
    })));
    const facts = [];
    if (c.traffic) facts.push(["Traffic", c.traffic]);
    if (c.pauseUntil) facts.push(["Pause left", el("span", { "data-until": c.pauseUntil }, "")]);
    if (c.gated) facts.push(["Gate", "waits for a person: Promote passes it"]);
    if (c.hash) facts.push(["Canary template", c.hash]);
    if (c.stable) facts.push(["Stable template", c.stable]);
    if (c.request) facts.push(["Last request", c.request]);
    out.push(el("dl", { class: "summary" }, facts.map(([k, val]) => [el("dt", {}, k), el("dd", {}, val)])));
    if (v.actions) {
      const why = [];
      out.push(el("div", { class: "actions", role: "group", "aria-label": "Canary commands" }, v.actions.map((a) => {
        const cls = a.action === "abort" ? "danger" : a.action === "promote" && a.enabled ? "primary" : null;
        if (!a.enabled) why.push(el("p", { class: "why", id: "why-" + a.action }, a.label + ": " + a.why));
        return el("button", {
          type: "button", class: cls, "data-action": a.action, disabled: !a.enabled,
          "aria-label": a.label + " the canary of " + v.name,
          "aria-describedby": a.enabled ? null : "why-" + a.action,
        }, a.label);
      })));
      out.push(el("details", {}, el("summary", {}, "Why some buttons are off"), why));
    }
    return out;
  }

  function drawDetail(v) {
    document.title = v.name + " · AppServices";
    const facts = [["Namespace", v.namespace], ["Status", state(v)]];
    if (v.message) facts.push(["Message", v.message]);
    facts.push(["Image", v.image], ["Replicas", v.replicas], ["Route", v.route]);
    const out = [
      el("p", {}, el("a", { href: "/" }, "← All AppServices")),
      el("h1", {}, v.name),
      el("dl", { class: "summary" }, facts.map(([k, val]) => [el("dt", {}, k), el("dd", { id: "fact-" + k.toLowerCase() }, val)])),
    ];
    if (v.canary) out.push(drawCanary(v, v.canary));
    if (v.analysis) {
      out.push(el("h2", {}, "Analysis"), table("Each metric's last measurement against its bounds",
        ["Metric", "Result", "Value", "Bounds", "Failures", "Errors", { text: "Measured", wide: true }, { text: "Message", msg: true }],
        v.analysis.map((a) => [a.name, a.symbol + " " + a.result, a.value, a.bounds, a.failures, a.errors, a.measured, a.message || ""]), "analysis"));
    }
    out.push(el("h2", {}, "Objects"), table("The AppService's Deployments, ReplicaSets, Pods, tests and route",
      ["Name", "Kind", "Status", { text: "Age", wide: true }, { text: "Info", msg: true }],
      v.tree.map((r) => [el("span", { "data-depth": r.depth }, "\u00a0\u00a0".repeat(r.depth * 2) + (r.depth ? "└ " : "") + r.name), r.kind, r.status, r.age, r.info || ""]), "tree"));
    if (v.conditions) {
      out.push(el("h2", {}, "Conditions"), table("Status conditions", ["Type", "Status", "Reason", { text: "Message", msg: true }],
        v.conditions.map((c) => [c.type, c.status, c.reason, c.message]), "conditions"));
    }
    out.push(el("h2", {}, "Events"));
    if (v.eventsProblem) out.push(el("p", { class: "problem" }, "Not shown: " + v.eventsProblem));
    else if (!v.events) out.push(el("p", {}, "No Events."));
    else out.push(table("The latest first", ["Type", "Reason", { text: "Message", msg: true }, "Count", { text: "Age", wide: true }],
      v.events.map((e) => [e.type, e.reason, e.message, e.count, e.age]), "events"));
    return out;
  }

  // draw replaces the view, keeping the keyboard's focus on the same
  // button or link.
  function draw(v) {
    const focused = document.activeElement;
    const key = focused && (focused.dataset.action || focused.getAttribute("href"));
    view.replaceChildren(...(target.name ? drawDetail(v) : drawList(v)).flat(Infinity));
    view.dataset.state = v.state || "";
    view.dataset.step = v.canary && v.canary.steps.findIndex((s) => s.current) >= 0 ? String(v.canary.steps.findIndex((s) => s.current) + 1) : "";
    view.dataset.phase = v.canary ? v.canary.phase : "";
    countdown();
    if (key) {
      for (const e of view.querySelectorAll("[data-action], a[href]")) {
        if ((e.dataset.action || e.getAttribute("href")) === key) { e.focus(); break; }
      }
    }
  }

  function say(text, refused) {
    notice.replaceChildren(el("p", { class: refused ? "refused" : null }, text));
  }

  view.addEventListener("click", async (ev) => {
    const b = ev.target.closest("button[data-action]");
    if (!b || b.disabled) return;
    b.disabled = true;
    try {
      const r = await fetch("/api/appservices/" + encodeURIComponent(target.namespace) + "/" + encodeURIComponent(target.name) + "/" + b.dataset.action,
        { method: "POST", credentials: "same-origin" });
      const body = await r.json().catch(() => ({ error: r.status + " " + r.statusText }));
      say(body.message || body.error, !r.ok);
    } catch (e) {
      say("The request was not sent: " + e, true);
    } finally {
      b.disabled = false;
    }
  });

  const params = new URLSearchParams({ namespace: target.namespace, name: target.name });
  const stream = new EventSource("/api/stream?" + params.toString());
  stream.addEventListener("view", (ev) => {
    live.textContent = "Live";
    live.className = "";
    draw(JSON.parse(ev.data));
  });
  stream.addEventListener("problem", (ev) => {
    view.replaceChildren(el("h1", {}, target.name || "AppServices"), el("p", { class: "problem" }, JSON.parse(ev.data)));
  });
  stream.addEventListener("error", () => {
    live.textContent = "Reconnecting…";
    live.className = "down";
  });
})();
