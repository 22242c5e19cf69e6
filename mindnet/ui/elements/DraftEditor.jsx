// Interview draft editor (Chainlit custom element). Props: draft_id, markdown, note_type, title, warnings,
// status ("editing" | "saved" | "discarded" | "error"), detail. The text typed here is sent to the server
// session (action draft_update) while typing and kept in the element's props on blur, so switching to the
// chat and back never loses it; Save / Download / Discard send the current text along.
import { useRef, useState } from "react";
import { Button } from "@/components/ui/button";
import { Textarea } from "@/components/ui/textarea";

export default function DraftEditor() {
  const [text, setText] = useState(props.markdown || "");
  const [busy, setBusy] = useState(false);
  const timer = useRef(null);
  const status = props.status || "editing";
  const editable = status === "editing" || status === "error";

  const store = (value) => callAction({ name: "draft_update", payload: { draft_id: props.draft_id, markdown: value } });
  const onChange = (event) => {
    const value = event.target.value;
    setText(value);
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
