// One source of an answer (Chainlit custom element, shown in the side panel). Props come from
// mindnet.ui.render.source_props: index, title, path, open_url, type, section, score, breakdown (one line),
// rows (the same numbers as a table), why (plain sentences), details (rule ids), text, highlight (query
// words), query_id, node_id, rating (0 | 5 | 1). Everything is rendered as text: note content is never markup.
import { useState } from "react";
import { Button } from "@/components/ui/button";

function escapeRegExp(s) {
  return s.replace(/[.*+?^${}()|[\]\\]/g, "\\$&");
}

function Highlighted({ text, words }) {
  if (!words || words.length === 0) return text;
  const re = new RegExp(`(${words.map(escapeRegExp).join("|")})`, "giu");
  return text.split(re).map((part, i) =>
    i % 2 === 1 ? <mark key={i} data-testid="source-match" className="bg-yellow-200 dark:bg-yellow-700 rounded px-0.5">{part}</mark> : part
  );
}

export default function SourcePanel() {
  const [rating, setRating] = useState(props.rating || 0);
  const [busy, setBusy] = useState(false);

  const rate = async (score) => {
    setBusy(true);
    try {
      await callAction({ name: "rate", payload: { query_id: props.query_id, node_id: props.node_id, score } });
      setRating(score);
      updateElement({ ...props, rating: score });
    } finally {
      setBusy(false);
    }
  };

  return (
    <div className="flex flex-col gap-3 text-sm w-full min-w-0" data-testid="source-panel">
      <div className="text-base font-semibold break-words" data-testid="source-title">
        [{props.index}] {props.title}
      </div>
      <div className="text-muted-foreground break-words">
        {props.path}
        {props.type && <span> · {props.type}</span>}
        {props.section && <span> · {props.section}</span>}
      </div>
      {props.open_url && (
        <a data-testid="open-in-obsidian" className="underline text-primary w-fit" href={props.open_url}
           target="_blank" rel="noopener noreferrer">Open in Obsidian</a>
      )}
      <div data-testid="source-breakdown">
        <span className="font-medium">Score:</span> {props.breakdown}
      </div>
      {(props.rows || []).length > 0 && (
        <table className="text-xs w-full table-fixed border-collapse" data-testid="source-table">
          <thead>
            <tr className="text-left text-muted-foreground">
              <th className="w-1/5 pr-1">term</th><th className="w-1/2 pr-1">from</th>
              <th className="pr-1">weight</th><th>adds</th>
            </tr>
          </thead>
          <tbody>
            {props.rows.map((r) => (
              <tr key={r.term} className="align-top">
                <td className="pr-1">{r.term}</td><td className="pr-1 break-words">{r.input}</td>
                <td className="pr-1">{r.weight}</td><td>{r.value}</td>
              </tr>
            ))}
          </tbody>
        </table>
      )}
      {(props.why || []).length > 0 && (
        <div data-testid="source-why">
          <div className="font-medium">Why this source</div>
          <ul className="list-disc pl-5">
            {props.why.map((w, i) => <li key={i} className="break-words">{w}</li>)}
          </ul>
        </div>
      )}
      {(props.details || []).length > 0 && (
        <details data-testid="source-details">
          <summary className="cursor-pointer text-muted-foreground">Details (rule ids)</summary>
          <ul className="list-disc pl-5 text-xs font-mono">
            {props.details.map((d, i) => <li key={i} className="break-words">{d}</li>)}
          </ul>
        </details>
      )}
      <div className="flex items-center gap-2">
        <span className="text-muted-foreground">Did this source help?</span>
        <Button data-testid="source-up" size="sm" variant={rating === 5 ? "default" : "outline"}
                aria-pressed={rating === 5} disabled={busy} onClick={() => rate(5)}>Helped</Button>
        <Button data-testid="source-down" size="sm" variant={rating === 1 ? "default" : "outline"}
                aria-pressed={rating === 1} disabled={busy} onClick={() => rate(1)}>Did not help</Button>
      </div>
      <div className="whitespace-pre-wrap break-words font-mono text-xs bg-muted rounded p-2" data-testid="source-text">
        <Highlighted text={props.text || ""} words={props.highlight} />
      </div>
    </div>
  );
}
