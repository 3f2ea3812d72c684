/**
 * The page's script, served at /app.js. Plain browser JavaScript, no bundler. Every piece of
 * model text goes into the page through textContent, never innerHTML, so a completion that holds
 * markup shows as the characters it is.
 */
export const APP_JS = `"use strict";
(function () {
  var RESTART = "the run restarted or the token is wrong: open the link the run printed";
  var STORE = "pbrl-annotator";
  var VERDICT_KEYS = { "1": "left", "2": "right", "3": "tie", "4": "both_bad" };
  var token = new URLSearchParams(location.search).get("token") || "";
  function el(id) { return document.getElementById(id); }
  var nameInput = el("name");
  var message = el("message");
  var comparison = el("comparison");
  var done = el("done");
  var finished = el("finished");
  var rationale = el("rationale");
  var lease = null;
  var busy = false;
  var stopped = false;
  var retry = null;

  function say(text, kind) {
    message.textContent = text;
    message.className = kind || "";
  }

  function annotator() { return nameInput.value.trim(); }

  function denied() {
    stopped = true;
    lease = null;
    comparison.hidden = true;
    done.hidden = true;
    say(RESTART, "error");
  }

  async function api(path, body) {
    var init = { method: body === undefined ? "GET" : "POST", headers: { "X-Pbrl-Token": token }, cache: "no-store", credentials: "same-origin" };
    if (body !== undefined) {
      init.headers["Content-Type"] = "application/json";
      init.body = JSON.stringify(body);
    }
    var response = await fetch(path, init);
    if (response.status === 401 || response.status === 403) {
      denied();
      throw new Error("denied");
    }
    var data = {};
    try { data = await response.json(); } catch (e) { data = { error: "the reply was not JSON" }; }
    return { status: response.status, body: data };
  }

  function block(title, text) {
    var part = document.createElement("section");
    part.className = "part";
    var heading = document.createElement("h3");
    heading.textContent = title;
    var pre = document.createElement("pre");
    pre.textContent = text;
    part.append(heading, pre);
    return part;
  }

  function showParts(container, roles, texts) {
    container.replaceChildren();
    texts.forEach(function (text, i) { container.append(block(roles[i] || "agent " + (i + 1), text)); });
  }

  function show(next) {
    lease = next;
    comparison.dataset.lease = next.leaseId;
    comparison.dataset.comparison = next.comparisonId;
    el("item").textContent = "round " + next.round + ", item " + next.itemIndex + (next.itemId ? " (" + next.itemId + ")" : "");
    var prompts = el("prompts");
    prompts.replaceChildren();
    if (next.prompts.length === 1) prompts.append(block("prompt", next.prompts[0]));
    else next.prompts.forEach(function (p, i) { prompts.append(block("prompt for " + (next.roles[i] || "agent " + (i + 1)), p)); });
    showParts(el("left").querySelector(".parts"), next.roles, next.left);
    showParts(el("right").querySelector(".parts"), next.roles, next.right);
    done.hidden = true;
    comparison.hidden = false;
  }

  // the run opens no more rounds: nothing left to ask for
  function showFinished() {
    stopped = true;
    lease = null;
    clearTimeout(retry);
    delete comparison.dataset.lease;
    comparison.hidden = true;
    done.hidden = true;
    finished.hidden = false;
  }

  function showDone() {
    lease = null;
    delete comparison.dataset.lease;
    comparison.hidden = true;
    done.hidden = false;
    // a new round may open later: look again
    clearTimeout(retry);
    retry = setTimeout(loadNext, 5000);
  }

  async function loadNext() {
    if (stopped) return;
    clearTimeout(retry);
    if (annotator() === "") {
      lease = null;
      comparison.hidden = true;
      say("type your name and press Enter to start", "warn");
      nameInput.focus();
      return;
    }
    try {
      var r = await api("/api/next?annotator=" + encodeURIComponent(annotator()));
      if (r.status !== 200) return say("cannot get a comparison: " + (r.body.error || r.status), "error");
      if (r.body.done && r.body.finished) return showFinished();
      if (r.body.done) showDone();
      else show(r.body);
      // the header's counts change with every lease and pick: do not wait for the next tick
      pollStatus();
    } catch (e) {
      if (!stopped) say("the run cannot be reached: " + e.message, "error");
    }
  }

  async function pick(verdict) {
    if (lease === null || busy || stopped) return;
    busy = true;
    say("saving...", "");
    try {
      var r = await api("/api/label", { leaseId: lease.leaseId, annotator: annotator(), verdict: verdict, rationale: rationale.value.trim() === "" ? null : rationale.value });
      if (r.status === 200 && r.body.saved === true) {
        say("saved", "ok");
        rationale.value = "";
        await loadNext();
      } else if (r.status === 409) {
        say("not saved: " + r.body.error + "; here is the next one", "warn");
        await loadNext();
      } else {
        say("not saved: " + (r.body.error || "status " + r.status), "error");
      }
    } catch (e) {
      if (!stopped) say("not saved: the run cannot be reached (" + e.message + ")", "error");
    } finally {
      busy = false;
    }
  }

  async function skip() {
    if (lease === null || busy || stopped) return;
    busy = true;
    try {
      await api("/api/skip", { leaseId: lease.leaseId });
      say("skipped", "");
      await loadNext();
    } catch (e) {
      if (!stopped) say("the run cannot be reached: " + e.message, "error");
    } finally {
      busy = false;
    }
  }

  function drawCurve(points) {
    var line = el("curve-line");
    var label = el("curve-label");
    var finite = (points || []).filter(function (p) { return Number.isFinite(p.round) && Number.isFinite(p.value); });
    if (finite.length === 0) {
      line.setAttribute("points", "");
      label.textContent = "no evaluation yet";
      return;
    }
    var xs = finite.map(function (p) { return p.round; });
    var ys = finite.map(function (p) { return p.value; });
    var x0 = Math.min.apply(null, xs), x1 = Math.max.apply(null, xs);
    var y0 = Math.min.apply(null, ys), y1 = Math.max.apply(null, ys);
    var w = 200, h = 50, pad = 4;
    line.setAttribute("points", finite.map(function (p) {
      var x = pad + (x1 === x0 ? (w - 2 * pad) / 2 : ((p.round - x0) / (x1 - x0)) * (w - 2 * pad));
      var y = h - pad - (y1 === y0 ? (h - 2 * pad) / 2 : ((p.value - y0) / (y1 - y0)) * (h - 2 * pad));
      return x.toFixed(1) + "," + y.toFixed(1);
    }).join(" "));
    var last = finite[finite.length - 1];
    label.textContent = "eval " + Number(last.value.toPrecision(4)) + " at round " + last.round;
  }

  async function pollStatus() {
    if (stopped) return;
    try {
      var r = await api("/api/status");
      if (r.status !== 200) return;
      var s = r.body;
      if (s.finished) showFinished();
      var where = [s.run, s.round !== undefined ? "round " + s.round : ""].filter(Boolean).join(", ");
      el("run").textContent = where === "" ? "" : where + ":";
      var p = s.progress;
      el("progress").textContent = p ? p.decided + " of " + p.total + " decided, " + p.labels + (p.labels === 1 ? " label, " : " labels, ") + p.inFlight + " open now" : "no round open";
      var a = s.agreement;
      el("agreement").textContent = a && a.mean !== null ? "; agreement " + Math.round(a.mean * 100) + "% over " + a.comparisons + " with several labels" : "";
      drawCurve(s.evalCurve);
    } catch (e) {
      // a missed poll is retried on the next tick
    }
  }

  document.addEventListener("keydown", function (e) {
    if (e.ctrlKey || e.metaKey || e.altKey) return;
    var t = e.target;
    if (t && (t.tagName === "TEXTAREA" || t.tagName === "INPUT")) {
      // typing a rationale or a name never picks; Esc leaves the box, Enter in the name starts
      if (e.key === "Escape") t.blur();
      if (t === nameInput && e.key === "Enter") { e.preventDefault(); nameInput.blur(); }
      return;
    }
    var verdict = VERDICT_KEYS[e.key];
    if (verdict) { e.preventDefault(); pick(verdict); }
    else if (e.key === "s" || e.key === "S") { e.preventDefault(); skip(); }
    else if ((e.key === "r" || e.key === "R") && lease !== null) { e.preventDefault(); rationale.focus(); }
    else if (e.key === "n" || e.key === "N") { e.preventDefault(); nameInput.focus(); nameInput.select(); }
  });

  nameInput.addEventListener("change", function () {
    var name = annotator();
    try { localStorage.setItem(STORE, name); } catch (e) { /* private mode: the name is not kept */ }
    say(name === "" ? "type your name and press Enter to start" : "labelling as " + name, "");
    loadNext();
  });

  document.querySelectorAll("[data-verdict]").forEach(function (b) { b.addEventListener("click", function () { pick(b.dataset.verdict); }); });
  document.querySelector("[data-skip]").addEventListener("click", skip);

  try { nameInput.value = localStorage.getItem(STORE) || ""; } catch (e) { nameInput.value = ""; }
  pollStatus();
  setInterval(pollStatus, 3000);
  loadNext();
})();
`;
