"""One load generator of a bench over several processes (``python -m autobench.bench.worker``).

It speaks autobench.bench.fleet's protocol on stdin / stdout: reads its ``plan``, checks the
model, opens its connections and warms them up, says ``ready``, answers clock ``ping``s,
waits for the common ``start`` (in its own clock), runs its share of the bench on its own
event loop, then sends its request records and its run's figures.  Anything it has to say
otherwise goes to stderr (the parent shows its last line when the worker fails).
"""

from __future__ import annotations

import asyncio
import sys
import time
from typing import IO, TYPE_CHECKING

from autobench.bench import fleet
from autobench.errors import BenchError

if TYPE_CHECKING:
    from autobench.bench.datasets import Dataset


def _dataset(plan: dict[str, object]) -> Dataset:
    from autobench.bench.datasets import Dataset, Prompt

    def prompts(rows: object) -> list[Prompt]:
        if not isinstance(rows, list) or not all(isinstance(r, list) and len(r) == 5 for r in rows):
            raise BenchError("the plan's prompts are not [text, tokens, max_tokens, category, turns] rows")
        return [
            Prompt(
                str(t),
                fleet.number(e, "tokens"),
                fleet.number(m, "max_tokens"),
                category=c if isinstance(c, str) else None,
                turns=tuple(str(x) for x in turns) if isinstance(turns, list) else (),
            )
            for t, e, m, c, turns in rows
        ]

    return Dataset(
        kind="worker", path=None, prompts=prompts(plan["prompts"]), warmup=prompts(plan["warmup"]), available=0
    )


def serve(inp: IO[bytes], out: IO[bytes]) -> int:
    """Run one load generator on the streams ``inp`` / ``out``; the exit code."""
    from autobench.bench.client import BenchConfig, _Runner
    from autobench.bench.loop import loop_factory
    from autobench.bench.transport import Pool

    def send(data: bytes) -> None:
        out.write(data)
        out.flush()

    try:
        plan = fleet.read_message(inp.readline(), ("plan",), "the parent")
        if plan.get("version") != fleet.PROTOCOL_VERSION:
            raise BenchError(
                f"protocol version {plan.get('version')!r}; this load generator speaks {fleet.PROTOCOL_VERSION}"
            )
        settings = plan.get("config")
        if not isinstance(settings, dict) or not set(settings) <= {*fleet.CONFIG_FIELDS, "concurrency"}:
            raise BenchError(f"the plan's settings are not {', '.join(fleet.CONFIG_FIELDS)}")
        cfg = BenchConfig(**settings, scrape_metrics=False, tokenizer="estimated")
        cfg.check()
        runner = _Runner(cfg, _dataset(plan), None)
        arrivals = plan.get("arrivals")
        if isinstance(arrivals, list):
            runner.arrivals = [float(a) for a in arrivals if isinstance(a, (int, float))]
    except BenchError as exc:
        send(fleet.message("error", message=exc.message, hint=exc.hint))
        return 5

    async def session() -> None:
        runner.stop_event = asyncio.Event()
        runner.pool = Pool(runner.base, cfg.connect_timeout, headers=cfg.auth_headers())
        try:
            served, bodies = await runner.prepare()
            tokens = plan.get("stream_tokens")
            runner.stream_tokens = fleet.number(tokens, "stream_tokens") if tokens else runner.stream_tokens
            send(fleet.message("ready", served=served))
            while True:  # clock pings until the start
                msg = fleet.read_message(inp.readline(), ("ping", "start"), "the parent")
                if msg["t"] == "ping":
                    send(fleet.message("pong", clock=time.perf_counter()))
                    continue
                break
            t0, t_end, cap_hit, cpu, lags = await runner.measure(bodies, fleet.seconds(msg, "at"))
        finally:
            runner.pool.close()
        runner.end_in_flight()
        rows = [fleet.row_of(r) for r in runner.records]
        for i in range(0, len(rows), fleet.ROWS_PER_MESSAGE):
            send(fleet.message("records", rows=rows[i : i + fleet.ROWS_PER_MESSAGE]))
        send(
            fleet.message(
                "done", t0=t0, t_end=t_end, cap_hit=cap_hit, cpu=cpu, lags=lags, interrupted=runner.interrupted
            )
        )

    factory, _ = loop_factory()
    try:
        with asyncio.Runner(loop_factory=factory) as r:
            r.run(runner.run_interruptible(session))
    except BenchError as exc:
        send(fleet.message("error", message=exc.message, hint=exc.hint))
        return 5
    except (asyncio.CancelledError, KeyboardInterrupt):
        return 130
    return 0


def main() -> int:
    return serve(sys.stdin.buffer, sys.stdout.buffer)


if __name__ == "__main__":
    sys.exit(main())
