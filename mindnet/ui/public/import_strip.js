// mindnet's import strip (loaded by mindnet.js, served from this machine): while an import runs, a strip at the
// top of every page says how far it is - notes written, texts embedded of the total, texts/s, time left - from
// the server's own GET /health (`import` and `live`; see docs/vault.md). It stays until phase 2 (the embedding)
// has ended. After a re-import of the watcher it says "re-imported 'X' 2 s ago" with a link that opens the note
// (the chat's /open link, as in the sources) for a minute. The page moves down below the strip; what is under the
// pointer stays where it is (its scrolling box is scrolled along), so a click on its way still lands on it.
(function () {
  "use strict";
  var script = document.currentScript;
  var BASE = new URL("../../", script ? script.src : window.location.href);   // <root>/ui/public/ -> <root>/
  var HEALTH = new URL("health", BASE).href;
  var BUSY_MS = 1000;       // poll while an import runs
  var IDLE_MS = 3000;       // poll while none runs (a watcher import may begin)
  var RECENT_S = 60;        // how long "re-imported 'X' ..." stays
  var strip = null;
  var pointer = null;       // where the pointer was last seen

  function notePointer(e) { pointer = { x: e.clientX, y: e.clientY }; }
  document.addEventListener("pointermove", notePointer, { capture: true, passive: true });
  document.addEventListener("pointerdown", notePointer, { capture: true, passive: true });

  function scrollingBox(e) {
    for (; e && e !== document.body && e !== document.documentElement; e = e.parentElement) {
      var overflow = window.getComputedStyle(e).overflowY;
      if ((overflow === "auto" || overflow === "scroll") && e.scrollHeight > e.clientHeight) return e;
    }
    return null;
  }

  // `change` (the strip shown, hidden or grown) without moving what is under the pointer (else the middle of the
  // screen): the page moved down or up by the strip's height, its scrolling box is scrolled by as much.
  // (A button moving between a click's press and release is not clicked: loaded CI lost "Undo" clicks so.)
  function keepInPlace(change) {
    var at = pointer || { x: window.innerWidth / 2, y: window.innerHeight / 2 };
    var anchor = document.elementFromPoint(at.x, at.y);
    if (anchor && strip && strip.contains(anchor)) anchor = null;
    var before = anchor ? anchor.getBoundingClientRect().top : 0;
    change();
    if (!anchor || !anchor.isConnected) return;
    var moved = anchor.getBoundingClientRect().top - before;
    var box = moved ? scrollingBox(anchor) : null;
    if (box) box.scrollTop += moved;
  }

  function el(tag, cls, text) {
    var e = document.createElement(tag);
    if (cls) e.className = cls;
    if (text !== undefined) e.textContent = text;
    return e;
  }

  function seconds(s) {
    s = Math.max(1, Math.round(s));
    if (s < 60) return s + " s";
    if (s < 3600) return Math.round(s / 60) + " min";
    return (s / 3600).toFixed(1) + " h";
  }

  function progressParts(p) {
    if (!p || !p.running) return null;
    var parts = [];
    if (p.phase === "notes") {
      parts.push(p.notes_to_write ? p.notes_written + " of " + p.notes_to_write + " notes written"
                                  : "listing the notes of the vault");
    } else {
      parts.push("all " + p.notes + " notes written");
    }
    if (p.texts_total) parts.push(p.texts_embedded + " of " + p.texts_total + " texts embedded");
    if (p.texts_per_s) parts.push(p.texts_per_s.toFixed(1) + " texts/s");
    if (p.eta_seconds !== null && p.eta_seconds !== undefined) parts.push("about " + seconds(p.eta_seconds) + " left");
    return parts;
  }

  function ensureStrip() {
    if (strip && document.body.contains(strip)) return strip;
    strip = el("div", "mindnet-import-strip");
    strip.id = "mindnet-import-strip";
    strip.setAttribute("role", "status");
    strip.setAttribute("aria-live", "polite");
    document.body.appendChild(strip);
    return strip;
  }

  function hide() {
    if (!strip || strip.hidden) return;
    keepInPlace(function () {
      strip.hidden = true;
      document.documentElement.classList.remove("mindnet-strip-on");
    });
  }

  function show(health) {
    var p = health["import"] || {};
    var live = health.live || {};
    var last = live.last_reimport;
    var parts = progressParts(p);
    var recent = last && last.path_count > 0 && last.seconds_ago <= RECENT_S;
    if (!parts && !recent) { hide(); return; }
    keepInPlace(function () { fill(ensureStrip(), p, parts, recent ? last : null); });
  }

  function fill(s, p, parts, last) {
    s.replaceChildren();
    if (parts) {
      s.dataset.phase = p.phase;
      s.appendChild(el("strong", null, "Importing your vault: "));
      s.appendChild(el("span", "mindnet-strip-progress", parts.join(" · ")));
      var bar = el("span", "mindnet-strip-bar");
      var done = el("span");
      var share = p.texts_total ? p.texts_embedded / p.texts_total : 0;
      done.style.width = Math.round(100 * Math.min(1, share)) + "%";
      bar.appendChild(done);
      s.appendChild(bar);
    } else {
      s.dataset.phase = "idle";
    }
    if (last) {
      var note = el("span", "mindnet-strip-reimport");
      note.appendChild(document.createTextNode("re-imported '" + last.label + "' " + seconds(last.seconds_ago) + " ago "));
      var open = el("a", null, "open");
      open.href = new URL("open?path=" + encodeURIComponent(last.paths[0] || ""), BASE).href;
      open.title = "open " + (last.paths[0] || "") + " in Obsidian";
      note.appendChild(open);
      s.appendChild(note);
    }
    s.hidden = false;
    document.documentElement.style.setProperty("--mindnet-strip-h", Math.ceil(s.getBoundingClientRect().height) + "px");
    document.documentElement.classList.add("mindnet-strip-on");
  }

  function poll() {
    var next = IDLE_MS;
    fetch(HEALTH, { cache: "no-store", credentials: "same-origin" })
      .then(function (r) {
        if (!r.ok) throw new Error("GET /health answered " + r.status);
        return r.json();
      })
      .then(function (health) {
        show(health);
        if (health["import"] && health["import"].running) next = BUSY_MS;
      })
      .catch(function () {
        if (strip && !strip.hidden) {   // it showed an import: say why it stopped changing
          keepInPlace(function () {
            strip.replaceChildren(el("span", null,
              "The mindnet server does not answer; is mindnet serve still running? Trying again."));
            document.documentElement.style.setProperty("--mindnet-strip-h",
                                                       Math.ceil(strip.getBoundingClientRect().height) + "px");
          });
        }
      })
      .then(function () { setTimeout(poll, next); });
  }

  if (document.body) poll(); else document.addEventListener("DOMContentLoaded", poll);
})();
