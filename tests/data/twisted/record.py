"""Records how Twisted's Deferred, task.Clock, LoopingCall and Scrapy's CallLaterOnce
behave in the scenarios tests/twisted_reference.rs replays against trawl.

Each scenario appends short strings to a log; the Rust test builds the same scenario and
compares its log with the one recorded here. Run with a venv holding Twisted and Scrapy:

    /work/venv-ref/bin/python tests/data/twisted/record.py > tests/data/twisted/scenarios.json
"""

import json
import sys

import twisted
import scrapy
from twisted.internet import defer, task
from twisted.python.failure import Failure

SCENARIOS = {}


def scenario(fn):
    SCENARIOS[fn.__name__] = fn
    return fn


def show(value):
    if isinstance(value, Failure):
        return "failure " + value.type.__name__
    if isinstance(value, defer.Deferred):
        return "a Deferred"
    if isinstance(value, list):
        return "[" + ", ".join(show(v) for v in value) + "]"
    if isinstance(value, tuple):
        return "(" + ", ".join(show(v) for v in value) + ")"
    return repr(value)


def logger(log, name):
    def cb(value):
        log.append(f"{name} {show(value)}")
        return value
    return cb


@scenario
def pause_inside_callback(log):
    d = defer.Deferred()

    def pausing(v):
        log.append(f"cb1 {v}")
        d.pause()
        return v + 1

    d.addCallback(pausing)
    d.addCallback(logger(log, "cb2"))
    d.callback(1)
    log.append(f"paused {d.paused}")
    d.addCallback(logger(log, "cb3"))
    log.append("unpause")
    d.unpause()
    log.append(f"paused {d.paused}")


@scenario
def callback_added_during_pass_after_pause(log):
    d = defer.Deferred()

    def pausing(v):
        log.append(f"cb1 {v}")
        d.pause()
        d.addCallback(logger(log, "added-in-cb1"))
        return v

    d.addCallback(pausing)
    d.callback(1)
    log.append(f"paused {d.paused}")
    d.unpause()


@scenario
def deferred_list_same_member_twice(log):
    d = defer.Deferred()
    dl = defer.DeferredList([d, d])
    dl.addCallback(lambda r: log.append("list " + show([v for _, v in r])))
    d.callback(1)
    d.addCallback(logger(log, "member after"))


@scenario
def gather_results_same_member_twice(log):
    d = defer.Deferred()
    g = defer.gatherResults([d, d])
    g.addCallback(logger(log, "gathered"))
    d.callback(1)


@scenario
def deferred_in_two_lists(log):
    d = defer.Deferred()
    defer.DeferredList([d]).addCallback(lambda r: log.append("first list " + show([v for _, v in r])))
    defer.DeferredList([d]).addCallback(lambda r: log.append("second list " + show([v for _, v in r])))
    d.callback(7)


@scenario
def callback_after_list(log):
    d = defer.Deferred()
    defer.DeferredList([d])
    d.callback(3)
    d.addCallback(logger(log, "late"))


@scenario
def callback_after_chained(log):
    outer = defer.Deferred()
    inner = defer.Deferred()
    outer.addCallback(lambda _: inner)
    outer.addCallback(logger(log, "outer"))
    outer.callback(0)
    inner.callback(5)
    inner.addCallback(logger(log, "inner late"))


@scenario
def unpause_while_waiting_on_inner(log):
    outer = defer.Deferred()
    inner = defer.Deferred()
    outer.addCallback(lambda _: inner)
    outer.addCallback(logger(log, "tail"))
    outer.callback(0)
    log.append(f"paused {outer.paused}")
    outer.unpause()
    log.append(f"after unpause paused {outer.paused}")
    inner.callback(9)
    log.append(f"after inner fired paused {outer.paused}")
    outer.addCallback(logger(log, "later"))


@scenario
def return_consumed_deferred(log):
    shared = defer.succeed(2)
    first = defer.Deferred()
    first.addCallback(lambda _: shared)
    first.addCallback(logger(log, "first"))
    first.callback(0)
    second = defer.Deferred()
    second.addCallback(lambda _: shared)
    second.addBoth(logger(log, "second"))
    second.callback(0)


@scenario
def add_timeout_on_timeout_cancel(log):
    clock = task.Clock()
    d = defer.Deferred()
    d.addTimeout(5, clock, onTimeoutCancel=lambda r, t: f"timed out after {t} with {show(r)}")
    d.addBoth(logger(log, "result"))
    clock.advance(4)
    log.append("4s")
    clock.advance(1)


@scenario
def add_timeout_cancelled_before(log):
    clock = task.Clock()
    d = defer.Deferred()
    d.addTimeout(5, clock, onTimeoutCancel=lambda r, t: "converted")
    d.addErrback(lambda f: log.append("errback " + f.type.__name__))
    d.cancel()
    log.append(f"pending calls {len(clock.getDelayedCalls())}")


