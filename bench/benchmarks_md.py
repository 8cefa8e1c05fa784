"""Shared by the bench/ scripts: replace one section of BENCHMARKS.md, leave the others alone."""
import os


def write_section(repo, title, section):
    """Puts `section` (which starts with the `title` line) in place of the old one, or appends it."""
    path = os.path.join(repo, "BENCHMARKS.md")
    text = open(path).read() if os.path.exists(path) else "# recd benchmarks\n"
    if title in text:
        head, rest = text.split(title, 1)
        nxt = rest.find("\n## ")
        text = head + section + (rest[nxt:] if nxt >= 0 else "")
    else:
        text = text.rstrip("\n") + "\n\n" + section
    open(path, "w").write(text)
    return path
