#!/usr/bin/env python3
"""Puts the captures in assets/ into the screen blocks of the README and of docs/: each block
is the fenced block after a line linking `assets/NAME.txt`, so the pages show the tested
screens."""
import pathlib, re

root = pathlib.Path(__file__).resolve().parent.parent
# A paragraph naming a capture, then (after anything but a fence) the fenced block it shows.
BLOCK = re.compile(r"\[`assets/([\w-]+)\.txt`\][^\n]*\n(?:(?!```)[^\n]*\n)*?```\n(.*?)```\n", re.S)

for page in [root / "README.md", *sorted((root / "docs").rglob("*.md"))]:
    text = page.read_text()
    out, pos = [], 0
    for m in BLOCK.finditer(text):
        name = m.group(1)
        capture = (root / "assets" / f"{name}.txt").read_text()
        out.append(text[pos : m.start(2)])
        out.append(capture if capture.endswith("\n") else capture + "\n")
        pos = m.end(2)
    out.append(text[pos:])
    new = "".join(out)
    if new != text:
        page.write_text(new)
        print(f"{page.relative_to(root)}: screens updated")
