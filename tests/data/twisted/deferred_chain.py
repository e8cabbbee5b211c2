"""Runs the scenario of examples/deferred_chain.rs on the real Twisted and Scrapy and
prints its lines: tests/examples.rs compares the example's output with them.

Twisted's task.Clock, deferLater and LoopingCall; Scrapy's CallLaterOnce, its
call_later routed to the same Clock (Scrapy calls the global reactor's callLater).
Three "downloads" finish at 0.4, 1.2 and 2.0 s; the third makes the output handler
fail. Each goes through the engine's per-request chain (handle, log, remove from
inprogress, schedule the next pass); a 5 s heartbeat pokes the scheduling loop.

    /work/venv-ref/bin/python tests/data/twisted/deferred_chain.py > tests/data/twisted/deferred_chain.txt
"""

import scrapy.utils.asyncio
from scrapy.utils.reactor import CallLaterOnce
from twisted.internet import task

clock = task.Clock()
scrapy.utils.asyncio.call_later = clock.callLater
inprogress = set()
passes = 0


def at():
    return f"[{clock.seconds():>4.1f}s]"


def scheduling_pass():
    global passes
    passes += 1
    print(f"{at()} scheduling pass #{passes}")


nextcall = CallLaterOnce(scheduling_pass)
heartbeat = task.LoopingCall(nextcall.schedule, 0.0)
heartbeat.clock = clock
stopped = heartbeat.start(5.0, now=True)


def start_chain(url, download):
    def handle(body):
        print(f"{at()}   handle_downloader_output({url}): {len(body)} bytes")
        if url == "/boom":
            raise RuntimeError("the spider callback raised")

    def log(failure):
        print(f"{at()}   log: Error while handling downloader output: {failure.getErrorMessage()}")

    def remove(_):
        inprogress.discard(url)
        print(f"{at()}   remove_request({url})")

    download.addCallback(handle).addErrback(log).addBoth(remove).addBoth(
        lambda _: nextcall.schedule(0.0)
    )


for url, latency in [("/a", 0.4), ("/b", 1.2), ("/boom", 2.0)]:
    inprogress.add(url)
    print(f"{at()} download started: {url}")
    start_chain(url, task.deferLater(clock, latency, lambda url=url: f"<html for {url}>"))

clock.pump([0.5, 0.5, 0.5, 0.5, 4.0, 5.0])
heartbeat.stop()
# Rust's Debug of an empty BTreeSet and a bool.
left = "{" + ", ".join(f'"{u}"' for u in sorted(inprogress)) + "}"
print(
    f"{at()} done: inprogress={left}, heartbeat stopped={str(stopped.called).lower()}, "
    f"{passes} scheduling passes"
)
