// Interview draft editor (Chainlit custom element). Props: draft_id, markdown, note_type, title, warnings,
// status ("editing" | "saved" | "discarded" | "error"), detail. The text typed here is
// - kept in this browser (localStorage "mindnet.draft") at every keystroke, so a reload or a closed tab loses
//   nothing: the page script (public/mindnet.js) hands it back to the server, which reopens the editor;
// - sent to the server session (action draft_update) while typing, and kept in the element's props on blur,
//   so switching to the chat and back never loses it.
// Save / Download / Discard send the current text along. Extension point: `aside` (below the text) is where
// panels beside the draft (e.g. link suggestions) go; they get the current text.
import { useEffect, useRef, useState } from "react";
import { Button } from "@/components/ui/button";
import { Textarea } from "@/components/ui/textarea";

const DRAFT_KEY = "mindnet.draft";

function kept(draftId) {
  try {
    const stored = JSON.parse(window.localStorage.getItem(DRAFT_KEY) || "null");
    return stored && stored.draft_id === draftId && typeof stored.markdown === "string" ? stored.markdown : null;
  } catch (err) {
    return null;
  }
}

export default function DraftEditor() {
  // Chainlit may mount the element again (a re-render of the chat): the text kept in this browser is newer
  const [text, setText] = useState(() => kept(props.draft_id) ?? (props.markdown || ""));
  const [busy, setBusy] = useState(false);
  const timer = useRef(null);
  const status = props.status || "editing";
  const editable = status === "editing" || status === "error";

  const keep = (value) => {
    try {
      window.localStorage.setItem(DRAFT_KEY, JSON.stringify({
        draft_id: props.draft_id, markdown: value, note_type: props.note_type, title: props.title,
        warnings: props.warnings || [],
      }));
    } catch (err) { /* storage full or disabled: the server session still has the text */ }
  };
  useEffect(() => {
    if (editable) keep(text);
    else if (status === "saved" || status === "discarded") window.localStorage.removeItem(DRAFT_KEY);
  }, [status]);
  const store = (value) => callAction({ name: "draft_update", payload: { draft_id: props.draft_id, markdown: value } });
  const onChange = (event) => {
    const value = event.target.value;
    setText(value);
    keep(value);
    clearTimeout(timer.current);
    timer.current = setTimeout(() => store(value), 300);
  };
  const onBlur = () => {
    clearTimeout(timer.current);
    store(text);
    updateElement({ ...props, markdown: text });
  };
  const run = async (name) => {
    clearTimeout(timer.current);
    setBusy(true);
    try {
      await callAction({ name, payload: { draft_id: props.draft_id, markdown: text } });
    } finally {
      setBusy(false);
    }
  };

  return (
    <div className="flex flex-col gap-2 w-full" data-testid="draft-editor">
      <div className="text-sm text-muted-foreground">
        {props.title} · {props.note_type}
        {status === "saved" && <span data-testid="draft-status"> · saved to {props.detail}</span>}
        {status === "discarded" && <span data-testid="draft-status"> · discarded</span>}
        {status === "error" && <span data-testid="draft-status"> · not saved: {props.detail}</span>}
      </div>
      {(props.warnings || []).length > 0 && (
        <ul className="text-xs text-muted-foreground list-disc pl-4">
          {props.warnings.map((w, i) => <li key={i}>{w}</li>)}
        </ul>
      )}
      <Textarea
        data-testid="draft-text"
        className="font-mono text-sm"
        style={{ minHeight: 280 }}
        value={text}
        disabled={!editable || busy}
        onChange={onChange}
        onBlur={onBlur}
      />
      {editable && (
        <div className="flex gap-2">
          <Button data-testid="draft-save" disabled={busy} onClick={() => run("draft_save")}>Save to vault</Button>
          <Button data-testid="draft-download" variant="outline" disabled={busy} onClick={() => run("draft_download")}>Download</Button>
          <Button data-testid="draft-discard" variant="ghost" disabled={busy} onClick={() => run("draft_discard")}>Discard</Button>
        </div>
      )}
    </div>
  );
}
