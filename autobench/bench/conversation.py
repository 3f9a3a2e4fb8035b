"""Multi-turn conversations: each conversation's turns in order, the model's answers appended.

A conversation is a measured prompt with later user turns (``Prompt.turns``: a ShareGPT
entry's human turns, a record's ``fields.turns``).  Its first turn is sent as any prompt;
when the answer has ended, the next turn is sent with the conversation so far -- every user
turn and every answer the server gave, in order -- so each turn's prompt holds the previous
turns and answers, which is how chat traffic loads the KV cache (and the prefix cache: a
later turn's prompt starts with the earlier one's).  Through ``chat`` the history is the
``messages`` list (user, assistant, user, ...); through ``completions`` it is one text, the
turns and answers joined by paragraph breaks.

Up to ``concurrency`` conversations are in flight at once, one turn each (the closed loop's
slots, ``autobench.bench.closedloop``): a slot whose turn ended sends its conversation's next
turn, or takes the next conversation when that one is done.  A turn that fails ends its
conversation (there is no answer to continue from); its later turns are not sent and count
as ``not_dispatched``.  The time cap stops new turns as it stops new prompts.

Every turn is one request record; the result says which turn each was
(``multi_turn.ttft_by_turn_ms``: TTFT statistics of the first turns, the second turns, ...).
The answer's text is read from the stream after it ended (the hot path still parses only
what it always did); the next turn's request is built then, so building it is client time
between two turns of one conversation, as in any chat client.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING, Any, Protocol

from autobench.bench import metrics as M
from autobench.bench.closedloop import ClosedLoop
from autobench.bench.datasets import Dataset, Prompt, estimate_tokens
from autobench.bench.record import OK, RequestRecord
from autobench.bench.sse import SSEParser
from autobench.bench.stream import StreamSink
from autobench.bench.transport import Pool
from autobench.digits import load_json

if TYPE_CHECKING:
    from autobench.bench.client import BenchConfig

#: Between a turn and the answer before it, when a conversation is one completions prompt.
JOIN = "\n\n"


class TextSink(StreamSink):
    """A :class:`StreamSink` that also keeps the body, so the answer's text can be read after
    the stream ended (bounded by the stream's byte cap, ``stream.stream_caps``)."""

    __slots__ = ("raw",)

    def __init__(self, rec: RequestRecord, *, chat: bool, allow_missing_usage: bool, max_tokens: int = 256):
        super().__init__(rec, chat=chat, allow_missing_usage=allow_missing_usage, max_tokens=max_tokens)
        self.raw = bytearray()

    def on_body(self, data: bytes, now: float) -> bool:
        if self.err_body is None:
            self.raw += data
        return super().on_body(data, now)

    def answer(self) -> str:
        """The text of every token chunk, in order (completions ``text``, chat ``delta.content``)."""
        parser = SSEParser()
        parts: list[str] = []
        for ev in [*parser.feed(bytes(self.raw)), *parser.finish()]:
            try:
                obj = load_json(ev)  # [DONE] and anything else that is not JSON carry no text
            except ValueError:
                continue
            choices = obj.get("choices") if isinstance(obj, dict) else None
            if not choices or not isinstance(choices, list) or not isinstance(choices[0], dict):
                continue
            ch = choices[0]
            delta = ch.get("delta")
            text = delta.get("content") if isinstance(delta, dict) else ch.get("text")
            if isinstance(text, str):
                parts.append(text)
        return "".join(parts)


@dataclass
class Conversation:
    """One conversation in flight: its user turns, the answers so far."""

    prompt: Prompt
    turns: tuple[str, ...]  # every user turn, the first included
    answers: list[str] = field(default_factory=list)

    def messages(self) -> list[dict[str, str]]:
        """The chat history up to the next user turn (user, assistant, ..., user)."""
        out: list[dict[str, str]] = []
        for i, answer in enumerate(self.answers):
            out += [{"role": "user", "content": self.turns[i]}, {"role": "assistant", "content": answer}]
        return [*out, {"role": "user", "content": self.turns[len(self.answers)]}]

    def text(self) -> str:
        """The history as one completions prompt: turns and answers joined by paragraph breaks."""
        parts: list[str] = []
        for i, answer in enumerate(self.answers):
            parts += [self.turns[i], answer]
        return JOIN.join([*parts, self.turns[len(self.answers)]])


def conversations(prompts: Sequence[Prompt]) -> list[Conversation]:
    return [Conversation(p, (p.text, *p.turns)) for p in prompts]


def planned_requests(prompts: Sequence[Prompt]) -> int:
    """Requests a multi-turn run would send if every turn were answered."""
    return sum(1 + len(p.turns) for p in prompts)


class _Turns(Iterator[int]):
    """The closed loop's source of request indices: the finishing slot's next turn, else the
    first turn of the next conversation (its request built and appended on the way)."""

    def __init__(self, loop: ConversationLoop):
        self.loop = loop
        self.next_conv = 0

    def __next__(self) -> int:
        lp = self.loop
        prev = lp.prev
        lp.prev = None
        if prev is not None:
            conv = lp.conv_of.get(prev.index)
            if conv is not None and len(conv.answers) < len(conv.turns):
                return lp.add(conv)
        if self.next_conv >= len(lp.convs):
            raise StopIteration
        conv = lp.convs[self.next_conv]
        self.next_conv += 1
        return lp.add(conv)


class ConversationLoop(ClosedLoop):
    """The closed loop over conversations: ``conc`` slots, each one conversation at a time."""

    def __init__(
        self,
        *,
        pool: Pool,
        convs: list[Conversation],
        build: Callable[[Conversation], bytes],
        records: list[RequestRecord],
        conc: int,
        make_sink: Callable[[RequestRecord], StreamSink],
        read_timeout: float,
        stopped: Callable[[], bool] = lambda: False,
        done: Callable[[RequestRecord], None] | None = None,
    ):
        self.bodies_list: list[bytes] = []
        self.tokens_list: list[int] = []
        super().__init__(
            pool=pool,
            bodies=self.bodies_list,
            prompt_tokens=self.tokens_list,
            records=records,
            conc=conc,
            make_sink=self._make_sink,
            read_timeout=read_timeout,
            stopped=stopped,
            done=done,
        )
        self.conc = min(conc, len(convs))
        self.convs = convs
        self.build = build
        self.inner_sink = make_sink
        self.sinks: dict[int, StreamSink] = {}
        self.conv_of: dict[int, Conversation] = {}
        self.turn_of: dict[int, int] = {}  # request index -> turn number (1-based)
        self.prev: RequestRecord | None = None
        self._it = _Turns(self)

    def add(self, conv: Conversation) -> int:
        """Build the conversation's next turn as request number ``len(bodies)``."""
        i = len(self.bodies_list)
        self.bodies_list.append(self.build(conv))
        # the prompt's length when the server reports no usage: the history's, estimated
        self.tokens_list.append(conv.prompt.est_tokens if not conv.answers else estimate_tokens(conv.text()))
        self.conv_of[i] = conv
        self.turn_of[i] = len(conv.answers) + 1
        return i

    def _make_sink(self, rec: RequestRecord) -> StreamSink:
        sink = self.sinks[rec.index] = self.inner_sink(rec)
        return sink

    def _finish(self, rec: RequestRecord) -> None:
        sink = self.sinks.pop(rec.index, None)
        conv = self.conv_of.get(rec.index)
        if conv is not None:
            if rec.status == OK and isinstance(sink, TextSink):
                conv.answers.append(sink.answer())
            else:  # no answer to go on from: the conversation ends here
                self.conv_of.pop(rec.index, None)
        self.prev = rec
        super()._finish(rec)


class Runner(Protocol):
    """What a conversation loop needs of the bench client (``autobench.bench.client._Runner``)."""

    ds: Dataset
    cfg: BenchConfig
    chat: bool
    path: str
    stream_tokens: int

    def body(self, p: Prompt) -> bytes: ...

    def _done(self, rec: RequestRecord) -> None: ...


def conversation_loop(
    runner: Runner, pool: Pool, records: list[RequestRecord], conc: int, stopped: Callable[[], bool]
) -> ConversationLoop:
    """The measured run's loop over ``runner``'s prompts, each a conversation."""
    cfg = runner.cfg

    def build(conv: Conversation) -> bytes:
        if runner.chat:
            body = chat_body(runner.body(conv.prompt), conv)
        else:
            body = runner.body(replace(conv.prompt, text=conv.text()))
        return pool.request_bytes("POST", runner.path, body, accept="text/event-stream")

    def sink(rec: RequestRecord) -> StreamSink:
        return TextSink(
            rec, chat=runner.chat, allow_missing_usage=cfg.allow_missing_usage, max_tokens=runner.stream_tokens
        )

    return ConversationLoop(
        pool=pool,
        convs=conversations(runner.ds.prompts),
        build=build,
        records=records,
        conc=conc,
        make_sink=sink,
        read_timeout=cfg.read_timeout,
        stopped=stopped,
        done=runner._done,
    )


def add_turns(
    data: dict[str, object], prompts: Sequence[Prompt], records: Sequence[RequestRecord], loop: ConversationLoop
) -> None:
    """A multi-turn run's result: what was planned and sent, per-turn TTFT (``multi_turn``), and
    ``not_dispatched`` counted in turns (``num_prompts`` counts conversations)."""
    planned = planned_requests(prompts)
    finished = sum(1 for c in loop.convs if len(c.answers) == len(c.turns))
    data["not_dispatched"] = planned - len(records)
    data["multi_turn"] = {
        "conversations": len(prompts),
        "conversations_completed": finished,
        "turns_planned": planned,
        "turns_sent": len(records),
        "ttft_by_turn_ms": ttft_by_turn(records, loop.turn_of),
    }


def chat_body(base: bytes, conv: Conversation) -> bytes:
    """A chat request body (``base``, built for the conversation's prompt) with the history."""
    obj: dict[str, Any] = json.loads(base)
    obj["messages"] = conv.messages()
    return json.dumps(obj, separators=(",", ":"), allow_nan=False).encode()


def ttft_by_turn(records: Sequence[RequestRecord], turn_of: dict[int, int]) -> dict[str, dict[str, float | None]]:
    """TTFT statistics (ms) of the completed requests of each turn number, and their count."""
    by_turn: dict[int, list[float]] = {}
    for r in records:
        if r.status == OK and r.first is not None:
            by_turn.setdefault(turn_of[r.index], []).append(r.first - r.start)
    return {str(t): {"completed": len(v), **M.summarize(v, scale=1000.0)} for t, v in sorted(by_turn.items())}


__all__ = [
    "Conversation",
    "ConversationLoop",
    "add_turns",
    "conversation_loop",
    "TextSink",
    "chat_body",
    "conversations",
    "planned_requests",
    "ttft_by_turn",
]
