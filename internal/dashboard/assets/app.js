// kubectl appservice dashboard's page. No framework: it draws the views
// the server pushes (server-sent events of JSON) with the DOM's own
// functions, and every string of the cluster becomes a text node, never
// markup (no innerHTML anywhere: TestPageMakesNoMarkupOfData checks it).
"use strict";

(function () {
  const view = document.getElementById("view");
  const live = document.getElementById("live");
  const notice = document.getElementById("notice");
  // busy: the actions whose request is on its way.
  const busy = new Set();

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

  // section is a part of the view that a push replaces only when its data
  // changed: a button, a link or an open <details> in an unchanged part
  // stays where it is, focused or clicked.
  function section(key, data, ...children) {
    return el("section", { "data-key": key, "data-sig": JSON.stringify(data) }, children);
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
    return [section("list", v,
      el("h1", {}, all ? "AppServices in every namespace" : "AppServices in namespace " + v.namespace),
      v.items.length === 0 ? el("p", {}, "No AppServices.") : table(v.items.length + " AppServices, live", head, rows, "list"))];
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

  function drawCanary(c) {
    const facts = [];
    if (c.traffic) facts.push(["Traffic", c.traffic]);
    if (c.pauseUntil) facts.push(["Pause left", el("span", { "data-until": c.pauseUntil }, "")]);
    if (c.gated) facts.push(["Gate", "waits for a person: Promote passes it"]);
    if (c.hash) facts.push(["Canary template", c.hash]);
    if (c.stable) facts.push(["Stable template", c.stable]);
    if (c.templates) facts.push(["Analysis", c.templates]);
    if (c.request) facts.push(["Last request", c.request]);
    return section("canary", c,
      el("h2", { id: "canary" }, "Canary"),
      el("p", { class: "canary-line", id: "canary-line" }, c.line),
      el("ol", { class: "steps", "aria-label": "Steps" }, c.steps.map((s) => {
        let text = "Step " + s.number + ": " + s.weight + "%";
        if (s.mirror) text += ", mirror " + s.mirror + "%";
        if (s.pause) text += ", pause " + s.pause;
        if (s.gate) text += ", gate";
        if (s.tests) text += ", tests " + s.tests.join(", ");
        return el("li", { class: s.current ? "current" : s.passed ? "passed" : null, "aria-current": s.current ? "step" : null, "data-number": s.number },
          (s.passed ? "✔ " : "") + text);
      })),
      el("dl", { class: "summary" }, facts.map(([k, val]) => [el("dt", {}, k), el("dd", {}, val)])));
  }

  function drawActions(v) {
    const why = [];
    const buttons = v.actions.map((a) => {
      const cls = a.action === "abort" ? "danger" : a.action === "promote" && a.enabled ? "primary" : null;
      if (!a.enabled) why.push(el("p", { class: "why", id: "why-" + a.action }, a.label + ": " + a.why));
      return el("button", {
        type: "button", class: cls, "data-action": a.action, disabled: !a.enabled,
        "aria-disabled": busy.has(a.action) ? "true" : null,
        "aria-label": a.label + " the canary of " + v.name,
        "aria-describedby": a.enabled ? null : "why-" + a.action,
      }, a.label);
    });
    return section("actions", { name: v.name, actions: v.actions },
      el("div", { class: "actions", role: "group", "aria-label": "Canary commands" }, buttons),
      why.length ? el("details", {}, el("summary", {}, "Why some buttons are off"), why) : null);
  }

  function drawDetail(v) {
    document.title = v.name + " · AppServices";
    const facts = [["Namespace", v.namespace], ["Status", state(v)]];
    if (v.message) facts.push(["Message", v.message]);
    facts.push(["Image", v.image], ["Replicas", v.replicas], ["Route", v.route]);
    const out = [section("head", facts.map(([k, val]) => [k, typeof val === "string" ? val : v.symbol + v.state]),
      el("p", {}, el("a", { href: "/" }, "← All AppServices")),
      el("h1", {}, v.name),
      el("dl", { class: "summary" }, facts.map(([k, val]) => [el("dt", {}, k), el("dd", { id: "fact-" + k.toLowerCase() }, val)])))];
    if (v.canary) out.push(drawCanary(v.canary));
    if (v.actions) out.push(drawActions(v));
    if (v.analysis) {
      out.push(section("analysis", v.analysis, el("h2", {}, "Analysis"), table("Each metric's last change against its bounds",
        ["Metric", "Result", "Value", "Bounds", "Failures", "Errors", { text: "Changed", wide: true }, { text: "Message", msg: true }],
        v.analysis.map((a) => [a.name, a.symbol + " " + a.result, a.value, a.bounds, a.failures, a.errors, a.changed, a.message || ""]), "analysis")));
    }
    if (v.deliveries) {
      out.push(section("deliveries", v.deliveries, el("h2", {}, "Notifications"), table("The last release's edges, to each NotificationDestination that hears of them",
        ["Edge", "Destination", "Result", "Attempts", { text: "Age", wide: true }, { text: "Delivered", wide: true }, { text: "Message", msg: true }],
        v.deliveries.map((d) => [d.edge, d.destination, d.result, d.attempts, d.age, d.when || "", d.message || ""]), "deliveries")));
    }
    out.push(section("objects", v.tree, el("h2", {}, "Objects"), table("The AppService's Deployments, ReplicaSets, Pods, tests and route",
      ["Name", "Kind", "Status", { text: "Age", wide: true }, { text: "Info", msg: true }],
      v.tree.map((r) => [el("span", { "data-depth": r.depth }, "\u00a0\u00a0".repeat(r.depth * 2) + (r.depth ? "└ " : "") + r.name), r.kind, r.status, r.age, r.info || ""]), "tree")));
    if (v.conditions) {
      out.push(section("conditions", v.conditions, el("h2", {}, "Conditions"), table("Status conditions", ["Type", "Status", "Reason", { text: "Message", msg: true }],
        v.conditions.map((c) => [c.type, c.status, c.reason, c.message]), "conditions")));
    }
    let events;
    if (v.eventsProblem) events = el("p", { class: "problem" }, "Not shown: " + v.eventsProblem);
    else if (!v.events) events = el("p", {}, "No Events.");
    else events = table("The latest first", ["Type", "Reason", { text: "Message", msg: true }, "Count", { text: "Age", wide: true }],
      v.events.map((e) => [e.type, e.reason, e.message, e.count, e.age]), "events");
    out.push(section("events", [v.events, v.eventsProblem], el("h2", {}, "Events"), events));
    return out;
  }

  // patch puts the sections in the view, keeping each one whose data did
  // not change (the same node, untouched), and an open <details> open.
  function patch(sections) {
    const old = new Map([...view.children].filter((c) => c.dataset.key).map((c) => [c.dataset.key, c]));
    const keep = sections.map((n) => {
      const o = old.get(n.dataset.key);
      if (o && o.dataset.sig === n.dataset.sig) return o;
      if (o && o.querySelector("details[open]") && n.querySelector("details")) n.querySelector("details").open = true;
      return n;
    });
    for (const c of [...view.children]) if (!keep.includes(c)) c.remove();
    keep.forEach((n, i) => { if (view.children[i] !== n) view.insertBefore(n, view.children[i] || null); });
  }

  // focusKey names a focused control of the view, to find it again after
  // a push replaced its section.
  function focusKey(e) {
    if (!e || e === view || !view.contains(e)) return null;
    if (e.dataset.action) return "[data-action=\"" + e.dataset.action + "\"]";
    if (e.tagName === "SUMMARY") return "summary";
    if (e.getAttribute("href")) return "a[href=\"" + e.getAttribute("href") + "\"]";
    return null;
  }

  function draw(v) {
    const focused = document.activeElement;
    const key = focusKey(focused);
    patch(target.name ? drawDetail(v) : drawList(v));
    view.dataset.state = v.state || "";
    const current = v.canary ? v.canary.steps.findIndex((s) => s.current) : -1;
    view.dataset.step = current >= 0 ? String(current + 1) : "";
    view.dataset.phase = v.canary ? v.canary.phase : "";
    countdown();
    if (key && !view.contains(focused)) {
      const again = view.querySelector(key);
      if (again && !again.disabled) again.focus();
      else view.focus();
    }
  }

  let noticeTimer;
  function say(text, refused) {
    notice.replaceChildren(el("p", { class: refused ? "refused" : null }, text));
    clearTimeout(noticeTimer);
    noticeTimer = setTimeout(() => notice.replaceChildren(), 20000);
  }

  // A button's request: one at a time per action (aria-disabled while it
  // is sent, so that the focus stays on it).
  view.addEventListener("click", async (ev) => {
    const b = ev.target.closest("button[data-action]");
    if (!b || b.disabled || busy.has(b.dataset.action)) return;
    const action = b.dataset.action;
    busy.add(action);
    b.setAttribute("aria-disabled", "true");
    try {
      const r = await fetch("/api/appservices/" + encodeURIComponent(target.namespace) + "/" + encodeURIComponent(target.name) + "/" + action,
        { method: "POST", credentials: "same-origin" });
      const text = await r.text();
      let body;
      try {
        body = JSON.parse(text);
      } catch (e) {
        body = { error: text.trim() || r.status + " " + r.statusText };
      }
      say(body.message || body.error, !r.ok);
    } catch (e) {
      say("The request was not sent: " + e, true);
    } finally {
      busy.delete(action);
      const now = view.querySelector("button[data-action=\"" + action + "\"]");
      if (now) now.removeAttribute("aria-disabled");
    }
  });

  function setLive(text, down) {
    if (live.textContent !== text) live.textContent = text;
    live.className = down ? "down" : "";
  }

  // The stream of views. A hidden tab closes its stream (a browser keeps at
  // most six connections to a host: six open tabs would leave the buttons
  // none) and opens it again when shown, getting the view at once.
  const params = new URLSearchParams({ namespace: target.namespace, name: target.name });
  let stream = null;
  function connect() {
    if (stream) return;
    stream = new EventSource("/api/stream?" + params.toString());
    stream.addEventListener("view", (ev) => {
      setLive("Live", false);
      draw(JSON.parse(ev.data));
    });
    stream.addEventListener("problem", (ev) => {
      setLive("Live", false);
      view.replaceChildren(el("h1", {}, target.name || "AppServices"), el("p", { class: "problem" }, JSON.parse(ev.data)));
      delete view.dataset.step;
    });
    stream.addEventListener("error", () => {
      if (stream && stream.readyState === EventSource.CLOSED) {
        // Refused: the dashboard was started again, with a new token.
        setLive("Disconnected: open the URL kubectl appservice dashboard printed", true);
        stream = null;
      } else {
        setLive("Reconnecting…", true);
      }
    });
  }
  function disconnect() {
    if (stream) stream.close();
    stream = null;
  }
  document.addEventListener("visibilitychange", () => {
    if (document.visibilityState === "hidden") disconnect();
    else connect();
  });
  window.addEventListener("pagehide", disconnect);
  connect();
})();
