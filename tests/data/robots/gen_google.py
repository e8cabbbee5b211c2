#!/usr/bin/env python3
"""Record google/robotstxt's own answers for the cases in its robots_test.cc.

Nothing here is typed by hand: the C++ library is built from the upstream
sources and the upstream test file is run, lightly instrumented, so that every
call it makes is logged together with the library's answer.

Steps (see README.md for the exact commands):

1. Export robots.cc, robots.h, robots_test.cc and robots_main.cc from a bare
   git snapshot of https://github.com/google/robotstxt into a build directory.
2. Instrument a copy of robots_test.cc (mechanical text patches, each asserted
   to apply exactly once):
   * the file-local helper ``IsUserAgentAllowed(robotstxt, useragent, url)``
     logs (gtest test name, EXPECT_TRUE/EXPECT_FALSE that wraps the call,
     robots.txt body, user agent, url, library answer);
   * ``EXPECT_TRUE``/``EXPECT_FALSE`` are redefined to note which of the two
     wraps the call (then defer to gtest's own GTEST_EXPECT_TRUE/FALSE, so the
     test still checks the answer);
   * ``RobotsMatcher::IsValidUserAgentToObey``, ``TestPath`` (i.e.
     ``GetPathParamsQuery``) and ``TestEscape`` (``MaybeEscapePattern``) calls
     are logged too, as auxiliary vectors.
3. Compile with the system abseil + googletest (Debian: libabsl-dev,
   libgtest-dev); check that the unmodified robots_test.cc passes, then run
   the instrumented tests; every gtest test must pass,
   so each recorded answer equals the expectation written in robots_test.cc.
4. Replay every recorded (robots, agent, url) through the *unmodified*
   upstream CLI ``robots_main`` (``robots <file> <agent> <url>``, exit status
   0 = allowed, 1 = disallowed) and assert it gives the same answer.
5. ``--extra FILE`` (used by gen_protego.py): answer arbitrary cases with the
   unmodified ``robots_main`` binary; reads/writes JSON.

Writes google_cases.json next to this script.
"""

from __future__ import annotations

import argparse
import base64
import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path

HERE = Path(__file__).resolve().parent
DEFAULT_GIT_DIR = "/work/.mirror/google+robotstxt/repo"
DEFAULT_BUILD_DIR = "/work/venv-robots/google-build"
SOURCES = ["robots.cc", "robots.h", "robots_test.cc", "robots_main.cc"]

CXX = os.environ.get("CXX", "g++")
CXXFLAGS = ["-std=c++17", "-O1", "-w"]

RECORDER = r'''
// ---- trawl instrumentation (inserted by gen_google.py) ----
#include <cstdio>
#include <cstdlib>
namespace trawl_rec {
static int g_expect = -1;  // 1: inside EXPECT_TRUE, 0: inside EXPECT_FALSE
static FILE* Out() {
  static FILE* f = std::fopen(std::getenv("TRAWL_REC_OUT"), "wb");
  return f;
}
static void Hex(absl::string_view s) {
  static const char* d = "0123456789abcdef";
  if (s.empty()) std::fputc('-', Out());
  for (unsigned char c : s) {
    std::fputc(d[c >> 4], Out());
    std::fputc(d[c & 15], Out());
  }
}
static std::string TestName() {
  const ::testing::TestInfo* t =
      ::testing::UnitTest::GetInstance()->current_test_info();
  return t ? std::string(t->name()) : std::string("?");
}
// One record per line: kind \t test \t expect \t hex fields... \t result
static void Rec(const char* kind, absl::string_view a, absl::string_view b,
                absl::string_view c, absl::string_view result) {
  std::fprintf(Out(), "%s\t%s\t%d\t", kind, TestName().c_str(), g_expect);
  Hex(a); std::fputc('\t', Out());
  Hex(b); std::fputc('\t', Out());
  Hex(c); std::fputc('\t', Out());
  Hex(result); std::fputc('\n', Out());
  std::fflush(Out());
}
static bool ValidUA(absl::string_view ua) {
  bool r = ::googlebot::RobotsMatcher::IsValidUserAgentToObey(ua);
  Rec("valid_ua", ua, "", "", r ? "1" : "0");
  return r;
}
}  // namespace trawl_rec
#undef EXPECT_TRUE
#undef EXPECT_FALSE
#define EXPECT_TRUE(c) \
  do { trawl_rec::g_expect = 1; GTEST_EXPECT_TRUE(c); trawl_rec::g_expect = -1; } while (0)
#define EXPECT_FALSE(c) \
  do { trawl_rec::g_expect = 0; GTEST_EXPECT_FALSE(c); trawl_rec::g_expect = -1; } while (0)
// ---- end of trawl instrumentation ----
'''

