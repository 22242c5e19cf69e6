// Interview draft editor (Chainlit custom element). Props: draft_id, markdown, note_type, title, warnings,
// status ("editing" | "saved" | "discarded" | "error" | "conflict"), detail, conflict. The text typed here is
// - kept in this browser (localStorage "mindnet.draft") at every keystroke, so a reload or a closed tab loses
//   nothing: the page script (public/mindnet.js) hands it back to the server, which reopens the editor;
// - sent to the server session (action draft_update) while typing and on blur. Never written into the element's
//   props from here (`updateElement`): Chainlit builds the element anew on each props change, so the control the
//   user was on would vanish under a keypress or between a click's press and release (a Save lost).
// Save / Download / Discard send the current text along. Preview shows the note as Markdown, its images as plain
// links (nothing loads from another machine; the page's Content-Security-Policy blocks it anyway). When a note of
// that name is in the vault (status "conflict"), the diff from its text to the draft (props.conflict.diff, plain
// text rows) is shown, both texts in full below it; the chat message below offers Replace or Merge (that version of
// the note, kept as a backup), a new name or Cancel, and "Start from the vault's text" puts the note's text into the
// editor to merge by hand. Below the text, link
// suggestions (Save & Analyze, action draft_analyze) follow the text as it is typed (debounced): "Link" turns the
// mention into a wikilink, "Edge" appends a `> [!edge] KIND: [[X]]` line, "Dismiss" hides it. They only change the
// draft's text.
import { useEffect, useLayoutEffect, useRef, useState } from "react";
import { Button } from "@/components/ui/button";
import { Textarea } from "@/components/ui/textarea";
import { Markdown } from "@/components/markdown";

const DRAFT_KEY = "mindnet.draft";
const FOCUS_KEY = "mindnetDraftFocus";   // on window: outlives the element when Chainlit mounts it again
const FOCUS_KEPT_MS = 60000;              // a focus older than this is not given back on such a mount
const KEYS_KEY = "mindnetDraftKeys";     // on window: keys typed while the editor is built anew
const HOLD_MS = 4000;                     // how long they wait for it (a busy machine draws slowly)
const TYPING_MS = 5000;                   // the user typed in the editor this recently: keys are held for it
const PRESS_KEY = "mindnetDraftPress";   // on window: a press on one of the editor's buttons, until its click
const PRESS_MS = 3000;                    // a release this long after the press is no click any more
const RELEASED_MS = 1000;                 // a copy built this soon after a release (over nothing) still takes it
const ANALYZE_DELAY_MS = 700;   // suggestions are asked for once typing pauses this long
// diff rows (props.conflict.diff): "-" only in the vault's note, "+" only in the draft, "@" a skipped stretch
const DIFF_STYLE = {
  "-": { background: "rgba(239, 68, 68, 0.18)" },
  "+": { background: "rgba(34, 197, 94, 0.18)" },
  "@": { opacity: 0.6 },
};

// Markdown images as plain links "[image: alt](url)", outside code (the rule of mindnet.ui.render.images_as_links)
const IMAGE_START = /(?<!\\)((?:\\\\)*)!\[(\]?)/g;
const FENCE_LINE = /^ {0,3}(`{3,}|~{3,})/;

function linkImages(text) {
  return text.replace(IMAGE_START, (m, slashes, empty) => (empty ? `${slashes}[image]` : `${slashes}[image: `));
}

function outsideCodeSpans(line) {
  const parts = line.split(/(`+)/);
  let out = "";
  let i = 0;
  while (i < parts.length) {
    if (i % 2 === 1) {
      let close = -1;
      for (let j = i + 2; j < parts.length; j += 2) if (parts[j] === parts[i]) { close = j; break; }
      if (close >= 0) { out += parts.slice(i, close + 1).join(""); i = close + 1; continue; }
      out += parts[i];
    } else {
      out += linkImages(parts[i]);
    }
    i += 1;
  }
  return out;
}

function imagesAsLinks(text) {
  let fence = "";
  return text.split(/(?<=\n)/).map((line) => {
    const m = line.match(FENCE_LINE);
    if (fence) {
      if (m && m[1][0] === fence[0] && m[1].length >= fence.length && !line.slice(m[0].length).trim()) fence = "";
      return line;
    }
    if (m && !(m[1][0] === "`" && line.slice(m[0].length).includes("`"))) { fence = m[1]; return line; }
    return outsideCodeSpans(line);
  }).join("");
}

