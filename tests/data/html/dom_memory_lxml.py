"""lxml's memory for the pages of benches/dom_memory.rs, for comparison with trawl's
DOM (DESIGN.md §14b). Each page is built, then parsed with lxml.html.fromstring (what
Scrapy's selectors use) in a fresh process; the retained memory is the RSS after the
parse minus the RSS before it (the input string is built first).

    /work/venv-ref/bin/python tests/data/html/dom_memory_lxml.py [MB]
"""
import subprocess
import sys

PAGES = {
    "text": ("<html><body><p>", lambda i: "word "),
    "dense elements": ("<html><body>", lambda i: "<p>w</p>"),
    "dense links": ("<html><body>", lambda i: f'<a href="/p/{i}">{i}</a>'),
    "dense attributes": ("<html><body>", lambda i: "<i a=1 b=2 c=3>"),
}


def rss():
    with open("/proc/self/status") as f:
        for line in f:
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) * 1024


def child(name, size):
    import lxml.html

    head, unit = PAGES[name]
    parts, n, i = [head], len(head), 0
    while n < size:
        u = unit(i)
        parts.append(u)
        n += len(u)
        i += 1
    html = "".join(parts)
    del parts
    before = rss()
    doc = lxml.html.fromstring(html)
    after = rss()
    print(f"{name:<18} {len(html) / 1048576:6.1f} MB  retained {(after - before) / len(html):5.2f}x  ({(after - before) / 1048576:7.1f} MB)")
    assert doc is not None


if __name__ == "__main__":
    if len(sys.argv) > 2 and sys.argv[1] == "--child":
        child(sys.argv[2], int(sys.argv[3]))
    else:
        size = int(sys.argv[1] if len(sys.argv) > 1 else 50) << 20
        for name in PAGES:
            subprocess.run([sys.executable, __file__, "--child", name, str(size)], check=True)