PATCHES = [
    # Insert the recorder after the last include of the test file.
    (
        '#include "absl/strings/string_view.h"\n\nnamespace {',
        '#include "absl/strings/string_view.h"\n' + RECORDER + "\nnamespace {",
    ),
    # Log every IsUserAgentAllowed() call with the library's answer.
    (
        "  RobotsMatcher matcher;\n"
        "  return matcher.OneAgentAllowedByRobots(robotstxt, useragent, url);\n",
        "  RobotsMatcher matcher;\n"
        "  bool r = matcher.OneAgentAllowedByRobots(robotstxt, useragent, url);\n"
        '  trawl_rec::Rec("allowed", robotstxt, useragent, url, r ? "1" : "0");\n'
        "  return r;\n",
    ),
    # GetPathParamsQuery vectors.
    (
        "  EXPECT_EQ(expected_path, googlebot::GetPathParamsQuery(url));\n",
        "  EXPECT_EQ(expected_path, googlebot::GetPathParamsQuery(url));\n"
        '  trawl_rec::Rec("path", url, "", "", googlebot::GetPathParamsQuery(url));\n',
    ),
    # MaybeEscapePattern vectors.
    (
        "  EXPECT_EQ(expected, escaped);\n",
        "  EXPECT_EQ(expected, escaped);\n"
        '  trawl_rec::Rec("escape", url, "", "", escaped);\n',
    ),
]
VALID_UA_CALL = "RobotsMatcher::IsValidUserAgentToObey("


def run(cmd, **kw):
    print("+", " ".join(str(c) for c in cmd), file=sys.stderr)
    return subprocess.run(cmd, check=True, **kw)


def git_show(git_dir: str, rev: str, path: str) -> bytes:
    return subprocess.run(
        ["git", f"--git-dir={git_dir}", "show", f"{rev}:{path}"],
        check=True,
        capture_output=True,
    ).stdout


def absl_libs() -> list[str]:
    out = subprocess.run(
        ["pkg-config", "--libs", "absl_strings"],
        check=True,
        capture_output=True,
        text=True,
    ).stdout
    return out.split()


