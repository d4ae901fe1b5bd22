"""Shared by the bench scripts' reports: the CPU's model name, and one section of RESULTS.md
replaced with the rest kept."""

import platform


def cpu_model() -> str:
    """The model name, with the x86 family and model and the vector extensions that pick our ISA
    paths: a virtual machine may name only "AMD EPYC", for Zen 3 (AVX2) and Zen 5 (AVX-512) alike."""
    fields = {}
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                if not line.strip():
                    break  # the first processor's block
                key, _, value = line.partition(":")
                fields[key.strip()] = value.strip()
    except OSError:
        pass
    name = fields.get("model name") or platform.processor() or "unknown CPU"
    if "cpu family" not in fields:
        return name
    flags = set(fields.get("flags", "").split())
    isa = " ".join(f.upper() for f in ("avx512f", "avx2", "fma", "f16c") if f in flags)
    if "avx512f" not in flags:
        isa += ", no AVX-512"
    return f"{name} (family {fields['cpu family']}, model {fields.get('model', '?')}; {isa})"


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
