"""Runs the shipped notebooks (notebooks/*.ipynb) on the Tape kernel with
nbclient and compares every cell's outputs with the ones saved in the file:
text exactly, SVG and HTML by their structure (the same elements, as many of
each), since a chart's coordinates may move in the last digit and the walk
page carries its data in one long attribute.

    python check_notebooks.py            compare (what tests/jupyter.rs runs)
    python check_notebooks.py --write    run them and save the new outputs

Needs the kernel installed where JUPYTER_PATH points (tests/jupyter.rs
installs it with `tapec jupyter install --prefix`).
"""

import collections
import html
import html.parser
import pathlib
import sys

import nbformat
from nbclient import NotebookClient

NOTEBOOKS = pathlib.Path(__file__).resolve().parents[2] / "notebooks"


class Tags(html.parser.HTMLParser):
    """How many of each element a document holds (SVG or HTML)."""

    def __init__(self):
        super().__init__(convert_charrefs=True)
        self.count = collections.Counter()
        self.frames = []

    def handle_starttag(self, tag, attrs):
        self.count[tag] += 1
        for name, value in attrs:
            if tag == "iframe" and name == "srcdoc":
                self.frames.append(value)


def structure(text):
    """The elements of a document, and those of every page framed in it."""
    tags = Tags()
    tags.feed(text)
    shape = dict(tags.count)
    for frame in tags.frames:
        shape["(framed)"] = structure(frame)
    return shape


def run(path):
    notebook = nbformat.read(path, as_version=4)
    NotebookClient(
        notebook,
        timeout=600,
        kernel_name="tape",
        resources={"metadata": {"path": str(path.parent)}},
    ).execute()
    return notebook


def comparable(output):
    """An output as it must match: text whole, pictures by structure."""
    kind = output["output_type"]
    if kind == "stream":
        return (kind, output["name"], output["text"])
    if kind == "error":
        return (kind, output["ename"], output["evalue"], tuple(output["traceback"]))
    data = {}
    for mime, value in output["data"].items():
        if isinstance(value, list):
            value = "".join(value)
        if mime in ("image/svg+xml", "text/html"):
            data[mime] = structure(value)
        else:
            data[mime] = value
    return (kind, data)


def merged(outputs):
    """Streams as a notebook shows them: one block per run of one stream."""
    out = []
    for output in outputs:
        if (
            out
            and output["output_type"] == "stream"
            and out[-1]["output_type"] == "stream"
            and out[-1]["name"] == output["name"]
        ):
            out[-1] = dict(out[-1], text=out[-1]["text"] + output["text"])
        else:
            out.append(output)
    return out


def main():
    write = "--write" in sys.argv[1:]
    paths = sorted(NOTEBOOKS.glob("*.ipynb"))
    if not paths:
        sys.exit(f"no notebooks in {NOTEBOOKS}")
    failures = []
    cells = 0
    for path in paths:
        saved = nbformat.read(path, as_version=4)
        fresh = run(path)
        if write:
            nbformat.write(fresh, path)
            print(f"wrote {path.name}")
            continue
        for k, (old, new) in enumerate(zip(saved.cells, fresh.cells)):
            if old.cell_type != "code":
                continue
            cells += 1
            want = [comparable(o) for o in merged(old.outputs)]
            got = [comparable(o) for o in merged(new.outputs)]
            if want != got:
                failures.append(f"{path.name}, cell {k + 1}:\n  saved {want}\n  now   {got}")
        if len(saved.cells) != len(fresh.cells):
            failures.append(f"{path.name}: the cell count changed")
    if failures:
        sys.exit("\n".join(failures))
    if not write:
        print(f"{len(paths)} notebooks, {cells} code cells: every output as saved")


if __name__ == "__main__":
    main()