def build(git_dir: str, rev: str, build_dir: Path) -> dict:
    commit = subprocess.run(
        ["git", f"--git-dir={git_dir}", "rev-parse", rev],
        check=True,
        capture_output=True,
        text=True,
    ).stdout.strip()
    commit_date = subprocess.run(
        ["git", f"--git-dir={git_dir}", "log", "-1", "--format=%cI", commit],
        check=True,
        capture_output=True,
        text=True,
    ).stdout.strip()
    build_dir.mkdir(parents=True, exist_ok=True)
    for name in SOURCES:
        (build_dir / name).write_bytes(git_show(git_dir, commit, name))

    test_src = (build_dir / "robots_test.cc").read_text()
    for old, new in PATCHES:
        assert test_src.count(old) == 1, f"patch anchor not found once: {old!r}"
        test_src = test_src.replace(old, new)
    n_ua = test_src.count(VALID_UA_CALL)
    assert n_ua > 0
    # Only the test bodies call it; the recorder itself uses ::googlebot::.
    test_src = test_src.replace(
        "::googlebot::" + VALID_UA_CALL, "@@KEEP@@"
    ).replace(VALID_UA_CALL, "trawl_rec::ValidUA(").replace(
        "@@KEEP@@", "::googlebot::" + VALID_UA_CALL
    )
    (build_dir / "robots_test_recorded.cc").write_text(test_src)

    libs = absl_libs()
    run([CXX, *CXXFLAGS, "-c", "robots.cc", "-o", "robots.o"], cwd=build_dir)
    run(
        [CXX, *CXXFLAGS, "robots_main.cc", "robots.o", "-o", "robots", *libs],
        cwd=build_dir,
    )
    run(
        [
            CXX, *CXXFLAGS, "robots_test_recorded.cc", "robots.o",
            "-o", "robots_test_recorded",
            "-lgtest", "-lgtest_main", "-pthread", *libs,
        ],
        cwd=build_dir,
    )
    # The pristine upstream test file must pass as-is, too.
    run(
        [
            CXX, *CXXFLAGS, "robots_test.cc", "robots.o", "-o", "robots_test",
            "-lgtest", "-lgtest_main", "-pthread", *libs,
        ],
        cwd=build_dir,
    )
    run([str(build_dir / "robots_test"), "--gtest_brief=1"], cwd=build_dir,
        stdout=subprocess.DEVNULL)
    absl_ver = subprocess.run(
        ["pkg-config", "--modversion", "absl_strings"],
        capture_output=True, text=True,
    ).stdout.strip()
    gtest_ver = subprocess.run(
        ["pkg-config", "--modversion", "gtest"], capture_output=True, text=True
    ).stdout.strip()
    cxx_ver = subprocess.run(
        [CXX, "--version"], capture_output=True, text=True
    ).stdout.splitlines()[0]
    return {
        "commit": commit,
        "commit_date": commit_date,
        "abseil": absl_ver,
        "googletest": gtest_ver,
        "compiler": cxx_ver,
    }


def unhex(s: str) -> bytes:
    return b"" if s == "-" else bytes.fromhex(s)


def body_fields(body: bytes, key: str = "robots") -> dict:
    try:
        return {key: body.decode("utf-8")}
    except UnicodeDecodeError:
        return {key + "_b64": base64.b64encode(body).decode("ascii")}


class Cli:
    """The unmodified upstream robots_main binary."""

    def __init__(self, build_dir: Path):
        self.exe = str(build_dir / "robots")
        self.tmp = tempfile.TemporaryDirectory()

    def allowed(self, body: bytes, agent: bytes, url: bytes) -> bool:
        path = Path(self.tmp.name) / "robots.txt"
        path.write_bytes(body)
        p = subprocess.run(
            [self.exe, str(path), agent, url], capture_output=True
        )
        if p.returncode not in (0, 1):
            raise RuntimeError(f"robots_main failed: {p.stderr!r}")
        return p.returncode == 0


