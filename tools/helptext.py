"""Reads memtrace's --help texts into a structure that help-to-man and
help-to-completion turn into man pages and shell completions.

The --help texts printed by the built binary are the single source: the
commands come from `memtrace --help`, each command's synopsis, options,
option values and lists from `memtrace COMMAND --help`. A command whose
--help exits non-zero (not built in this configuration) is left out.

What is recognised in a help text, paragraph by paragraph (paragraphs are
separated by blank lines):
  - the usage: the paragraph starting with "Usage:" (any case);
  - a heading: a line of its own ending with ':' ("Options:", "policies:");
  - options: lines indented by 1-6 spaces starting with '-' and a letter,
    "  -o, --output FILE   description", the description going on in more
    deeply indented lines;
  - a list: "  name   description" lines, as under "Commands:" or
    "policies:" (a list whose heading names an option, policies for
    --policy, gives that option's values);
  - bullets ("  - text") and prose; anything else is kept as it is.
"""

import re
import subprocess

OPTION_RE = re.compile(r"^( {1,6})(-[A-Za-z-].*?)(?: {2,}(\S.*))?$")
LIST_RE = re.compile(r"^( {1,6})([A-Za-z][\w.-]*)(?: {2,}(\S.*))$")
HEADING_RE = re.compile(r"^([A-Za-z][\w /-]*):$")
BULLET_RE = re.compile(r"^( {0,6})(-) (\S.*)$")


def run_help(memtrace, *args):
    """Returns (exit status, stdout) of `memtrace ARGS --help`."""
    proc = subprocess.run([memtrace, *args, "--help"], stdout=subprocess.PIPE,
                          stderr=subprocess.DEVNULL, text=True, check=False)
    return proc.returncode, proc.stdout


def indent_of(line):
    return len(line) - len(line.lstrip(" "))


class Option:
    """One entry of an options block: its names (-o, --output), the
    argument each takes (None for a flag) and its description lines."""

    def __init__(self, spec, indent):
        self.spec = spec
        self.indent = indent
        self.lines = []
        self.names = []
        self.argument = {}
        for part in spec.split(", "):
            words = part.split(None, 1)
            if words and words[0].startswith("-"):
                self.names.append(words[0])
                self.argument[words[0]] = words[1] if len(words) > 1 else None
        # "-o, --output FILE": names for one option, the short form taking
        # the long form's argument; "--from TIME, --to TIME": two options
        self.aliases = sum(1 for a in self.argument.values() if a) <= 1
        last = self.argument[self.names[-1]] if self.names else None
        for name in self.names:
            if self.argument[name] is None:
                self.argument[name] = last

    def takes_argument(self, name):
        return self.argument.get(name) is not None

    def takes_file(self, name):
        """Whether the argument names a file (FILE, TRACE, OUT, DIR...)."""
        arg = self.argument.get(name) or ""
        return bool(re.match(r"^(FILE|TRACE|OUT|PATH|DIR)\b", arg))


class Block:
    """A paragraph of a help text: kind is usage, heading, options, list,
    bullets, prose or verbatim."""

    def __init__(self, kind, lines):
        self.kind = kind
        self.lines = lines
        self.options = []   # kind options
        self.items = []     # kind list, bullets: (name, [description lines])
        self.heading = None  # kind list: what it lists ("policies")


def paragraphs(text):
    block = []
    for line in text.rstrip("\n").split("\n"):
        if line.strip():
            block.append(line.rstrip())
        elif block:
            yield block
            block = []
    if block:
        yield block


def parse_options(lines):
    options = []
    for line in lines:
        m = OPTION_RE.match(line)
        if m:  # a new option ("      --kernels" lines up with long names)
            opt = Option(m.group(2).strip(), len(m.group(1)))
            if m.group(3):  # kept at its column, as the lines under it
                opt.lines.append(" " * m.start(3) + m.group(3))
            options.append(opt)
        elif options and indent_of(line) > options[-1].indent:
            options[-1].lines.append(line)
        else:
            return None
    return options


def parse_items(lines, pattern):
    items = []
    base = indent_of(lines[0])
    for line in lines:
        m = pattern.match(line)
        if m and indent_of(line) == base:
            items.append((m.group(2), [" " * m.start(3) + m.group(3)]
                          if m.group(3) else []))
        elif items and indent_of(line) > base:
            items[-1][1].append(line)
        else:
            return None
    return items


