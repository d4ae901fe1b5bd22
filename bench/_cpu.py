"""Shared by the bench scripts' reports: the CPU's model name, and one section of RESULTS.md
replaced with the rest kept."""

import platform


def cpu_model() -> str:
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                if line.startswith("model name"):
                    return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or "unknown CPU"


def replace_section(path: str, title: str, body: str) -> None:
    """Replace (or append) the section headed `title` (a "## " line) of the Markdown file at `path`
    with `body`; the other sections stay as they are."""
    try:
        with open(path, encoding="utf-8") as f:
            text = f.read()
    except FileNotFoundError:
        text = "# Benchmark results\n"
    head, found, tail = text.partition(title + "\n")
    rest = tail[tail.find("\n## "):] if found and "\n## " in tail else ""
    with open(path, "w", encoding="utf-8") as f:
        f.write(head.rstrip("\n") + "\n\n" + title + "\n\n" + body.strip("\n") + "\n" + rest)