def record(build_dir: Path) -> tuple[list, dict, dict]:
    rec_path = build_dir / "recorded.tsv"
    if rec_path.exists():
        rec_path.unlink()
    gtest_json = build_dir / "gtest.json"
    env = dict(os.environ, TRAWL_REC_OUT=str(rec_path))
    run(
        [str(build_dir / "robots_test_recorded"), f"--gtest_output=json:{gtest_json}"],
        env=env,
        stdout=subprocess.DEVNULL,
    )
    g = json.loads(gtest_json.read_text())
    assert g["failures"] == 0 and g["errors"] == 0, g
    gtest_summary = {"tests": g["tests"], "failures": g["failures"]}

    cli = Cli(build_dir)
    cases, aux = [], {"get_path_params_query": [], "maybe_escape_pattern": [],
                      "is_valid_user_agent_to_obey": []}
    seq: dict[str, int] = {}
    replayed = 0
    for line in rec_path.read_text().splitlines():
        kind, test, expect, a, b, c, result = line.split("\t")
        a, b, c, result = unhex(a), unhex(b), unhex(c), unhex(result)
        if kind == "allowed":
            allowed = result == b"1"
            expect_i = int(expect)
            # gtest passed, so a wrapped call's answer is what the test expects.
            assert expect_i in (0, 1), f"call outside EXPECT_*: {test}"
            assert allowed == bool(expect_i)
            assert cli.allowed(a, b, c) == allowed, (test, a, b, c)
            replayed += 1
            n = seq[test] = seq.get(test, 0) + 1
            case = {"name": f"{test}#{n}", "test": test}
            case.update(body_fields(a))
            case["agent"] = b.decode("utf-8")
            case["url"] = c.decode("utf-8")
            case["allowed"] = allowed
            case["test_expectation"] = "EXPECT_TRUE" if expect_i else "EXPECT_FALSE"
            cases.append(case)
        elif kind == "path":
            aux["get_path_params_query"].append(
                {"url": a.decode("utf-8"), "path": result.decode("utf-8")})
        elif kind == "escape":
            aux["maybe_escape_pattern"].append(
                {"pattern": a.decode("utf-8"), "escaped": result.decode("utf-8")})
        elif kind == "valid_ua":
            aux["is_valid_user_agent_to_obey"].append(
                {"agent": a.decode("utf-8"), "valid": result == b"1"})
        else:
            raise ValueError(kind)
    return cases, aux, {"gtest": gtest_summary, "replayed_through_robots_main": replayed}


def answer_extra(build_dir: Path, in_path: str, out_path: str) -> None:
    """[{"robots_b64", "agent", "url"}] -> same list with "allowed"."""
    cli = Cli(build_dir)
    items = json.loads(Path(in_path).read_text())
    for it in items:
        it["allowed"] = cli.allowed(
            base64.b64decode(it["robots_b64"]),
            it["agent"].encode("utf-8"),
            it["url"].encode("utf-8"),
        )
    Path(out_path).write_text(json.dumps(items))


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--git-dir", default=DEFAULT_GIT_DIR)
    ap.add_argument("--rev", default="HEAD")
    ap.add_argument("--build-dir", default=DEFAULT_BUILD_DIR)
    ap.add_argument("--extra", nargs=2, metavar=("IN_JSON", "OUT_JSON"),
                    help="answer extra cases with the built robots_main, then exit")
    args = ap.parse_args()
    build_dir = Path(args.build_dir)

    if args.extra:
        answer_extra(build_dir, *args.extra)
        return

    info = build(args.git_dir, args.rev, build_dir)
    cases, aux, checks = record(build_dir)
    out = {
        "meta": {
            "source": "https://github.com/google/robotstxt",
            "commit": info["commit"],
            "commit_date": info["commit_date"],
            "how_recorded": (
                "Built the upstream C++ library (robots.cc) here with "
                f"{info['compiler']}, abseil {info['abseil']} and googletest "
                f"{info['googletest']} (Debian packages). Ran the upstream "
                "robots_test.cc, instrumented by gen_google.py to log every "
                "IsUserAgentAllowed(robotstxt, useragent, url) call with the "
                "library's answer and the EXPECT_TRUE/EXPECT_FALSE wrapping it; "
                "all gtest tests passed (the unmodified robots_test.cc passes too). Each case was then replayed through "
                "the unmodified upstream robots_main CLI, which gave the same "
                "answer."
            ),
            "semantics": (
                "allowed = RobotsMatcher().OneAgentAllowedByRobots(robots, agent, url)"
            ),
            "generator": "tests/data/robots/gen_google.py",
            "checks": checks,
            "count": len(cases),
        },
        "cases": cases,
        "aux": aux,
    }
    (HERE / "google_cases.json").write_text(
        json.dumps(out, indent=1, ensure_ascii=False) + "\n"
    )
    print(f"wrote {len(cases)} cases", file=sys.stderr)


if __name__ == "__main__":
    main()
