// The rating of one answer (Chainlit custom element, inline under the answer); the chat's only rating control.
// Props come from mindnet.ui.rating.rating_props: query_id, score (0 | 5 | 1: the rating that counts), reasons
// (ids), comment, offered ([{id, label}]: the reasons a bad answer may give). Every choice goes to the server's
// `rate` action, which appends it to feedback.jsonl with the query_id; the last one counts.
import { useState } from "react";
import { Button } from "@/components/ui/button";

export default function AnswerRating() {
  const [score, setScore] = useState(props.score || 0);
  const [reasons, setReasons] = useState(props.reasons || []);
  const [comment, setComment] = useState(props.comment || "");
  const [saved, setSaved] = useState({ reasons: props.reasons || [], comment: props.comment || "" });
  const [open, setOpen] = useState(false);
  const [busy, setBusy] = useState(false);
  const [status, setStatus] = useState("");
  const offered = props.offered || [];
  const labelOf = (id) => (offered.find((o) => o.id === id) || { label: id }).label;

  const send = async (next, nextReasons, nextComment) => {
    setBusy(true);
    setStatus("");
    try {
      const res = await callAction({ name: "rate", payload: {
        query_id: props.query_id, node_id: "generated_answer", score: next, reasons: nextReasons,
        comment: nextComment } });
      if (!res || !res.response || !res.response.recorded) {
        setStatus("Not saved: the message below says why.");
        return false;
      }
      setScore(next);   // kept here, not sent back with updateElement: new props re-mount the element, which
      setSaved({ reasons: nextReasons, comment: nextComment });   // loses the keyboard focus and the open form
      return true;
    } catch (err) {
      setStatus("Not saved: the server did not answer. Reload the page and rate again.");
      return false;
    } finally {
      setBusy(false);
    }
  };

  const good = async () => {
    setOpen(false);
    if (await send(5, [], "")) {
      setReasons([]);
      setComment("");
    }
  };
  const bad = async () => {
    if (score !== 1 && !(await send(1, [], ""))) return;   // the rating counts at once; the details are optional
    if (score !== 1) {
      setReasons([]);
      setComment("");
    }
    setOpen(true);
  };
  const toggle = (id) => setReasons(reasons.includes(id) ? reasons.filter((r) => r !== id) : [...reasons, id]);
  const saveDetails = async () => {
    if (await send(1, reasons, comment.trim())) {
      setOpen(false);
      setStatus("Thanks: your reasons were saved.");
    }
  };

  const summary = [...saved.reasons.map(labelOf), saved.comment && `“${saved.comment}”`].filter(Boolean).join(" · ");
  const commentId = `mindnet-rating-comment-${props.query_id}`;
  return (
    <div className="flex flex-col gap-2 text-sm" data-testid="answer-rating">
      <div className="flex flex-wrap items-center gap-2" role="group" aria-label="Rate this answer">
        <Button size="sm" variant={score === 5 ? "default" : "outline"} aria-pressed={score === 5}
                disabled={busy} onClick={good} data-testid="rate-good">
          {score === 5 ? "Good answer ✓" : "Good answer"}
        </Button>
        <Button size="sm" variant={score === 1 ? "default" : "outline"} aria-pressed={score === 1}
                disabled={busy} onClick={bad} data-testid="rate-bad">
          {score === 1 ? "Bad answer ✓" : "Bad answer"}
        </Button>
        {score === 1 && !open && (
          <Button size="sm" variant="ghost" onClick={() => setOpen(true)} data-testid="rate-details-open">
            {summary ? "Change what was wrong" : "Say what was wrong"}
          </Button>
        )}
        {score === 1 && !open && summary && (
          <span className="text-muted-foreground break-words" data-testid="rate-summary">{summary}</span>
        )}
      </div>
      {open && (
        <fieldset className="flex flex-col gap-2 border rounded p-2" data-testid="rate-details">
          <legend className="px-1 text-muted-foreground">What was wrong? (optional)</legend>
          <div className="flex flex-wrap gap-2">
            {offered.map((o) => (
              <Button key={o.id} size="sm" variant={reasons.includes(o.id) ? "default" : "outline"}
                      aria-pressed={reasons.includes(o.id)} onClick={() => toggle(o.id)}
                      data-testid={`rate-reason-${o.id}`}>
                {o.label}
              </Button>
            ))}
          </div>
          <label htmlFor={commentId} className="text-muted-foreground">Comment (optional)</label>
          <textarea id={commentId} className="w-full rounded border bg-background p-2" rows={2} maxLength={4000}
                    value={comment} onChange={(e) => setComment(e.target.value)} data-testid="rate-comment" />
          <div className="flex gap-2">
            <Button size="sm" disabled={busy} onClick={saveDetails} data-testid="rate-details-save">
              Save reasons
            </Button>
            <Button size="sm" variant="ghost" disabled={busy} onClick={() => setOpen(false)}>Close</Button>
          </div>
        </fieldset>
      )}
      <span role="status" className="text-muted-foreground" data-testid="rate-status">{status}</span>
    </div>
  );
}
