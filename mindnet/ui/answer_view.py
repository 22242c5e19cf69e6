"""One chat answer on screen: the "How I answered" step, the streamed answer, its source panels and its
rating (`rating.AnswerRating`, saved by the `rate` action). Rendering only: the answer comes from
`Mindnet.chat.astream`.
"""

from __future__ import annotations

import asyncio
import time
import uuid
from typing import Any

import chainlit as cl
from chainlit.context import context
from chainlit.utils import utc_now

from mindnet.chat.engine import ChatRequest, ChatResponse
from mindnet.logs import GENERATED_ANSWER
from mindnet.ui import render, resume
from mindnet.ui.guard import readable, say_error
from mindnet.ui.rating import send_rating
from mindnet.ui.registry import get_mindnet

SIDE_PANEL_DELAY = 0.3   # seconds
STREAM_REFRESH = 0.08    # seconds between screen updates of a streaming answer
SOURCES_PANEL = "sources_panel"   # user_session: the last answer's panel, its elements and title


class AnswerView:
    """One answer on screen: the "How I answered" step (a sentence per stage, the details inside), then the
    answer message. Sources are attached as soon as retrieval finishes, the text fills in as it streams, and
    whatever arrived stays when the user presses Stop or generation fails."""

    def __init__(self, request: ChatRequest) -> None:
        self.request = request
        self.header = ""
        self.body = ""
        self.sources: list[dict[str, Any]] = []
        self.query_id = ""
        self.message: cl.Message | None = None
        self.how: cl.Step | None = None
        self.sentences: list[str] = []
        self.started = time.perf_counter()
        self.sources_at: float | None = None
        self.pushed = 0.0
        self.failure = ""
        self.notices: list[str] = []

    def content(self, *, notice: str | None = None, cut_off: bool = False, writing: bool = True,
                stopped: bool = False) -> str:
        return render.answer_markdown(header=self.header, body=self.body, sources=self.sources, notice=notice,
                                      cut_off=cut_off, writing=writing, stopped=stopped)

    async def run(self) -> ChatResponse | None:
        try:
            async for event in get_mindnet().chat.astream(self.request):
                if event.kind == "done":
                    response = ChatResponse.model_validate(event.data)
                    await self.finish(response)
                    return response
                await self.on_event(event.kind, event.data)
        except asyncio.CancelledError:   # Stop: keep what is on screen, say it was stopped
            if self.how is not None:
                self.how.end = utc_now()
                await asyncio.shield(self.how.update())
            if self.message is not None:     # one message says it was stopped, and it can still be rated
                self.message.content = self.content(writing=False, stopped=True)
                self.message.metadata = self.turn_metadata()
                await asyncio.shield(self.message.update())
                if self.query_id:
                    await asyncio.shield(send_rating(self.message.id, self.query_id))
            raise
        if self.failure:
            await say_error("Chat problem", self.failure, actions=[retry_action(self.request.message)])
        return None

    def turn_metadata(self) -> dict[str, Any]:
        """What a resumed thread needs to show this answer again: its source panels and its query_id."""
        panels = [render.source_props(i, h, query=self.request.message, query_id=self.query_id)
                  for i, h in enumerate(self.sources, 1)]
        return resume.turn_metadata(panels, query_id=self.query_id, question=self.request.message)

    async def on_event(self, kind: str, data: dict[str, Any]) -> None:
        if kind == "intent":
            self.header = render.badge(str(data.get("strategy", "?"))) + f" *{render.escape(data.get('reason'))}*"
        if kind in render.STEP_TITLES:
            await self.step(kind, data)
        if kind == "sources":
            self.sources = list(data.get("sources") or [])
            self.query_id = str(data.get("query_id") or "")
            self.sources_at = time.perf_counter()
            await self.show_sources()
        elif kind == "token":
            self.body += str(data.get("text", ""))
            await self.push()
        elif kind == "error":   # a `done` with the partial answer and a notice follows when the engine could
            self.failure = str(data.get("message", "unknown error"))
        elif kind not in render.STEP_TITLES and data.get("message"):   # e.g. "your message was shortened"
            self.notices.append(str(data["message"]))

    async def step(self, kind: str, data: dict[str, Any]) -> None:
        if self.how is None:   # inside this message's run, so it shows above the answer
            run = context.current_step
            self.how = cl.Step(name=render.HOW_TITLE, type="tool", show_input=False,
                               parent_id=run.id if run else None)
            self.how.start = utc_now()
            await self.how.send()
        self.sentences.append(render.how_sentence(kind, data))
        child = cl.Step(name=render.STEP_TITLES[kind], type="tool", parent_id=self.how.id, show_input=False)
        child.start = child.end = utc_now()
        child.output = render.step_output(kind, data)
        await child.send()
        self.how.output = " ".join(self.sentences)
        await self.how.update()

    async def show_sources(self) -> None:
        """The answer message with its numbered sources, before the first token."""
        elements = source_elements(self.sources, question=self.request.message, query_id=self.query_id)
        self.message = cl.Message(content=self.content(), metadata={"query_id": self.query_id})
        await self.message.send()    # the numbered list first: it shows at once
        # then the panels (the "[n]" become links); not kept on the message, so its updates never re-send
        # them (that would re-open the side panel the user closed)
        await asyncio.gather(*(e.send(for_id=self.message.id) for e in elements))
        if elements:
            await show_sources_panel(elements, self.query_id, self.request.message)

    async def push(self, force: bool = False) -> None:
        if self.message is None:
            self.message = cl.Message(content=self.content())
            await self.message.send()
            self.pushed = time.perf_counter()
            return
        if force or time.perf_counter() - self.pushed >= STREAM_REFRESH:
            self.pushed = time.perf_counter()
            self.message.content = self.content()
            await self.message.update()

    async def finish(self, response: ChatResponse) -> None:
        self.query_id = response.query_id
        if response.sources and not self.sources:      # a client-less path: sources only in the final answer
            self.sources = response.sources
        # during an import the final answer may differ from the streamed one: it never claims "nothing in your notes"
        self.body = response.answer if (response.cut_off or not self.body or response.import_notice) else self.body
        if not (response.generation_available or response.cut_off or response.draft):   # passages: shown as text
            self.body = render.passages_markdown(self.sources)
        if response.draft:   # the note opens in the editor below; do not show it twice
            self.body = render.without_note_block(self.body)
        if self.how is not None:
            ready = (f"the sources were ready after {(self.sources_at - self.started) * 1000:.0f} ms and "
                     if self.sources_at else "")
            self.how.output = " ".join([*self.sentences, f"Timing: {ready}the whole answer took "
                                        f"{(time.perf_counter() - self.started) * 1000:.0f} ms."])
            self.how.end = utc_now()
            await self.how.update()
        notices = [*self.notices, *([response.notice] if response.notice and response.notice not in self.body
                                    else [])]
        notice = " ".join(dict.fromkeys(notices)) or None
        content = self.content(notice=notice, cut_off=response.cut_off, writing=False)
        if self.message is None:
            elements = source_elements(self.sources, question=self.request.message, query_id=self.query_id)
            self.message = cl.Message(content=content, elements=elements, metadata=self.turn_metadata())
            await self.message.send()
            await self.rating()
            if elements:
                await show_sources_panel(elements, self.query_id, self.request.message)
            return
        self.message.content = content
        self.message.metadata = self.turn_metadata()     # a resumed thread rebuilds the turn from it
        failed = self.failure or response.generation_failed     # Ollama answered with an error: try again
        self.message.actions = [retry_action(self.request.message)] if failed else []
        await self.message.update()
        await self.rating()

    async def rating(self) -> None:
        """The answer's one rating control (none without a query_id: nothing could be rated)."""
        if self.message is not None and self.query_id:
            await send_rating(self.message.id, self.query_id)