function splitFrontmatter(text) {
  const m = text.match(/^---\r?\n([\s\S]*?)\r?\n---[ \t]*(\r?\n|$)/);
  return m ? [m[1], text.slice(m[0].length)] : ["", text];
}

function kept(draftId) {
  try {
    const stored = JSON.parse(window.localStorage.getItem(DRAFT_KEY) || "null");
    return stored && stored.draft_id === draftId && typeof stored.markdown === "string" ? stored.markdown : null;
  } catch (err) {
    return null;
  }
}

// The focus back to the control of the draft's editor the user was on (window[FOCUS_KEY]), when it went nowhere or
// to the chat's input (its autofocus): never away from where the user went meanwhile.
function giveFocusBack(draftId) {
  const focus = window[FOCUS_KEY];
  if (!focus || !focus.inside || focus.draft_id !== draftId || Date.now() - focus.at > FOCUS_KEPT_MS) return;
  const active = document.activeElement;
  if (active && active !== document.body && active.id !== "chat-input") return;
  const mine = document.querySelectorAll(`[data-testid="draft-editor"][data-draft-id="${CSS.escape(draftId || "")}"]`);
  const editor = mine[mine.length - 1];
  if (!editor) return;
  const control = editor.querySelector(`[data-testid="${CSS.escape(focus.control)}"]`);
  if (control && !control.disabled) {
    control.focus();
    if (focus.control === "draft-text") {
      const start = Math.min(focus.start, control.value.length), end = Math.min(focus.end, control.value.length);
      control.setSelectionRange(start, end);
      window[FOCUS_KEY] = { ...window[FOCUS_KEY], start, end };   // its focus event noted the new copy's caret, 0
    }
  } else {
    editor.focus();                             // the control is gone (saved, discarded): the editor itself
  }
  return control && document.activeElement === control ? control : null;
}

// The editor leaves the page while the user types in it (the move to the thread's URL after the first answer):
// Chainlit builds it anew a moment later, and the chat's input (its autofocus) would take the keys typed meanwhile.
// They are held (only plain keys, Enter and Backspace, only while no editor has the focus) for the new editor; if
// none comes within HOLD_MS, they go where the focus is then, as typed.
function holdKeys(draftId) {
  // a copy built and gone again before it took the keys (a second redraw): its keys wait on, for the next one
  const before = dropKeys();
  const held = { draft_id: draftId, keys: before && before.draft_id === draftId ? before.keys : [] };
  held.listener = (event) => {
    const to = event.target;
    if (to && to.closest && to.closest('[data-testid="draft-editor"]')) return;   // an editor has it again
    if (event.ctrlKey || event.metaKey || event.altKey || event.isComposing) return;
    if (event.key.length !== 1 && event.key !== "Enter" && event.key !== "Backspace") return;
    event.preventDefault();
    event.stopImmediatePropagation();
    held.keys.push(event.key);
  };
  held.timer = setTimeout(() => {
    if (window[KEYS_KEY] !== held) return;
    dropKeys();
    typeKeys(document.activeElement, held.keys);
  }, HOLD_MS);
  window.addEventListener("keydown", held.listener, true);
  window[KEYS_KEY] = held;
}

function dropKeys() {
  const held = window[KEYS_KEY];
  if (held) {
    window.removeEventListener("keydown", held.listener, true);
    clearTimeout(held.timer);
  }
  window[KEYS_KEY] = null;
  return held;
}

// A button pressed in one copy of the editor and released over the same button of the next copy (Chainlit built it
// anew in between: an answer ending, a status, the move to the thread's URL) gets no click from the browser, and
// a Save was lost (loaded CI: the click done, no request sent). Such a release clicks the new copy's button, once;
// a release elsewhere (the user dragged away) clicks nothing, and a click the browser gave is not repeated.
function notePress(event, draftId) {
  const button = event.button === 0 && event.target.closest ? event.target.closest("button[data-testid]") : null;
  if (!button) return;
  const press = { draft_id: draftId, control: button.dataset.testid, element: button, at: Date.now(), release: null };
  window[PRESS_KEY] = press;
  const released = (up) => {
    window.removeEventListener("pointerup", released, true);
    press.release = { x: up.clientX, y: up.clientY, at: Date.now() };
    setTimeout(() => clickReleased(press), 0);     // after the browser's own click, when it gave one
  };
  window.addEventListener("pointerup", released, true);
}

