#!/usr/bin/env python3
"""Checks every project include against the layers of docs/architecture.md.

The section "Layers" of docs/architecture.md holds, in its first fenced block, one line per
layer:

    runtime/executor -> runtime/loader runtime/kernels runtime/device ...
    runtime/support ->
    tools -> *

A layer is a folder: runtime/<name> for the runtime's folders, compiler/<Component> for the
compiler's components (compiler/include/shardc/<Component> and compiler/lib/<Component>
together), else the top-level folder (passes, frontends, tools, tests). Besides project layers, two external ones can be
named: mlir (headers under mlir/ and llvm/) and onnx (headers under onnx/). A layer may include
its own headers and those of the layers after its arrow ("*": any); every other project
include, and an include of mlir or onnx not listed, is an error. The following fenced block,
if the section has a second one, lists tolerated includes as `FILE -> INCLUDED` pairs (each
with its reason in the text around it): an entry that no longer occurs is an error too, so the
list only shrinks.

Every `#include "..."` (and `#include <mlir/...>`, `<llvm/...>`, `<onnx/...>`; TableGen's
`include "..."` in .td files) of the tree's .cpp/.h/.cu/.cuh/.inc/.td files is resolved the way the build resolves it: "runtime/x/..." is
runtime/x, "shardc/X/..." is compiler/X, "passes/...", "frontends/...", "tools/...",
"tests/...", "compiler/..." are those folders, a path next to the including file is its own
folder's, and inside runtime/ a path relative to runtime/ ("comm/x.h") is that folder's.
Includes that resolve to none of these (generated files, system headers) are not checked.

Usage: check_layering.py [--root DIR] [--graph]
  --graph  prints the layer-to-layer includes found (with counts) instead of checking.
Exit status: 0 when every include keeps the layers, 1 otherwise (each error names file:line,
the include and the rule), 2 when the layer list cannot be read.
"""

import argparse
import collections
import os
import re
import sys

SOURCE_SUFFIXES = ('.cpp', '.h', '.cu', '.cuh', '.inc', '.td')
SKIPPED_DIRS = {'.git', 'build', 'third_party', '.venv', 'node_modules'}
TOP_LEVEL_LAYERS = ('compiler', 'passes', 'frontends', 'tools', 'tests')
EXTERNAL_PREFIXES = {'mlir/': 'mlir', 'llvm/': 'mlir', 'onnx/': 'onnx'}
RULE = re.compile(r'^\s*([\w./-]+)\s*->\s*(.*?)\s*$')
INCLUDE = re.compile(r'^\s*#\s*include\s*("([^"]+)"|<([^>]+)>)')
# TableGen's form: include "mlir/IR/OpBase.td".
TD_INCLUDE = re.compile(r'^\s*include\s*("([^"]+)")()')


class LayerError(Exception):
    pass


def read_layers(doc_path):
    """The allowed dependencies {layer: set of layers or {'*'}} and the tolerated includes
    {(file, included path)}, from the "Layers" section of `doc_path`."""
    try:
        with open(doc_path, encoding='utf-8') as f:
            lines = f.read().splitlines()
    except OSError as e:
        raise LayerError(f'{doc_path}: {e.strerror}')
    start = next((i for i, l in enumerate(lines) if re.match(r'^#+\s+Layers\s*$', l)), None)
    if start is None:
        raise LayerError(f'{doc_path}: no section "Layers"')
    level = len(lines[start]) - len(lines[start].lstrip('#'))
    blocks, current = [], None
    for line in lines[start + 1:]:
        heading = re.match(r'^(#+)\s', line)
        if current is None and heading and len(heading.group(1)) <= level:
            break
        if line.strip().startswith('```'):
            if current is None:
                current = []
            else:
                blocks.append(current)
                current = None
            continue
        if current is not None:
            current.append(line)
    if not blocks:
        raise LayerError(f'{doc_path}: the section "Layers" has no fenced block of layers')
    rules = {}
    for line in blocks[0]:
        if not line.strip():
            continue
        m = RULE.match(line)
        if not m:
            raise LayerError(f'{doc_path}: not a layer rule: {line.strip()!r}')
        layer, deps = m.group(1), set(m.group(2).split())
        if layer in rules:
            raise LayerError(f'{doc_path}: layer {layer} is listed twice')
        rules[layer] = deps
    for layer, deps in rules.items():
        for dep in deps - {'*', 'mlir', 'onnx'}:
            if dep not in rules:
                raise LayerError(f'{doc_path}: {layer} -> {dep}: {dep} is not a layer')
    tolerated = set()
    for line in (blocks[1] if len(blocks) > 1 else []):
        if not line.strip():
            continue
        m = RULE.match(line)
        if not m or len(m.group(2).split()) != 1:
            raise LayerError(f'{doc_path}: not a tolerated include: {line.strip()!r}')
        tolerated.add((m.group(1), m.group(2)))
    return rules, tolerated