def source_elements(sources: list[dict[str, Any]], *, question: str, query_id: str) -> list[cl.CustomElement]:
    """One SourcePanel per source, named "[n]" so the answer's citations "[n]" link to it."""
    return [cl.CustomElement(name=render.source_name(i), display="side",
                             props=render.source_props(i, h, query=question, query_id=query_id))
            for i, h in enumerate(sources, 1)]


async def show_sources_panel(elements: list[Any], query_id: str, question: str) -> None:
    """Chainlit opens its side panel by itself with every side element of the session stacked, titled with the
    last one's name. Point it at this answer's sources under a clear title instead (on wide screens; the page
    script keeps it closed on phones). The elements are already sent, so only the panel event goes out; the
    short wait lets the browser apply Chainlit's own update first."""
    await asyncio.sleep(SIDE_PANEL_DELAY)
    panel = {"elements": [e.to_dict() for e in elements], "title": render.sources_title(question, len(elements))}
    cl.user_session.set(SOURCES_PANEL, panel)
    await point_sources_panel(panel, key=query_id)


async def point_sources_panel(panel: dict[str, Any], *, key: str) -> None:
    await context.emitter.emit("set_sidebar_elements", {"elements": panel["elements"], "key": key})
    await cl.ElementSidebar.set_title(panel["title"])


async def show_sources_again(_: dict[str, Any]) -> None:
    """The page was drawn anew for the thread's own address (`resume.show_thread_url`): Chainlit, mounting its
    messages again, re-derived the side panel from every source of the session under the last one's name
    ("[5]"). The page script says so once that panel is on the screen; the answer's panel is pointed at again
    (a new key: Chainlit ignores a panel event with the key it already shows)."""
    panel = cl.user_session.get(SOURCES_PANEL)
    if isinstance(panel, dict):
        await point_sources_panel(panel, key=str(uuid.uuid4()))


def retry_action(question: str) -> cl.Action:
    """Ask the same question again (after the model failed): the history's "ask again" action."""
    return cl.Action(name="ask_again", label="Retry", icon="rotate-ccw", tooltip="ask the same question again",
                     payload={"query": question})


@cl.action_callback("rate")
@readable
async def on_rate(action: cl.Action) -> dict[str, Any]:
    """A rating from an answer's AnswerRating or a source's panel (with the reasons and comment given, if any);
    the elements show the choice themselves."""
    p = action.payload
    reasons = p.get("reasons") or []
    record = get_mindnet().logs.record_feedback(
        str(p.get("query_id")), int(p.get("score", 0)), node_id=str(p.get("node_id") or GENERATED_ANSWER),
        comment=str(p.get("comment") or ""), reasons=[str(r) for r in reasons] if isinstance(reasons, list) else [])
    what = "answer" if record.node_id == GENERATED_ANSWER else "source"
    await cl.context.emitter.send_toast(f"Feedback saved: {what} rated {record.score}/5", "success")
    return {"recorded": True, "query_id": record.query_id, "node_id": record.node_id, "score": record.score,
            "reasons": record.reasons, "comment": record.comment or ""}
