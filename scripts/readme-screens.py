#!/usr/bin/env python3
"""Puts the captures in assets/ into the README's screen blocks: each block is the fenced
block after a line linking `assets/NAME.txt`, so the README shows the tested screens."""
import pathlib, re, sys

root = pathlib.Path(__file__).resolve().parent.parent
readme = root / "README.md"
text = readme.read_text()
out, pos = [], 0
# A paragraph naming a capture, then (after anything but a fence) the fenced block it shows.
for m in re.finditer(r"\[`assets/([\w-]+)\.txt`\][^\n]*\n(?:(?!```)[^\n]*\n)*?```\n(.*?)```\n", text, re.S):
    name, block = m.group(1), m.group(2)
    capture = (root / "assets" / f"{name}.txt").read_text()
    start = m.start(2)
    out.append(text[pos:start])
    out.append(capture if capture.endswith("\n") else capture + "\n")
    pos = m.end(2)
out.append(text[pos:])
new = "".join(out)
if new != text:
    readme.write_text(new)
    print("README screens updated")
