"""Records which slot Scrapy 2.19's DownloaderAwarePriorityQueue pops from, given the
active downloads per slot before each pop (its `_next_slot`, ties included), for
tests/downloader_semantics.rs.

    /work/venv-ref/bin/python tests/data/pqueues/record.py > tests/data/pqueues/next_slot.json
"""

import json
import random
import sys

import scrapy
from scrapy.pqueues import DownloaderAwarePriorityQueue


class State:
    _last_selected_slot = None


SLOTS = ["a.test", "b.test", "c.test", "d.test", "10.0.0.1", "Z.test"]

rng = random.Random(20261130)
scenarios = []
for n in range(12):
    state = State()
    slots = rng.sample(SLOTS, rng.randint(1, len(SLOTS)))
    steps = []
    for _ in range(30):
        # Mostly ties (0 or 1 active), sometimes a busier slot.
        active = {s: rng.choice([0, 0, 0, 1, 1, 2]) for s in slots}
        stats = [(active[s], s) for s in slots]
        chosen = DownloaderAwarePriorityQueue._next_slot(state, stats, update_state=True)
        steps.append({"active": active, "chosen": chosen})
    scenarios.append({"slots": slots, "steps": steps})

json.dump({"scrapy": scrapy.__version__, "scenarios": scenarios}, sys.stdout, indent=1)
sys.stdout.write("\n")