function clickReleased(press) {
  if (!press || window[PRESS_KEY] !== press || !press.release || press.element.isConnected) return;
  if (press.release.at - press.at > PRESS_MS) { window[PRESS_KEY] = null; return; }
  const under = document.elementFromPoint(press.release.x, press.release.y);
  const editor = `[data-testid="draft-editor"][data-draft-id="${CSS.escape(press.draft_id || "")}"]`;
  const button = under && under.closest(`${editor} button[data-testid="${CSS.escape(press.control)}"]`);
  if (!button) return;             // released while no copy was there: the next copy's mount looks again
  window[PRESS_KEY] = null;
  if (!button.disabled) button.click();
}

// `keys` typed into the text field `el` at its caret, as typing would: its value is set at once (a key arriving
// before React draws again lands after them, not on the old text) and React sees an input event (onChange).
// Only into a text field: a checkbox or a number field has no caret, and no text to type into. The caret, or null.
function typeKeys(el, keys) {
  const proto = el instanceof HTMLTextAreaElement ? HTMLTextAreaElement.prototype
    : el instanceof HTMLInputElement && (el.type === "text" || el.type === "search") ? HTMLInputElement.prototype
      : null;
  if (!proto || el.disabled || el.readOnly || !keys.length) return null;
  const end = el.value.length;
  const [value, caret] = typeInto(el.value, el.selectionStart ?? end, el.selectionEnd ?? end, keys);
  Object.getOwnPropertyDescriptor(proto, "value").set.call(el, value);
  el.dispatchEvent(new Event("input", { bubbles: true }));
  el.setSelectionRange(caret, caret);
  return caret;
}

// `keys` typed into `value` at the caret [start, end): the new text and caret
function typeInto(value, start, end, keys) {
  for (const key of keys) {
    if (key === "Backspace") {
      if (start === end && start > 0) start -= 1;
      value = value.slice(0, start) + value.slice(end);
    } else {
      const typed = key === "Enter" ? "\n" : key;
      value = value.slice(0, start) + typed + value.slice(end);
      start += typed.length;
    }
    end = start;
  }
  return [value, start];
}