@scenario
def add_timeout_default(log):
    clock = task.Clock()
    d = defer.Deferred()
    d.addTimeout(2, clock)
    d.addErrback(lambda f: log.append("errback " + f.type.__name__))
    clock.advance(2)


@scenario
def looping_call_reset(log):
    clock = task.Clock()
    lc = task.LoopingCall(lambda: log.append(f"call at {clock.seconds()}"))
    lc.clock = clock
    lc.start(10, now=False)
    clock.advance(5)
    lc.reset()
    for _ in range(4):
        clock.advance(5)
    lc.stop()


@scenario
def clock_call_raises(log):
    clock = task.Clock()
    clock.callLater(1, lambda: log.append("a"))

    def boom():
        log.append("b raises")
        raise ValueError("boom")

    clock.callLater(1, boom)
    clock.callLater(1, lambda: log.append("c"))
    try:
        clock.advance(1)
        log.append("advance returned")
    except ValueError:
        log.append("advance raised")
    log.append(f"pending {len(clock.getDelayedCalls())}")
    clock.advance(0)
    log.append(f"pending {len(clock.getDelayedCalls())}")


@scenario
def clock_reset_later_to_same_time(log):
    clock = task.Clock()
    a = clock.callLater(1, lambda: log.append("a"))
    clock.callLater(2, lambda: log.append("b"))
    a.reset(2)
    clock.callLater(2, lambda: log.append("c"))
    clock.advance(2)


@scenario
def clock_reset_earlier_to_same_time(log):
    clock = task.Clock()
    clock.callLater(2, lambda: log.append("b"))
    a = clock.callLater(3, lambda: log.append("a"))
    clock.callLater(2, lambda: log.append("c"))
    a.reset(2)
    clock.advance(3)


@scenario
def clock_two_resets_later(log):
    clock = task.Clock()
    a = clock.callLater(1, lambda: log.append("a"))
    b = clock.callLater(1, lambda: log.append("b"))
    clock.callLater(5, lambda: log.append("c"))
    a.reset(5)
    clock.callLater(0, lambda: log.append("z"))
    b.reset(5)
    clock.advance(5)


@scenario
def clock_delay_to_same_time(log):
    clock = task.Clock()
    a = clock.callLater(1, lambda: log.append("a"))
    clock.callLater(3, lambda: log.append("b"))
    a.delay(2)
    clock.advance(3)


@scenario
def clock_reset_to_same_time_keeps_place(log):
    clock = task.Clock()
    a = clock.callLater(2, lambda: log.append("a"))
    clock.callLater(2, lambda: log.append("b"))
    a.reset(2)
    clock.advance(2)


def run_call_later_once(log, body):
    """Runs body(clo, ...) under a real reactor, since CallLaterOnce uses it."""
    from twisted.internet import reactor
    from scrapy.utils.reactor import CallLaterOnce

    body(log, reactor, CallLaterOnce)


@scenario
def call_later_once_failure_keeps_waiters(log):
    from scrapy.utils.reactor import CallLaterOnce
    from scrapy.utils.reactor import install_reactor  # noqa: F401
    from twisted.internet import reactor

    state = {"fail": True}

    def func():
        if state["fail"]:
            log.append("func raises")
            raise ValueError("boom")
        log.append("func ok")
        return "result"

    clo = CallLaterOnce(func)
    waiter = defer.Deferred.fromCoroutine(clo.wait())
    waiter.addCallback(lambda _: log.append("waiter released"))
    clo.schedule()

    def second():
        log.append(f"waiter called {waiter.called}")
        state["fail"] = False
        clo.schedule()

    def end():
        log.append(f"waiter called {waiter.called}")
        reactor.stop()

    reactor.callLater(0.05, second)
    reactor.callLater(0.1, end)
    reactor.run()


SCENARIOS_AFTER_REACTOR = []


def call_later_once_direct(log):
    from scrapy.utils.reactor import CallLaterOnce

    runs = []
    clo = CallLaterOnce(lambda: runs.append(1) or len(runs))
    log.append(f"direct call returned {clo()}")
    try:
        CallLaterOnce(lambda: 1 / 0)()
        log.append("direct call returned")
    except ZeroDivisionError:
        log.append("direct call raised")


SCENARIOS["call_later_once_direct"] = call_later_once_direct


def main():
    out = {
        "_recorded_with": {
            "twisted": twisted.__version__,
            "scrapy": scrapy.__version__,
            "python": sys.version.split()[0],
        }
    }
    # The reactor-based scenario runs last: the reactor cannot be restarted.
    names = sorted(SCENARIOS, key=lambda n: (n == "call_later_once_failure_keeps_waiters", n))
    for name in names:
        log = []
        SCENARIOS[name](log)
        out[name] = log
    json.dump(out, sys.stdout, indent=1, sort_keys=True)
    sys.stdout.write("\n")


if __name__ == "__main__":
    main()
