#!/usr/bin/env python3
"""A site shaped unlike the benchmark fixture, for training a profile-guided build.

The profile-guided build of `examples/fixture_crawl` and the `trawl` binary is trained
on this site rather than on the fixture, so the benchmark's own pages are not what the
profile saw: 3,000 generated blog posts (navigation lists, tables, forms, entities such
as `&euro;` and `&copy;`, upper-case tags, relative links with queries and fragments, a
script holding markup) and an index linking every 50th post. The measurements of that
build are in benches/RESULTS.md.

    python3 scripts/pgo_blog_site.py DIR [PORT]

writes the site into DIR and serves it on 127.0.0.1:PORT (default 8095; 0 for a free port,
printed; HTTP/1.1, keep-alive, one thread per connection) until interrupted.
`scripts/pgo_build.sh` starts it on port 0, trains on it and builds (DESIGN.md §14d).
"""

import functools
import http.server
import os
import random
import sys

POSTS = 3000
WORDS = ("lorem ipsum dolor sit amet consectetur adipiscing elit sed do eiusmod "
         "tempor incididunt").split()


def words(rng, n):
    return " ".join(rng.choice(WORDS) for _ in range(n))


def post(rng, i):
    links = rng.sample(range(POSTS), 8)
    rows = "".join(
        f"<tr><td class='k'>{words(rng, 1)}</td><td data-v='{j}'>{rng.randint(0, 999)} &euro;</td></tr>"
        for j in range(rng.randint(3, 12)))
    nav = "".join(
        f"<li class='nav-item'><a class='nav-link' href='/post/{n}.html' "
        f"title='{words(rng, 2)}'>{words(rng, 2).title()}</a></li>" for n in links)
    paras = "".join(
        f"<p>{words(rng, rng.randint(20, 60))} &amp; <em>{words(rng, 2)}</em> "
        f"<a href='post/{rng.randrange(POSTS)}.html?ref=p{i}#c'>{words(rng, 1)}</a>.</p>"
        for _ in range(rng.randint(3, 8)))
    return f"""<!doctype html><html><head><meta charset="utf-8"><title>Post {i}</title>
<link rel="stylesheet" href="/s.css"><script>var x = "<a href='nope'>";</script></head>
<BODY class="blog"><header><nav><ul class="nav">{nav}</ul></nav></header>
<main><article id="post-{i}"><h2 class="title">{words(rng, 5)}</h2>{paras}
<table class="specs"><thead><tr><th>k</th><th>v</th></tr></thead><tbody>{rows}</tbody></table>
<div class="quote"><span class="text">{words(rng, 12)}</span> <small class="author">{words(rng, 2)}</small></div>
<form action="/search" method="get"><input type="text" name="q"><input type="submit" value="Go"></form>
</article></main><footer><p>&copy; 2026 <A HREF="/post/{(i + 1) % POSTS}.html">next</A> | <a href="/index.html">home</a></p></footer></BODY></html>"""


def write_site(root):
    rng = random.Random(7)
    os.makedirs(os.path.join(root, "post"), exist_ok=True)
    for i in range(POSTS):
        with open(os.path.join(root, "post", f"{i}.html"), "w", encoding="utf-8") as f:
            f.write(post(rng, i))
    with open(os.path.join(root, "index.html"), "w", encoding="utf-8") as f:
        f.write("<html><body>" + "".join(
            f"<a href='/post/{i}.html'>{i}</a>" for i in range(0, POSTS, 50)) + "</body></html>")
    with open(os.path.join(root, "robots.txt"), "w", encoding="utf-8") as f:
        f.write("User-agent: *\nDisallow: /private\n")


class Handler(http.server.SimpleHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def log_message(self, *args):
        pass


def main():
    if len(sys.argv) < 2:
        sys.exit(__doc__)
    root = sys.argv[1]
    port = int(sys.argv[2]) if len(sys.argv) > 2 else 8095
    write_site(root)
    server = http.server.ThreadingHTTPServer(
        ("127.0.0.1", port), functools.partial(Handler, directory=root))
    # Printed once bound, with the port the system chose when asked for port 0
    # (scripts/pgo_build.sh reads this line).
    port = server.server_address[1]
    print(f"{POSTS} posts in {root}; serving http://127.0.0.1:{port}/index.html", flush=True)
    try:
        server.serve_forever()
    except KeyboardInterrupt:
        pass


if __name__ == "__main__":
    main()
