// One source of an answer (Chainlit custom element, shown in the side panel). Props come from
// mindnet.ui.render.source_props: index, title, path, open_url, type, section, score, breakdown (one line),
// rows (the same numbers as a table), why (ranked sentences), formula (the score formula with its numbers),
// links (one line per note whose links lifted it), graph (those links laid out: see mindnet/ui/why.py),
// details (rule ids), text, highlight (query words), query_id, node_id, rating (0 | 5 | 1). Everything is
// rendered as text: note content is never markup.
import { useEffect, useState } from "react";
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

// The links that lifted the note, drawn from the layout mindnet.ui.why.link_graph made (no library); the list
// of links below it says the same in text.
function LinkGraph({ graph, index }) {
  const id = `why-graph-${index}`;
  const w = graph.node_w, h = graph.node_h;
  return (
    <figure className="m-0" data-testid="why-graph">
      <svg role="img" aria-labelledby={`${id}-title ${id}-desc`} viewBox={`0 0 ${graph.width} ${graph.height}`}
           width="100%" style={{ maxWidth: graph.width }} className="text-foreground">
        <title id={`${id}-title`}>{graph.title}</title>
        <desc id={`${id}-desc`}>{graph.desc}</desc>
        <defs>
          <marker id={`${id}-arrow`} viewBox="0 0 10 10" refX="9" refY="5" markerWidth="9" markerHeight="9"
                  markerUnits="userSpaceOnUse" orient="auto-start-reverse">
            <path d="M 0 0 L 10 5 L 0 10 z" fill="currentColor" />
          </marker>
        </defs>
        {graph.edges.map((e) => (
          <g key={e.from} data-testid="why-graph-edge" data-from={e.from} data-to={e.to} data-count={e.count}>
            <line x1={e.x1} y1={e.y1} x2={e.x2} y2={e.y2} stroke="currentColor" strokeOpacity="0.6"
                  strokeWidth={Math.min(1 + e.count, 4)} markerEnd={`url(#${id}-arrow)`} />
            <text x={e.x1 + 6} y={e.y1 - 5} fontSize="10" fill="currentColor"
                  style={{ paintOrder: "stroke", stroke: "hsl(var(--card))", strokeWidth: 3 }}>{e.label}</text>
          </g>
        ))}
        {graph.nodes.map((n) => (
          <g key={n.id} data-testid={n.hit ? "why-graph-hit" : "why-graph-node"} data-id={n.id}>
            <title>{n.name}</title>
            <rect x={n.x - w / 2} y={n.y - h / 2} width={w} height={h} rx="6" fill="currentColor"
                  fillOpacity={n.hit ? 0.18 : 0.07} stroke="currentColor" strokeOpacity={n.hit ? 0.9 : 0.4} />
            <text x={n.x} y={n.y + 4} fontSize="11" textAnchor="middle" fill="currentColor"
                  fontWeight={n.hit ? "bold" : "normal"}>{n.label}</text>
          </g>
        ))}
      </svg>
      {graph.more && <figcaption className="text-xs text-muted-foreground">{graph.more}</figcaption>}
    </figure>
  );
}

// The rating goes into the element's props (a panel opened again shows it), and Chainlit builds the element anew
// from new props: the button pressed keeps the keyboard focus across that (window: outlives the element).
const RATED_KEY = "mindnetSourceRated";
const RATED_KEPT_MS = 10000;

export default function SourcePanel() {
  const [rating, setRating] = useState(props.rating || 0);
  const [busy, setBusy] = useState(false);
  const me = `${props.query_id}/${props.node_id}`;
  useEffect(() => {
    const rated = window[RATED_KEY];
    if (!rated || rated.source !== me || Date.now() - rated.at > RATED_KEPT_MS) return;
    window[RATED_KEY] = null;
    const frame = requestAnimationFrame(() => {
      const active = document.activeElement;
      if (active && active !== document.body) return;        // the user went on meanwhile
      const panels = document.querySelectorAll(`[data-testid="source-panel"][data-source="${CSS.escape(me)}"]`);
      const button = panels.length ? panels[panels.length - 1].querySelector(`[data-testid="${rated.control}"]`) : null;
      if (button) button.focus();
    });
    return () => cancelAnimationFrame(frame);
  }, []);

  const rate = async (score) => {
    const control = score === 5 ? "source-up" : "source-down";
    const focused = !!document.activeElement && document.activeElement.dataset.testid === control;
    setBusy(true);
    try {
      await callAction({ name: "rate", payload: { query_id: props.query_id, node_id: props.node_id, score } });
      setRating(score);
      if (focused) window[RATED_KEY] = { source: me, control, at: Date.now() };
      updateElement({ ...props, rating: score });
    } finally {
      setBusy(false);
    }
  };

  return (
    <div className="flex flex-col gap-3 text-sm w-full min-w-0" data-testid="source-panel" data-source={me}>
      <div className="text-base font-semibold break-words" data-testid="source-title">
        <span className="mindnet-source-index">[{props.index}] </span>{props.title}
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
        <div data-testid="source-why" className="flex flex-col gap-2">
          <div className="font-medium">Why this source</div>
          <ol style={{ listStyleType: "decimal", paddingLeft: "1.25rem" }} data-testid="why-sentences">
            {props.why.map((w, i) => <li key={i} className="break-words" style={{ marginBottom: "0.25rem" }}>{w}</li>)}
          </ol>
          {props.formula && (
            <div className="text-xs font-mono break-words" data-testid="why-formula">{props.formula}</div>
          )}
          {props.graph && <LinkGraph graph={props.graph} index={props.index} />}
          {(props.links || []).length > 0 && (
            <div>
              <div className="text-muted-foreground">Links that lifted it</div>
              <ul style={{ listStyleType: "disc", paddingLeft: "1.25rem" }} data-testid="why-links">
                {props.links.map((l, i) => <li key={i} className="break-words">{l}</li>)}
              </ul>
            </div>
          )}
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