export default function DraftEditor() {
  // Chainlit may mount the element again (a re-render of the chat): the text kept in this browser is newer
  const [text, setText] = useState(() => kept(props.draft_id) ?? (props.markdown || ""));
  const [busy, setBusy] = useState(false);
  const timer = useRef(null);
  const [preview, setPreview] = useState(false);
  const status = props.status || "editing";
  const editable = status === "editing" || status === "error" || status === "conflict";
  const conflict = status === "conflict" ? props.conflict : null;

  const keep = (value) => {
    try {
      window.localStorage.setItem(DRAFT_KEY, JSON.stringify({
        draft_id: props.draft_id, markdown: value, note_type: props.note_type, title: props.title,
        warnings: props.warnings || [],
      }));
    } catch (err) { /* storage full or disabled: the server session still has the text */ }
  };
  useEffect(() => {
    // a text already kept for this draft is the newest (typed while this element was being mounted again)
    if (editable && kept(props.draft_id) === null) keep(text);
    else if (status === "saved" || status === "discarded") window.localStorage.removeItem(DRAFT_KEY);
  }, [status]);
  // Chainlit builds the element anew when the page moves to the thread's URL after the first answer, and when the
  // server sends new props (saved, a conflict): whoever was on one of its controls stays there, the text area
  // with its caret (else the next keys went nowhere, or to the start of the text)
  const noteFocus = (event) => {
    const el = event.target;
    const control = el.dataset && el.dataset.testid;
    if (!control) return;
    const area = control === "draft-text";
    window[FOCUS_KEY] = { draft_id: props.draft_id, control, inside: true, at: Date.now(),
                          start: area ? el.selectionStart : 0, end: area ? el.selectionEnd : 0 };
  };
  const leaveFocus = (event) => {
    const focus = window[FOCUS_KEY];
    if (!focus || focus.draft_id !== props.draft_id) return;
    const to = event.relatedTarget;
    const here = event.currentTarget;
    if (to && here.contains(to)) return;            // to another control of the editor: noteFocus follows it
    if (to && to.id !== "chat-input") {             // to a control elsewhere (Tab, a click): the user left
      focus.inside = false;
      return;
    }
    // to nowhere, or to the chat's input, which takes the focus when Chainlit draws the page anew (autofocus):
    // the user's doing only if the editor is still on the page
    // (a control disabled while an action runs loses the focus too: not the user's doing either)
    const from = event.target;
    setTimeout(() => { if (here.isConnected && !from.disabled) focus.inside = false; }, 0);
  };
  useEffect(() => {
    document.documentElement.dataset.mindnetEditorMounted = String(performance.now());   // see public/mindnet.js
    const latest = kept(props.draft_id);          // keys typed while this element was being mounted again
    if (editable && latest !== null && latest !== text) setText(latest);
    const frame = requestAnimationFrame(() => {   // once the text above is drawn
      const press = window[PRESS_KEY];
      if (press && press.draft_id === props.draft_id && press.release && Date.now() - press.release.at < RELEASED_MS) {
        clickReleased(press);
      }
      const control = giveFocusBack(props.draft_id);
      const held = window[KEYS_KEY];
      if (!held || held.draft_id !== props.draft_id || !control || control.dataset.testid !== "draft-text") return;
      dropKeys();
      // into the text area itself, not only React's state: a key typed before React draws it would go on from
      // the old text and drop these (loaded CI of stop 40: " und Th" lost, "ymian" kept)
      const caret = typeKeys(control, held.keys);
      if (caret !== null) window[FOCUS_KEY] = { ...window[FOCUS_KEY], start: caret, end: caret, at: Date.now() };
    });
    return () => cancelAnimationFrame(frame);
  }, []);
  // leaving the page (a layout effect: before the chat's input, built in the same change, can take a key)
  useLayoutEffect(() => () => {
    const focus = window[FOCUS_KEY];
    if (editable && focus && focus.inside && focus.draft_id === props.draft_id && focus.control === "draft-text" &&
        Date.now() - focus.at < TYPING_MS) {
      holdKeys(props.draft_id);
    }
  }, []);
  const store = (value) => callAction({ name: "draft_update", payload: { draft_id: props.draft_id, markdown: value } });
  const onChange = (event) => {
    const value = event.target.value;
    setText(value);
    keep(value);
    noteFocus(event);
    clearTimeout(timer.current);
    timer.current = setTimeout(() => store(value), 300);
    analyze(value);
  };
  const onBlur = () => {
    clearTimeout(timer.current);
    store(text);
  };
  // ---- link suggestions (Save & Analyze): asked for when typing pauses; they never write a note
  const [suggestions, setSuggestions] = useState(null);
  const [dismissed, setDismissed] = useState([]);
  const analyzeTimer = useRef(null);
  const asked = useRef(0);
  const analyze = (value) => {
    clearTimeout(analyzeTimer.current);
    analyzeTimer.current = setTimeout(async () => {
      const mine = ++asked.current;        // an older answer arriving late must not replace a newer one
      try {
        const res = await callAction({ name: "draft_analyze",
          payload: { draft_id: props.draft_id, markdown: value, note_type: props.note_type } });
        if (mine === asked.current) setSuggestions(res && res.response ? res.response : null);
      } catch (err) {
        if (mine === asked.current) setSuggestions({ error: String(err) });
      }
    }, ANALYZE_DELAY_MS);
  };
  useEffect(() => {
    if (editable) analyze(text);
    return () => clearTimeout(analyzeTimer.current);
  }, []);
  const insert = (s, where) => {
    let value = text;
    const m = s.mention;
    let start = m && value.slice(m.start, m.end) === m.surface ? m.start : (m ? value.indexOf(m.surface) : -1);
    if (where === "mention" && start >= 0) {
      const wiki = m.surface === s.link_text ? `[[${s.link_text}]]` : `[[${s.link_text}|${m.surface}]]`;
      value = value.slice(0, start) + wiki + value.slice(start + m.surface.length);
    } else {
      value = value.replace(/\s*$/, "") + "\n\n" + s.callout + "\n";
    }
    setText(value);
    keep(value);
    store(value);
    setSuggestions({ ...suggestions, links: (suggestions.links || []).filter((x) => x.note_id !== s.note_id) });
    analyze(value);
  };
  const startFromVault = () => {
    const value = conflict.existing || "";
    setText(value);
    keep(value);
    store(value);
    setPreview(false);
    analyze(value);
  };
  // the id of a suggestion's text, which its buttons point at (aria-describedby: "Link", "Edge" of what, and why)
  const about = (s) => `suggestion-${props.draft_id}-${s.note_id}`.replace(/[^A-Za-z0-9_-]/g, "_");
  const [meta, body] = splitFrontmatter(text);
  const shown = suggestions && !suggestions.error
    ? (suggestions.links || []).filter((s) => !dismissed.includes(s.note_id)) : [];

  const run = async (name) => {
    clearTimeout(timer.current);
    setBusy(true);
    try {
      await callAction({ name, payload: { draft_id: props.draft_id, markdown: text } });
    } finally {
      setBusy(false);
      requestAnimationFrame(() => giveFocusBack(props.draft_id));   // the button, disabled meanwhile, lost it
    }
  };

  return (
    <div className="flex flex-col gap-2 w-full outline-none" data-testid="draft-editor" data-draft-id={props.draft_id}
      tabIndex={-1} role="group" aria-label={`Draft ${props.title || ""}`.trim()}
      onFocus={noteFocus} onBlur={leaveFocus} onPointerDownCapture={(event) => notePress(event, props.draft_id)}
      onClickCapture={() => { window[PRESS_KEY] = null; }}>
      <div className="text-sm text-muted-foreground">
        {props.title} · {props.note_type}
        {status === "saved" && <span data-testid="draft-status"> · saved to {props.detail}</span>}
        {status === "discarded" && <span data-testid="draft-status"> · discarded</span>}
        {(status === "error" || status === "conflict") && (
          <span data-testid="draft-status"> · not saved: {props.detail}</span>
        )}
      </div>
      {(props.warnings || []).length > 0 && (
        <ul className="text-xs text-muted-foreground list-disc pl-4">
          {props.warnings.map((w, i) => <li key={i}>{w}</li>)}
        </ul>
      )}
      {conflict && (
        <div className="flex flex-col gap-1 text-xs min-w-0" data-testid="draft-conflict">
          <div className="font-medium">
            In the vault now: {conflict.path}
            {conflict.existing != null && " - the lines your draft would change (- removed, + added)"}
          </div>
          {conflict.existing == null ? (
            <div data-testid="conflict-gone">(the note is gone: deleted or moved since)</div>
          ) : (
            <pre data-testid="conflict-diff"
              className="whitespace-pre-wrap break-words font-mono rounded border p-2 max-h-72 overflow-auto">
              {(conflict.diff || []).length === 0 && "(no difference: the note already has this text)"}
              {(conflict.diff || []).map((row, i) => (
                <div key={i} data-op={row.op} data-testid="diff-line" style={DIFF_STYLE[row.op] || {}}>
                  {row.op === "@" ? row.text : `${row.op} ${row.text}`}
                </div>
              ))}
            </pre>
          )}
          <details>
            <summary className="cursor-pointer">Both texts in full</summary>
            <div style={{ display: "grid", gridTemplateColumns: "repeat(auto-fit, minmax(16rem, 1fr))", gap: "0.5rem" }}>
              <div className="flex flex-col gap-1 min-w-0">
                <div className="font-medium">In the vault now</div>
                <pre data-testid="conflict-existing"
                  className="whitespace-pre-wrap break-words font-mono bg-muted rounded p-2 max-h-72 overflow-auto">
                  {conflict.existing ?? "(the note is gone: deleted or moved since)"}
                </pre>
              </div>
              <div className="flex flex-col gap-1 min-w-0">
                <div className="font-medium">Your draft</div>
                <pre data-testid="conflict-draft"
                  className="whitespace-pre-wrap break-words font-mono bg-muted rounded p-2 max-h-72 overflow-auto">
                  {text}
                </pre>
              </div>
            </div>
          </details>
          {conflict.existing != null && (
            <Button size="sm" variant="outline" className="w-fit" data-testid="conflict-take" disabled={busy}
              onClick={startFromVault}>Start from the vault's text</Button>
          )}
        </div>
      )}
      {preview ? (
        <div className="flex flex-col gap-2 rounded-md border p-3 min-w-0" style={{ minHeight: 280 }}
          data-testid="draft-preview">
          {meta && (
            <pre className="whitespace-pre-wrap break-words font-mono text-xs text-muted-foreground"
              data-testid="draft-preview-meta">{meta}</pre>
          )}
          <Markdown allowHtml={false} latex={false}>{imagesAsLinks(body)}</Markdown>
        </div>
      ) : (
        <Textarea
          data-testid="draft-text"
          data-draft-id={props.draft_id}
          aria-label={`Text of the note ${props.title || ""}`.trim()}
          className="font-mono text-sm"
          style={{ minHeight: 280 }}
          value={text}
          disabled={!editable || busy}
          onChange={onChange}
          onSelect={noteFocus}
          onKeyUp={noteFocus}
          onBlur={onBlur}
        />
      )}
      {/* right below the text: the link suggestions, arriving while the user reaches for Save, come after them
          and never move them (a click meant for Save landed on a suggestion) */}
      {editable && (
        <div className="flex gap-2">
          <Button data-testid="draft-save" disabled={busy} onClick={() => run("draft_save")}>Save to vault</Button>
          <Button data-testid="draft-download" variant="outline" disabled={busy} onClick={() => run("draft_download")}>Download</Button>
          <Button data-testid="draft-discard" variant="ghost" disabled={busy} onClick={() => run("draft_discard")}>Discard</Button>
          <Button data-testid="draft-preview-toggle" variant="ghost" onClick={() => setPreview(!preview)}>
            {preview ? "Edit" : "Preview"}
          </Button>
        </div>
      )}
      {editable && suggestions && (
        <div className="flex flex-col gap-1 rounded-md border p-2 text-sm" data-testid="draft-suggestions">
          <div className="font-medium">Link suggestions</div>
          {suggestions.error && <div className="text-xs text-muted-foreground">{suggestions.error}</div>}
          {!suggestions.error && shown.length === 0 && (
            <div className="text-xs text-muted-foreground">No links to suggest yet.</div>
          )}
          {shown.map((s) => (
            <div key={s.note_id} className="flex items-center gap-2" data-testid="suggestion">
              {/* the reason as text, not a hover tooltip: read by screen readers and shown without a mouse */}
              <span className="flex-1 min-w-0" id={about(s)}>
                <code>{s.kind}</code> {s.title}{" "}
                <span className="text-xs text-muted-foreground">{s.confidence.toFixed(2)}</span>
                <span className="block text-xs text-muted-foreground break-words" data-testid="suggestion-reason">
                  {s.reason}; kind: {s.kind_reason}
                </span>
              </span>
              {s.mention && (
                <Button size="sm" variant="outline" data-testid="suggestion-link" aria-describedby={about(s)}
                  disabled={busy}
                  onClick={() => insert(s, "mention")}>Link</Button>
              )}
              <Button size="sm" variant="outline" data-testid="suggestion-edge" aria-describedby={about(s)}
                disabled={busy}
                onClick={() => insert(s, "end")}>Edge</Button>
              <Button size="sm" variant="ghost" data-testid="suggestion-dismiss" aria-describedby={about(s)}
                onClick={() => setDismissed([...dismissed, s.note_id])}>Dismiss</Button>
            </div>
          ))}
          {suggestions.type && suggestions.type.value !== props.note_type && (
            <div className="text-xs text-muted-foreground" data-testid="suggestion-type">
              Type: {suggestions.type.value} ({suggestions.type.reason})
            </div>
          )}
          {(suggestions.tags || []).length > 0 && (
            <div className="text-xs text-muted-foreground" data-testid="suggestion-tags">
              Tags: {suggestions.tags.map((t) => "#" + t.tag).join(" ")}
            </div>
          )}
          {suggestions.duplicate && (
            <div className="text-xs" data-testid="suggestion-duplicate">
              Possible duplicate: {suggestions.duplicate.title} ({suggestions.duplicate.reason})
            </div>
          )}
        </div>
      )}
    </div>
  );
}