def layer_of(rel_path):
    """The layer of a repository-relative path, or None outside every layer."""
    parts = rel_path.split('/')
    if parts[0] == 'runtime':
        return 'runtime/' + parts[1] if len(parts) > 2 else None
    if parts[0] == 'compiler':
        return compiler_layer(parts[1:])
    return parts[0] if parts[0] in TOP_LEVEL_LAYERS and len(parts) > 1 else None


def compiler_layer(parts):
    """compiler/<Component>: a component's headers (compiler/include/shardc/<Component>/) and
    sources (compiler/lib/<Component>/) are one layer; anything else under compiler/ is the
    layer compiler."""
    if parts[:2] == ['include', 'shardc'] and len(parts) > 3:
        return 'compiler/' + parts[2]
    if parts[:1] == ['lib'] and len(parts) > 2:
        return 'compiler/' + parts[1]
    return 'compiler'


def resolve(root, including, target, quoted):
    """The layer `target`, included from the repository-relative file `including`, belongs to
    (an external layer's name for mlir/llvm/onnx headers); None when it is not checked."""
    for prefix, layer in EXTERNAL_PREFIXES.items():
        if target.startswith(prefix):
            return layer
    if not quoted:
        return None
    first = target.split('/')[0]
    if first == 'shardc':
        return compiler_layer(['include'] + target.split('/'))
    if first == 'runtime' or first in TOP_LEVEL_LAYERS:
        return layer_of(target)
    beside = os.path.normpath(os.path.join(os.path.dirname(including), target))
    if os.path.exists(os.path.join(root, beside)):
        return layer_of(beside)
    if including.startswith('runtime/') and os.path.exists(os.path.join(root, 'runtime', target)):
        return layer_of('runtime/' + target)
    return None


def source_files(root):
    for dirpath, dirnames, filenames in os.walk(root):
        dirnames[:] = sorted(d for d in dirnames
                             if d not in SKIPPED_DIRS and not d.startswith('build'))
        for name in sorted(filenames):
            if name.endswith(SOURCE_SUFFIXES):
                yield os.path.relpath(os.path.join(dirpath, name), root).replace(os.sep, '/')


def includes(root, rel_path):
    """(line number, included path, quoted, layer) of every checked include of a file."""
    pattern = TD_INCLUDE if rel_path.endswith('.td') else INCLUDE
    with open(os.path.join(root, rel_path), encoding='utf-8', errors='replace') as f:
        for number, line in enumerate(f, 1):
            m = pattern.match(line)
            if not m:
                continue
            quoted = m.group(2) is not None
            target = m.group(2) if quoted else m.group(3)
            layer = resolve(root, rel_path, target, quoted)
            if layer is not None:
                yield number, target, layer


def main():
    parser = argparse.ArgumentParser(description=__doc__.split('\n')[0])
    here = os.path.dirname(os.path.abspath(__file__))
    parser.add_argument('--root', default=os.path.normpath(os.path.join(here, '..', '..')))
    parser.add_argument('--graph', action='store_true')
    args = parser.parse_args()
    root = os.path.abspath(args.root)
    doc = os.path.join(root, 'docs', 'architecture.md')

    graph = collections.Counter()
    errors, used_tolerated, checked = [], set(), 0
    try:
        rules, tolerated = read_layers(doc) if not args.graph else ({}, set())
    except LayerError as e:
        print(f'check_layering: error: {e}', file=sys.stderr)
        return 2
    for rel_path in source_files(root):
        layer = layer_of(rel_path)
        if layer is None:
            continue
        for number, target, dep in includes(root, rel_path):
            checked += 1
            if dep == layer:
                continue
            graph[(layer, dep)] += 1
            if args.graph:
                continue
            allowed = rules.get(layer)
            if allowed is None:
                errors.append(f'{rel_path}:{number}: #include "{target}": {layer} is not a '
                              f'layer of docs/architecture.md')
            elif '*' in allowed or dep in allowed:
                continue
            elif (rel_path, target) in tolerated:
                used_tolerated.add((rel_path, target))
            else:
                errors.append(f'{rel_path}:{number}: #include "{target}": {layer} may not '
                              f'include {dep} (allowed: {layer} -> '
                              f'{" ".join(sorted(allowed)) or "nothing"})')
    if args.graph:
        for (layer, dep), count in sorted(graph.items()):
            print(f'{layer} -> {dep}  ({count})')
        return 0
    for file, target in sorted(tolerated - used_tolerated):
        errors.append(f'docs/architecture.md: tolerated include {file} -> {target} no longer '
                      f'occurs (or is allowed now): remove it from the list')
    for error in errors:
        print(f'check_layering: error: {error}', file=sys.stderr)
    print(f'check_layering: {checked} includes checked, {len(used_tolerated)} tolerated, '
          f'{len(errors)} errors')
    return 1 if errors else 0


if __name__ == '__main__':
    sys.exit(main())
