#!/usr/bin/env python3
"""The man pages written from --help (tools/help-to-man): one page per
command built, none for a command that is not, and each page lists every
option and carries every word of its command's --help text.

Usage: test-man-pages.py MANDIR (MEMTRACE in the environment: the binary).
TAP output: one case per page.
"""

import os
import re
import shutil
import subprocess
import sys

memtrace = os.environ["MEMTRACE"]
mandir = sys.argv[1]
failures = 0
case = 0


def check(ok, what):
    global failures, case
    case += 1
    print(f"{'ok' if ok else 'not ok'} {case} - {what}")
    if not ok:
        failures += 1


def help_of(*args):
    proc = subprocess.run([memtrace, *args, "--help"], capture_output=True, text=True)
    return proc.returncode, proc.stdout


def page_text(path):
    """The page's words as a reader sees them: roff requests and font
    escapes gone, escaped characters back to themselves."""
    with open(path, encoding="utf-8") as f:
        text = f.read()
    text = re.sub(r"(?m)^\.(TH|SH|TP|PP|IP|nf|fi)\b ?", "", text)
    text = re.sub(r"\\f[BIRP]", "", text)
    text = re.sub(r"\\\[u([0-9A-F]{4})\]", lambda m: chr(int(m.group(1), 16)), text)
    text = re.sub(r"\\\(bu", "", text)
    return text.replace("\\-", "-").replace("\\&", "").replace("\\%", "").replace("\\e", "\\")


def options_of(text):
    """Every option an option line of a help text names: lines indented
    and starting with '-', up to the description."""
    found = set()
    for line in text.splitlines():
        m = re.match(r"^ {1,6}(-[A-Za-z-][^ ].*?)(?: {2,}|$)", line)
        if m:
            found |= set(re.findall(r"(?<![\w-])--?[A-Za-z][\w-]*", m.group(1)))
    return found


rc, top = help_of()
check(rc == 0, "memtrace --help exits 0")
commands = re.findall(r"(?m)^  ([a-z]+)  ", top.split("Commands:", 1)[1].split("\n\n")[0])
check(len(commands) >= 5, f"memtrace --help lists commands ({', '.join(commands)})")

pages = [(None, top)]
for name in commands:
    rc, text = help_of(name)
    path = os.path.join(mandir, f"memtrace-{name}.1")
    if rc != 0:
        check(not os.path.exists(path), f"no page for {name}, which is not built")
        continue
    check(os.path.exists(path), f"memtrace-{name}.1 is built")
    pages.append((name, text))

groff = shutil.which("groff")
for name, text in pages:
    page = "memtrace" + (f"-{name}" if name else "") + ".1"
    path = os.path.join(mandir, page)
    if not os.path.exists(path):
        continue
    shown = page_text(path)
    missing = sorted(o for o in options_of(text) if not re.search(
        r"(?<![\w-])" + re.escape(o) + r"(?![\w-])", shown))
    check(not missing and (name is None or options_of(text)),
          f"{page} lists every option of --help" + (f" (missing {missing})" if missing else ""))
    def words(t):  # headings are in capitals in a page
        return set(re.findall(r"\w[\w'.%/-]*\w|\w", t.lower()))
    lost = sorted(words(text) - words(shown) - {"usage"})
    check(not lost, f"{page} carries every word of --help" + (f" (lost {lost[:8]})" if lost else ""))
    check(re.search(r"(?m)^\.TH MEMTRACE", open(path, encoding="utf-8").read()) is not None,
          f"{page} has a title line")
    if groff:
        proc = subprocess.run([groff, "-ww", "-z", "-man", "-Tutf8", path],
                              capture_output=True, text=True)
        check(proc.returncode == 0 and not proc.stderr.strip(),
              f"groff reads {page} without warnings {proc.stderr.strip()[:200]}")

print(f"1..{case}")
sys.exit(1 if failures else 0)
