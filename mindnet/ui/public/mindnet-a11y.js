// mindnet's accessibility fixes for the chat page (loaded by mindnet.js; checked by axe-core in
// tests/test_ui_a11y.py). Most of the page is Chainlit's own React code, which mindnet does not fork: where its
// markup lacks what a screen reader or a keyboard needs, this script adds it to the DOM as it appears, through
// standard attributes only (aria-label, role, id, tabindex), never by changing what Chainlit's code does.
// 1. Names for icon-only buttons. Chainlit shows their purpose only as a hover tooltip, which a screen reader
//    never hears: each gets an aria-label with the tooltip's words (Chainlit's English texts), found by the
//    button's id, class or icon.
// 2. Roles and references Chainlit gets wrong: the chat's options menu trigger is a <div> with button
//    attributes (role="button"); the side panel's resize handle points (aria-controls) at an id the panel does
//    not carry (the id is added); the phone's sources dialog is named by an id that is not there (its title's
//    id is used); the sidebar's outer <ul> holds no list items (role="none"); an image without alt text (the
//    chat's icon) gets one.
// 3. Keyboard: Enter on a citation "[n]" opens its source and moves the focus into the panel; Esc closes the
//    panel and gives the focus back to the citation that opened it. On phones the panel is a Radix dialog that
//    closes by itself (Esc, its close button) and then focuses its trigger: Chainlit opens it from its state,
//    with no trigger, so the focus fell to <body>; once the dialog is gone, the citation gets it back.
(function () {
  "use strict";

  // 1. names for icon-only buttons
  var BY_ID = {
    "sidebar-trigger-button": "Show or hide past chats",
    "search-chats-button": "Search chats",
    "new-chat-button": "New chat",
    "chat-settings-open-modal": "Settings",
    "chat-submit": "Send message",
    "stop-button": "Stop",
    "theme-toggle": "Switch theme",
    "thread-options": "Chat options",
  };
  var BY_CLASS = [
    ["positive-feedback", "Helpful"],
    ["negative-feedback", "Not helpful"],
  ];
  var BY_ICON = {   // lucide icon names (Chainlit's icon set)
    "copy": "Copy to clipboard", "check": "Copied", "arrow-left": "Close", "x": "Close",
    "panel-left": "Show or hide past chats", "square-pen": "New chat", "search": "Search chats",
    "settings-2": "Settings", "settings": "Settings", "sun": "Switch theme", "moon": "Switch theme",
    "paperclip": "Attach files", "mic": "Start recording", "square": "Stop", "thumbs-up": "Helpful",
    "thumbs-down": "Not helpful", "ellipsis": "More options", "wrench": "Tools", "history": "Show history",
    "chevron-down": "Show more", "chevron-up": "Show less", "pencil": "Edit", "trash-2": "Delete",
    "arrow-down": "Scroll to the latest message",   // shown only while the chat is not at its bottom
  };

  function hasName(el) {
    return !!((el.textContent || "").trim() || el.getAttribute("aria-label") || el.getAttribute("aria-labelledby") ||
              el.getAttribute("title"));
  }

  function iconName(el) {
    var svg = el.querySelector("svg[class*=lucide-]");
    var m = svg && /(?:^|\s)lucide-([a-z0-9-]+)/.exec(svg.getAttribute("class") || "");
    return m ? m[1] : "";
  }

  function nameFor(el) {
    if (el.id && BY_ID[el.id]) return BY_ID[el.id];
    if (el.closest("#side-view-title")) return "Close the sources panel";
    var cls = el.getAttribute("class") || "";
    for (var i = 0; i < BY_CLASS.length; i++) if (cls.indexOf(BY_CLASS[i][0]) >= 0) return BY_CLASS[i][1];
    var icon = iconName(el);
    if (BY_ICON[icon]) return BY_ICON[icon];
    return icon ? icon.replace(/-/g, " ") : "";
  }

  var BUTTONS = "button, [role=button], #thread-options";

  function nameButtons(buttons) {
    buttons = buttons || document.querySelectorAll(BUTTONS);
    for (var i = 0; i < buttons.length; i++) {
      var b = buttons[i];
      if (b.dataset.mindnetNamed === nameFor(b) && hasName(b)) continue;
      if (b.dataset.mindnetNamed === undefined && hasName(b)) continue;   // Chainlit (or mindnet) named it
      var name = nameFor(b);   // the icon can change (copy -> check): the name follows it
      if (name) {
        b.setAttribute("aria-label", name);
        b.dataset.mindnetNamed = name;
      }
    }
  }

  // 2. roles and references
  function fixRoles() {
    var options = document.querySelectorAll("#thread-options:not([role])");
    for (var i = 0; i < options.length; i++) {
      // a div with aria-expanded/aria-haspopup: allowed on a button. Not made focusable: it sits inside the
      // thread's link and button (a control inside a control); the keyboard reaches the thread by its link
      options[i].setAttribute("role", "button");
    }
    var handles = document.querySelectorAll("[role=separator][aria-controls]");
    for (var j = 0; j < handles.length; j++) {
      var id = handles[j].getAttribute("aria-controls");
      if (document.getElementById(id)) continue;
      var panel = document.querySelector('[data-panel-id="' + CSS.escape(id) + '"]');
      if (panel && !panel.id) panel.id = id;
      else handles[j].removeAttribute("aria-controls");
    }
    var lists = document.querySelectorAll("ul:not([role]), ol:not([role])");
    for (var k = 0; k < lists.length; k++) {
      var kids = lists[k].children;
      var items = 0;
      for (var n = 0; n < kids.length; n++) if (kids[n].tagName === "LI") items += 1;
      if (kids.length && !items) lists[k].setAttribute("role", "none");   // a wrapper, not a list
    }
    // a dialog (the sources panel on a phone) named by a title id Chainlit replaced ("side-view-title")
    var dialogs = document.querySelectorAll("[role=dialog][aria-labelledby], [role=dialog][aria-describedby]");
    for (var d = 0; d < dialogs.length; d++) {
      var dialog = dialogs[d];
      var label = dialog.getAttribute("aria-labelledby");
      if (label && !document.getElementById(label)) {
        var title = dialog.querySelector("#side-view-title");
        if (title) dialog.setAttribute("aria-labelledby", "side-view-title");
        else dialog.removeAttribute("aria-labelledby");
      }
      var about = dialog.getAttribute("aria-describedby");
      if (about && !document.getElementById(about)) dialog.removeAttribute("aria-describedby");
    }
    var images = document.querySelectorAll("img:not([alt])");
    for (var m = 0; m < images.length; m++) {
      var src = images[m].getAttribute("src") || "";
      images[m].alt = /\/public\/(icon|logo_[a-z]+)\.svg/.test(src) ? "mindnet" : "";
    }
  }

  // 3. keyboard: into the sources panel and back
  var opener = null;      // the citation (or source link) that opened the panel
  var focusWanted = false;

  function panelContent() {
    var content = document.getElementById("side-view-content");
    return content && content.children.length ? content : null;
  }

  function focusPanel() {
    if (!focusWanted) return;
    var content = panelContent();
    if (!content) return;
    focusWanted = false;
    if (!content.hasAttribute("tabindex")) content.setAttribute("tabindex", "-1");
    if (!content.hasAttribute("role")) {
      content.setAttribute("role", "region");
      if (document.getElementById("side-view-title")) content.setAttribute("aria-labelledby", "side-view-title");
      else content.setAttribute("aria-label", "Sources");
    }
    content.focus({ preventScroll: false });
  }

  document.addEventListener("click", function (e) {
    var link = e.target && e.target.closest && e.target.closest("a.element-link");
    if (!link) return;
    opener = link;
    focusWanted = true;
    // Chainlit renders the panel after this click: the observer below focuses it once it is there
    requestAnimationFrame(focusPanel);
  }, true);

  function closeButton() {
    var title = document.getElementById("side-view-title");
    if (title && !title.closest("[role=dialog]")) return title.querySelector("button");
    return null;   // on phones the panel is a dialog: Esc closes it by itself (Radix)
  }

  function giveFocusBack() {
    var target = opener && opener.isConnected ? opener : null;
    if (!target && opener) {   // the answer was re-rendered: the citation with the same text
      var links = document.querySelectorAll("a.element-link");
      for (var i = links.length - 1; i >= 0; i--) {
        if (links[i].textContent === opener.textContent) { target = links[i]; break; }
      }
    }
    if (target) target.focus();
  }

  document.addEventListener("keydown", function (e) {
    if (e.key !== "Escape" || e.defaultPrevented) return;
    if (document.querySelector("[role=menu], [role=listbox], .command-item")) return;  // Esc closes those first
    var content = document.getElementById("side-view-content");
    if (!content || content.closest("[role=dialog]")) return;   // a phone's dialog: Radix closes it by itself
    var close = closeButton();
    if (!close) return;
    e.preventDefault();
    close.click();
    giveFocusBack();
  });

  var dialog = null;   // the phone's sources dialog while it is open
  function focusBackAfterDialog() {
    var content = document.getElementById("side-view-content");
    var open = content && content.closest("[role=dialog]");
    if (open) {
      dialog = open;
      return;
    }
    if (!dialog || dialog.isConnected) return;
    dialog = null;
    var active = document.activeElement;
    if (!active || active === document.body) giveFocusBack();   // not where the user went since
    opener = null;    // a dialog Chainlit opens by itself later gives the focus to no old citation
  }

  var scheduled = false;
  function fixAll() {
    scheduled = false;
    nameButtons();
    fixRoles();
    focusPanel();
    focusBackAfterDialog();
  }
  // A button that comes and goes (Chainlit's "scroll to the bottom" arrow shows while the chat is not at its
  // bottom) is named at once, in the same task that added it: waiting for the next frame left a window in
  // which it had no name (axe found one under load). The rest waits for the frame, once per frame however
  // many nodes a streamed answer changes.
  function addedButtons(records) {
    var found = [];
    for (var i = 0; i < records.length; i++) {
      var added = records[i].addedNodes;
      for (var j = 0; j < added.length; j++) {
        var node = added[j];
        if (node.nodeType !== 1) continue;
        if (node.matches(BUTTONS)) found.push(node);
        var inside = node.querySelectorAll(BUTTONS);
        for (var k = 0; k < inside.length; k++) found.push(inside[k]);
      }
    }
    return found;
  }

  new MutationObserver(function (records) {
    nameButtons(addedButtons(records));
    if (!scheduled) { scheduled = true; requestAnimationFrame(fixAll); }
  }).observe(document.documentElement, { childList: true, subtree: true });
  fixAll();
})();
