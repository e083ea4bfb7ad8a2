#!/usr/bin/env python3
"""What README.md and docs/*.md name exists: links point at files of the
repository (and at headings that exist), paths in code spans are files or
folders of the source tree (or, under build/, of the build), `memtrace
COMMAND --option` names a command and an option its --help lists, `meson
test ... NAME` and `--suite NAME` name tests and suites of the build, and C
names with a module's prefix (mt_..., vw_...) occur in the sources.

Usage: test-doc-references.py BUILDDIR (MEMTRACE and MT_SOURCE_ROOT in the
environment). TAP output: one case per document.
"""

import glob
import json
import os
import re
import subprocess
import sys

root = os.environ["MT_SOURCE_ROOT"]
memtrace = os.environ["MEMTRACE"]
builddir = sys.argv[1]
TOP = ("common", "format", "synth", "recorder", "replay", "analyze", "interop", "predict",
       "viewer", "cli", "tests", "bench", "samples", "tools", "docs", "completions", ".ci")
PREFIXES = r"(?:mt|vw|rp|io|an|fmt|rec|cli|syn|cm|pr|MT|VW|IO|RP)_"
PLACEHOLDER = re.compile(r"[A-Z]{2,}")  # NAME, VIEW, MODULE, ...


def help_options(*args):
    proc = subprocess.run([memtrace, *args, "--help"], capture_output=True, text=True)
    found = set()
    for line in proc.stdout.splitlines():
        m = re.match(r"^ {1,6}(-[A-Za-z-][^ ].*?)(?: {2,}|$)", line)
        if m:
            found |= set(re.findall(r"(?<![\w-])--?[A-Za-z][\w-]*", m.group(1)))
    return proc.returncode, proc.stdout + proc.stderr, found


with open(os.path.join(builddir, "meson-info", "intro-tests.json"), encoding="utf-8") as f:
    meson_tests = json.load(f)
test_names = {t["name"] for t in meson_tests}
suite_names = {s.split(":")[-1] for t in meson_tests for s in t["suite"]}

rc, top_help, _ = help_options()
commands = re.findall(r"(?m)^  ([a-z]+)  ", top_help.split("Commands:", 1)[1].split("\n\n")[0])
helps = {c: help_options(c) for c in commands}
options = {c: h[2] for c, h in helps.items()}
# a command this build lacks (record without CUPTI) says so instead of its
# help: its options and build outputs cannot be checked here
unbuilt = {c for c, h in helps.items() if h[0] != 0 and "not built" in h[1]}


def slug(heading):
    s = re.sub(r"[^\w\- ]", "", heading.strip().lower())
    return s.replace(" ", "-")


def anchors(path):
    with open(path, encoding="utf-8") as f:
        return {slug(h) for h in re.findall(r"(?m)^#+ (.*)$", f.read())}


sources = ""
for ext in ("c", "h", "cpp", "def", "build", "py", "sh"):
    for f in glob.glob(os.path.join(root, "**", "*." + ext), recursive=True):
        if not os.path.relpath(f, root).startswith("build"):
            with open(f, encoding="utf-8", errors="replace") as fh:
                sources += fh.read()


def problems_of(doc):
    here = os.path.dirname(doc)
    with open(doc, encoding="utf-8") as f:
        text = f.read()
    bad = []
    for target in re.findall(r"\]\(([^)\s]+)\)", text):
        if re.match(r"[a-z]+:", target):
            continue
        path, _, anchor = target.partition("#")
        full = os.path.normpath(os.path.join(here, path)) if path else doc
        if not os.path.exists(full):
            bad.append(f"link {target}: no such file")
        elif os.path.relpath(full, root).startswith(".."):
            bad.append(f"link {target}: outside the repository")
        elif anchor and full.endswith(".md") and anchor not in anchors(full):
            bad.append(f"link {target}: no such heading")
    code = re.findall(r"`([^`\n]+)`", text) + re.findall(r"(?ms)^```\w*\n(.*?)^```", text)
    for span in code:
        for token in re.findall(r"[\w.+*/-]+", span):
            token = token.rstrip(".,")
            first = token.split("/")[0]
            if "/" in token and (first in TOP or first == "build"):
                where = os.path.join(builddir, token[len("build/"):]) if first == "build" \
                    else os.path.join(root, token)
                # a placeholder (replay/policies/NAME.c) stands for any name
                if first == "build" and "record" in unbuilt and "recorder" in token:
                    continue
                if not os.path.exists(where) and not glob.glob(
                        PLACEHOLDER.sub("*", glob.escape(where).replace("[*]", "*"))):
                    bad.append(f"path {token}: not found")
        for m in re.finditer(r"\bmemtrace (\w+)((?: +[^ |;&#`]+)*)", span):
            cmd, rest = m.group(1), m.group(2)
            if cmd not in commands:
                if cmd in ("COMMAND", "CMD") or cmd.startswith("-"):
                    continue
                if re.match(r"^[a-z]+$", cmd) and cmd not in ("is", "and", "the", "a"):
                    bad.append(f"memtrace {cmd}: no such command")
                continue
            if cmd in unbuilt:
                continue
            for opt in re.findall(r"(?<![\w-])(--?[A-Za-z][\w-]*)", rest):
                if opt in ("--", "--help", "-h") or opt in options[cmd] or \
                        PLACEHOLDER.fullmatch(opt.lstrip("-")):
                    continue
                bad.append(f"memtrace {cmd} {opt}: not an option of its --help")
        for m in re.finditer(r"\bmeson test((?: +[^ |;&#`\n]+)*)", span):
            words = m.group(1).split()
            while words:
                w = words.pop(0)
                if w in ("-C", "--setup", "--no-suite", "--suite"):
                    arg = words.pop(0) if words else ""
                    if w in ("--suite", "--no-suite") and arg not in suite_names:
                        bad.append(f"meson test {w} {arg}: no such suite")
                elif not w.startswith("-") and not any(
                        re.fullmatch(PLACEHOLDER.sub(r"\\S+", re.escape(w)), t)
                        for t in test_names):
                    bad.append(f"meson test {w}: no such test")
        for name in re.findall(r"\b" + PREFIXES + r"\w+", span):
            prefix, rest = name.split("_", 1)
            pattern = r"\b" + prefix + "_" + PLACEHOLDER.sub(r"\\w+", re.escape(rest)) + r"\b"
            if not re.search(pattern, sources):
                bad.append(f"{name}: not in the sources")
    return sorted(set(bad))


docs = [os.path.join(root, "README.md")] + sorted(glob.glob(os.path.join(root, "docs", "*.md")))
failed = 0
for k, doc in enumerate(docs, 1):
    bad = problems_of(doc)
    print(f"{'not ok' if bad else 'ok'} {k} - {os.path.relpath(doc, root)} names what exists")
    for b in bad:
        print(f"#   {b}")
    failed += bool(bad)
print(f"1..{len(docs)}")
sys.exit(1 if failed else 0)
