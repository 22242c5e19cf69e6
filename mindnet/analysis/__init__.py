"""Save & Analyze: link, relation, type/tag and duplicate suggestions for a draft or a note (reads only;
`apply` writes the accepted edges of an existing note, and only when asked)."""