def classify(lines):
    first = lines[0]
    if re.match(r"(?i)usage:", first):
        return Block("usage", lines)
    if HEADING_RE.match(first):
        head = Block("heading", [first])
        rest = lines[1:]
        return [head] + ([classify(rest)] if rest else [])
    if OPTION_RE.match(first):
        options = parse_options(lines)
        if options:
            b = Block("options", lines)
            b.options = options
            return b
    bullet = next((k for k, line in enumerate(lines) if BULLET_RE.match(line)), None)
    if bullet is not None:
        items = parse_items(lines[bullet:], BULLET_RE)
        if items:
            b = Block("bullets", lines[bullet:])
            b.items = [(None, d) for _, d in items]
            return ([classify(lines[:bullet])] if bullet else []) + [b]
    if LIST_RE.match(first):
        items = parse_items(lines, LIST_RE)
        if items:
            b = Block("list", lines)
            b.items = items
            return b
    # prose ending "... Formats:" with the list under it
    for k in range(1, len(lines)):
        said = re.search(r"\b(\w+):$", lines[k - 1])
        if said and LIST_RE.match(lines[k]) and indent_of(lines[k]) > indent_of(first):
            items = parse_items(lines[k:], LIST_RE)
            if items:
                b = Block("list", lines[k:])
                b.items = items
                b.heading = said.group(1).lower()
                return [classify(lines[:k]), b]
    if all(indent_of(line) == indent_of(first) for line in lines[1:]) or \
            all(indent_of(line) > indent_of(first) for line in lines[1:]):
        return Block("prose", lines)
    return Block("verbatim", lines)


def parse(text):
    """The blocks of a help text, in order; a heading and the block it
    heads are two blocks."""
    blocks = []
    for para in paragraphs(text):
        flatten(classify(para), blocks)
    return blocks


def flatten(b, out):
    if isinstance(b, list):
        for x in b:
            flatten(x, out)
    else:
        out.append(b)


class Command:
    """One command's help: name (None for memtrace itself), summary (from
    memtrace --help) and the blocks of its help text."""

    def __init__(self, name, summary, text):
        self.name = name
        self.summary = summary
        self.blocks = parse(text)
        self.shared_lists = {}  # the lists of every command (commands())

    @property
    def usage(self):
        for b in self.blocks:
            if b.kind == "usage":
                return b.lines
        return []

    @property
    def options(self):
        return [o for b in self.blocks if b.kind == "options" for o in b.options]

    def lists(self):
        """{heading (lower case, without ':'): [(name, description lines)]}
        for each list under a heading or a sentence ending 'Formats:'."""
        out = {}
        heading = None
        for b in self.blocks:
            if b.kind == "list" and (b.heading or heading):
                out[b.heading or heading] = b.items
            heading = b.lines[0][:-1].strip().lower() if b.kind == "heading" else None
        return out

    def values(self, name):
        """The values option NAME offers: the alternatives written as
        --opt a|b|c in the usage or the options, plus the items of a list
        headed by the option's name in the plural (--policy: 'policies:').
        Placeholders (TIME, NAME, WxH: anything with a capital) are not
        values. The lists of every command count (render --policy offers
        the policies replay --help lists)."""
        found = []
        for line in self.usage + [o.spec for o in self.options]:
            for m in re.finditer(re.escape(name) + r"[ =](\S+)", line):
                for alt in m.group(1).split("|"):
                    alt = re.sub(r"\[.*", "", alt).strip("[],.")
                    if re.match(r"^[a-z0-9][a-z0-9_.-]*$", alt) and \
                            alt not in found:
                        found.append(alt)
        word = name.lstrip("-")
        lists = dict(self.shared_lists)
        lists.update(self.lists())
        for heading in (word + "s", word + "es", word[:-1] + "ies", word):
            for item, _ in lists.get(heading, []):
                if item not in found:
                    found.append(item)
        return found

    def list_valued(self, name):
        """Whether NAME takes a comma-separated list (NAME[,NAME...])."""
        for line in self.usage + [o.spec for o in self.options]:
            m = re.search(re.escape(name) + r"[ =](\S+)", line)
            if m and re.search(r",.*\.\.\.", m.group(1)):
                return True
        return False

    def option_values(self, opt):
        """The values an option offers under any of its names."""
        found = []
        for name in opt.names:
            found += [v for v in self.values(name) if v not in found]
        return found

    def option_list_valued(self, opt):
        return any(self.list_valued(name) for name in opt.names)

    def runs_program(self):
        """Whether the command's arguments end with a program to run."""
        return any(re.search(r"\bPROG\b", line) for line in self.usage)


def commands(memtrace):
    """memtrace itself (name None) and every command built into it."""
    rc, text = run_help(memtrace)
    if rc != 0:
        raise RuntimeError(f"{memtrace} --help exited with {rc}")
    top = Command(None, None, text)
    out = [top]
    for name, summary in top.lists().get("commands", []):
        rc, sub = run_help(memtrace, name)
        if rc == 0:
            out.append(Command(name, " ".join(line.strip() for line in summary), sub))
    shared = {}
    for c in out:
        for heading, items in c.lists().items():
            shared.setdefault(heading, items)
    for c in out:
        c.shared_lists = shared
    return out
