// mindnet's page script (served from this machine, like every asset of the chat; see mindnet/ui/mount.py).
// 1. Commands take no argument, so picking one (Enter or click in the "/" menu) runs it at once instead of
//    leaving a chip that would turn the next question into that command.
// 2. On narrow screens Chainlit opens the sources drawer over the chat whenever an answer brings sources;
//    close it unless the user opened it (a click on a citation or a source link).
// 3. An unsaved interview draft is kept in this browser (the editor stores it as it is typed); after a reload
//    the page hands it back to the server, which opens it again.
// 4. A very long message of the user (a pasted note) is shown collapsed to a few lines with a "Show all"
//    button, not as a bubble thousands of pixels tall that pushes the answer out of sight.
// 5. On Stop, Chainlit adds a message of its own ("Task manually stopped.", fixed English); the stopped answer
//    already says "stopped by you" and keeps its sources and rating: one message, not two.
// 6. Each conversation has its own URL: mounted under /ui, Chainlit keeps the address at /ui/ (it moves to
//    /thread/<id> only when served at "/"), so a reload opened an empty chat. After the first answer the server
//    sends the thread's id (mindnet/ui/resume.py); the address becomes <root>/thread/<id>, told to the router.
//    For the router that is another page (Home -> Thread): Chainlit draws the chat anew and, mounting its
//    messages again, re-derives the side panel from every source of the session, titled with the last one's
//    name ("[5]"), over the answer's "5 sources for: ...". Once that panel is on the screen (never earlier: it
//    would win over anything sent before it), the page tells the server, which points the panel at the
//    answer's sources again under their title. On phones the panel Chainlit opens is closed (2.).
// 7. The import strip (import_strip.js, beside this file): how far a running import is, on every page.
// 8. The accessibility fixes (names for Chainlit's icon buttons, keyboard into and out of the sources panel) are
//    in mindnet-a11y.js, served next to this script and loaded from here (Chainlit takes one custom script).
(function () {
  var me = document.currentScript;
  if (!me || !me.src) return;
  var a11y = document.createElement("script");
  a11y.src = me.src.replace(/mindnet\.js(\?.*)?$/, "mindnet-a11y.js");
  document.head.appendChild(a11y);
})();
(function () {
  "use strict";
  var NARROW = 768; // Chainlit's own mobile breakpoint

  // 7. the import strip
  var strip = document.createElement("script");
  strip.src = new URL("import_strip.js", document.currentScript ? document.currentScript.src : window.location.href).href;
  document.head.appendChild(strip);

  // 1. commands run at once
  function menuOpen() {
    return !!document.querySelector(".command-item");
  }
  function submitPickedCommand() {
    setTimeout(function () {
      var input = document.getElementById("chat-input");
      var submit = document.getElementById("chat-submit");
      if (input && submit && !input.value.trim() && !submit.disabled) submit.click();
    }, 80);
  }
  document.addEventListener("keydown", function (e) {
    if (e.key === "Enter" && !e.shiftKey && e.target && e.target.id === "chat-input" && menuOpen()) {
      submitPickedCommand();
    }
  }, true);
  document.addEventListener("click", function (e) {
    if (e.target && e.target.closest && e.target.closest(".command-item")) submitPickedCommand();
  }, true);

  // 2. no drawer that opens by itself on phones
  // the user asked for the drawer: it stays until it is closed (a slow phone may take seconds to show it, and
  // Chainlit may render its content twice)
  var userOpened = false;
  var drawerShown = false;
  function markOpened(e) {
    var t = e.target;
    if (t && t.closest && t.closest(".element-link, [data-mindnet-opens-panel]")) userOpened = true;
  }
  document.addEventListener("pointerdown", markOpened, true);
  document.addEventListener("click", markOpened, true);   // Enter on a citation (the keyboard) clicks it too
  function closeAutoOpenedDrawer() {
    var content = document.getElementById("side-view-content");
    if (!content) {
      if (drawerShown) drawerShown = userOpened = false;   // closed: the next one that opens by itself closes
      return;
    }
    drawerShown = true;
    if (window.innerWidth >= NARROW || content.dataset.mindnetSeen) return;
    content.dataset.mindnetSeen = "1";
    if (userOpened) return; // the user asked for it
    var dialog = content.closest("[role=dialog]");
    var close = dialog && dialog.querySelector("button[type=button] .sr-only");
    if (close) {
      close.parentElement.click();
    } else {
      document.dispatchEvent(new KeyboardEvent("keydown", { key: "Escape", bubbles: true }));
    }
  }

  // 3. hand a kept draft back after a reload
  var DRAFT_KEY = "mindnet.draft";
  var restored = false;
  function restoreDraft() {
    if (restored || !document.getElementById("chat-input")) return;
    restored = true;
    var raw = null;
    try { raw = window.localStorage.getItem(DRAFT_KEY); } catch (err) { raw = null; }
    if (!raw) return;
    try {
      var draft = JSON.parse(raw);
      if (draft && typeof draft.markdown === "string") {
        // wait until the chat session is up (the settings button is sent by the server at chat start)
        var tries = 0;
        var timer = setInterval(function () {
          tries += 1;
          if (document.getElementById("chat-settings-open-modal") || tries > 100) {
            clearInterval(timer);
            window.postMessage({ mindnet: "restore_draft", draft: draft }, window.location.origin);
          }
        }, 100);
      }
    } catch (err) {
      window.localStorage.removeItem(DRAFT_KEY);
    }
  }

  // 4. long messages collapsed
  var LONG_PX = 320;
  function collapseLongMessages() {
    var bodies = document.querySelectorAll("[data-step-type=user_message] .message-content:not([data-mindnet-sized])");
    for (var i = 0; i < bodies.length; i++) {
      var body = bodies[i];
      if (!body.textContent.trim()) continue; // not rendered yet
      body.dataset.mindnetSized = "1";
      if (body.scrollHeight <= LONG_PX * 1.5) continue;
      body.classList.add("mindnet-collapsed");
      var toggle = document.createElement("button");
      toggle.type = "button";
      toggle.className = "mindnet-show-all";
      toggle.setAttribute("aria-expanded", "false");
      toggle.textContent = "Show all (" + body.textContent.length.toLocaleString() + " characters)";
      toggle.addEventListener("click", (function (b, t) {
        return function () {
          var open = b.classList.toggle("mindnet-collapsed") === false;
          t.setAttribute("aria-expanded", open ? "true" : "false");
          t.textContent = open ? "Show less" : "Show all (" + b.textContent.length.toLocaleString() + " characters)";
        };
      })(body, toggle));
      body.parentElement.appendChild(toggle);
    }
  }

  // 5. no second "stopped" message
  var CHAINLIT_STOPPED = "Task manually stopped.";
  function hideChainlitStopMessage() {
    var steps = document.querySelectorAll("[data-step-type=assistant_message]:not([data-mindnet-checked])");
    for (var i = 0; i < steps.length; i++) {
      var body = steps[i].querySelector(".message-content");
      if (!body || !body.textContent.trim()) continue; // not rendered yet
      steps[i].dataset.mindnetChecked = "1";
      if (body.textContent.trim() === CHAINLIT_STOPPED) steps[i].hidden = true;
    }
  }

  // 6. the thread's own URL
  window.addEventListener("message", function (e) {
    var d = e.data;
    if (e.source !== window || !d || d.mindnet !== "thread" || !/^[0-9a-f-]{36}$/.test(String(d.thread_id))) return;
    var base = window.location.pathname.replace(/\/(thread\/[^/]*)?\/?$/, "");
    var url = base + "/thread/" + d.thread_id;
    if (window.location.pathname === url) return;
    var shown = document.getElementById("side-view-content");
    window.history.replaceState(window.history.state, "", url);
    // when, for whoever waits for the page drawn anew (the draft editor marks its mounts alike)
    document.documentElement.dataset.mindnetMoved = String(performance.now());
    window.dispatchEvent(new PopStateEvent("popstate", { state: window.history.state }));
    if (window.innerWidth >= NARROW) awaitRederivedPanel(shown);
  });
  function awaitRederivedPanel(shown) {
    var observer = new MutationObserver(check);
    function stop() {
      observer.disconnect();
      document.removeEventListener("pointerdown", stop, true);
      document.removeEventListener("keydown", stop, true);
    }
    function check() {
      var content = document.getElementById("side-view-content");
      var title = document.getElementById("side-view-title");
      // the panel drawn anew (not the one shown before the move), under Chainlit's name for it: a source's "[n]"
      if (!content || content === shown || !title || !/^\[\d+\]$/.test(title.textContent.trim())) return;
      stop();
      window.postMessage({ mindnet: "thread_shown" }, window.location.origin);
    }
    observer.observe(document.documentElement, { childList: true, subtree: true, characterData: true });
    // the user acts first (no source, so no panel, or the page was not drawn anew): nothing to point at
    document.addEventListener("pointerdown", stop, true);
    document.addEventListener("keydown", stop, true);
    check();
  }

  new MutationObserver(function () {
    closeAutoOpenedDrawer();
    restoreDraft();
    collapseLongMessages();
    hideChainlitStopMessage();
  }).observe(document.documentElement, { childList: true, subtree: true });
})();
