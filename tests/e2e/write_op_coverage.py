"""Regenerates the measured sections of docs/op-coverage.md and docs/model-zoo.md from the reports
the tests write into the build directory.

    write_op_coverage.py --build BUILD_DIR --docs DOCS_DIR

Reads BUILD_DIR/node-conformance.md (ctest node_conformance), BUILD_DIR/model-zoo.md and
BUILD_DIR/model-zoo-ops.md (ctest model_zoo), and replaces, in each document, the text between
`<!-- begin generated: NAME -->` and `<!-- end generated: NAME -->` with the matching part of
the reports. Exits 1, naming the file, when a report or a marker is missing.
"""

import argparse
import os
import re
import sys


def read(path):
    try:
        with open(path) as f:
            return f.read()
    except OSError as e:
        sys.exit(f"write_op_coverage: {path}: {e.strerror}")


def section(report, title, path):
    """The body of `## title` in a markdown report (up to the next `## `)."""
    match = re.search(rf"^## {re.escape(title)}\n(.*?)(?=^## |\Z)", report, re.M | re.S)
    if not match:
        sys.exit(f"write_op_coverage: {path}: no '## {title}' section")
    return match.group(1).strip() + "\n"


def conformance_summary(report, path):
    """The counts of the node-test run (the bullet list before its first section, less the
    timing line)."""
    head = report.split("\n## ", 1)[0]
    lines = [line for line in head.splitlines()
             if line.startswith("- ") and not line.startswith("- time:")]
    if not lines:
        sys.exit(f"write_op_coverage: {path}: no summary")
    return "\n".join(lines) + "\n"


def replace(doc, name, body, path):
    begin, end = f"<!-- begin generated: {name} -->", f"<!-- end generated: {name} -->"
    if begin not in doc or end not in doc:
        sys.exit(f"write_op_coverage: {path}: no '{begin}' ... '{end}' markers")
    head, rest = doc.split(begin, 1)
    _, tail = rest.split(end, 1)
    return f"{head}{begin}\n{body}{end}{tail}"


def main():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--build", required=True)
    p.add_argument("--docs", required=True)
    args = p.parse_args()
    nodes_path = os.path.join(args.build, "node-conformance.md")
    zoo_path = os.path.join(args.build, "model-zoo.md")
    ops_path = os.path.join(args.build, "model-zoo-ops.md")
    nodes, zoo, ops = read(nodes_path), read(zoo_path), read(ops_path)

    coverage_path = os.path.join(args.docs, "op-coverage.md")
    doc = read(coverage_path)
    doc = replace(doc, "zoo ops", ops, coverage_path)
    doc = replace(doc, "conformance summary", conformance_summary(nodes, nodes_path),
                  coverage_path)
    doc = replace(doc, "conformance per op", section(nodes, "Per supported op", nodes_path),
                  coverage_path)
    with open(coverage_path, "w") as f:
        f.write(doc)

    zoo_doc_path = os.path.join(args.docs, "model-zoo.md")
    doc = read(zoo_doc_path)
    doc = replace(doc, "zoo results", zoo, zoo_doc_path)
    with open(zoo_doc_path, "w") as f:
        f.write(doc)
    print(f"write_op_coverage: updated {coverage_path} and {zoo_doc_path}")


if __name__ == "__main__":
    main()
