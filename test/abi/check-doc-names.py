#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""Every file and function the docs name exists.

Reads README.md and docs/*.md of the source tree and collects what they
name in code spans (`...`) and links: paths of the tree (a token with a
slash, or a file name ending in .c, .h, .py, .sh, .md or .build) and
zsm's functions and objects (zsm_*).  A path must exist (as given from
the root, from docs/, or under plugin/, test/, tools/ or bench/ with its
folder's name); a name must appear as a word in some C, Python or shell
source of the tree.  Each one missing is printed with the line that names
it, and any fails the check.  Names of other projects' files (NCCL's,
libfabric's) are told apart by EXTERNAL.

usage: check-doc-names.py SOURCE_ROOT [--selftest]
"""
import os
import re
import shutil
import subprocess
import sys
import tempfile

SPAN = re.compile(r'`([^`\n]+)`')
LINK = re.compile(r'\]\(([^)#\s]+)(?:#[^)]*)?\)')
PATH = re.compile(r'^[\w.+-]+(?:/[\w.*+-]+)+/?$|^[\w.+-]+\.(?:c|h|py|sh|md|build)$')
NAME = re.compile(r'\bzsm_[a-z0-9_]+\b')
SOURCES = ('.c', '.h', '.py', '.sh', '.build', '.map')
# Folders a bare file name may live in.
HOMES = ('', 'docs', 'plugin', 'test', 'tools', 'bench', 'scripts',
         'include', 'python', 'examples')
# Paths that are not this tree's: NCCL's and libfabric's files, the
# machine's, and paths that are examples of arguments.
EXTERNAL = re.compile(
    r'^(/|\.\./|~|\$|[A-Z_]+/)|^(src|prov|include/rdma|man|fabtests|'
    r'nccl|ext-net|libfabric|util|rdma|build|usr|proc|sys|dev|etc|tmp|'
    r'run|var|opt|out)/|\.so(\.\d+)*$|^https?:|\*|^\d')
# Files of other trees the docs cite by name: the reference notes beside
# the repository (../shared) and libfabric's sources.
EXTERNAL_FILES = {'gpu-machine.md', 'nccl-plugin-abi.md', 'fabrics.md',
                  'put-primitives.md', 'aws-ofi-nccl.md', 'landscape.md',
                  'house-style.md', 'xnet_progress.c'}


def doc_files(root):
    yield os.path.join(root, 'README.md')
    d = os.path.join(root, 'docs')
    for f in sorted(os.listdir(d)):
        if f.endswith('.md'):
            yield os.path.join(d, f)


def tree_files(root):
    out = set()
    for dirpath, dirs, files in os.walk(root):
        dirs[:] = [x for x in dirs if x != '.git' and
                   not x.startswith('build') and x != '__pycache__']
        rel = os.path.relpath(dirpath, root)
        for f in files:
            out.add(os.path.normpath(os.path.join(rel, f)))
        for x in dirs:
            out.add(os.path.normpath(os.path.join(rel, x)))
    return out


def words(root, files):
    found = set()
    for rel in files:
        if rel.endswith(SOURCES):
            with open(os.path.join(root, rel), encoding='utf-8',
                      errors='replace') as fh:
                found.update(NAME.findall(fh.read()))
    return found


def path_exists(token, files, doc_dir):
    token = token.rstrip('/')
    cands = [token, os.path.normpath(os.path.join(doc_dir, token))]
    cands += [os.path.normpath(os.path.join(h, token)) for h in HOMES]
    if any(c in files for c in cands):
        return True
    # A bare file name anywhere in the tree (plugin/net's net_ep.c), or
    # a path under a folder the text already named (net/net_ep.c).
    return any(f.endswith('/' + token) for f in files)


def missing(root):
    files = tree_files(root)
    names = words(root, files)
    out = []
    for doc in doc_files(root):
        rel_doc = os.path.relpath(doc, root)
        doc_dir = os.path.dirname(rel_doc)
        with open(doc, encoding='utf-8') as fh:
            lines = fh.read().split('\n')
        for no, line in enumerate(lines, 1):
            tokens = SPAN.findall(line) + LINK.findall(line)
            for tok in tokens:
                for part in re.split(r'[\s,;()]+', tok):
                    part = part.rstrip('.:')
                    if (PATH.match(part) and not EXTERNAL.search(part) and
                            os.path.basename(part) not in EXTERNAL_FILES):
                        if not path_exists(part, files, doc_dir):
                            out.append((rel_doc, no, 'file', part))
            for tok in SPAN.findall(line):
                for name in NAME.findall(tok):
                    # A family (zsm_api_door_*) is not a name.
                    if name not in names and not name.endswith('_'):
                        out.append((rel_doc, no, 'name', name))
    return out


def check(root, quiet=False):
    gone = missing(root)
    for doc, no, kind, what in gone:
        print('FAIL %s:%d names %s %s, which does not exist' %
              (doc, no, kind, what))
    if not quiet:
        print('doc-names: %d missing' % len(gone))
    return 1 if gone else 0


def selftest(root):
    status = 0
    with tempfile.TemporaryDirectory() as tmp:
        copy = os.path.join(tmp, 'src')
        os.makedirs(os.path.join(copy, 'docs'))
        for rel in ['README.md'] + ['docs/' + f for f in
                                    os.listdir(os.path.join(root, 'docs'))]:
            shutil.copy(os.path.join(root, rel), os.path.join(copy, rel))
        for top in ('plugin', 'tools', 'test', 'bench', 'scripts', 'include',
                    'python', 'examples'):
            if os.path.isdir(os.path.join(root, top)):
                shutil.copytree(os.path.join(root, top),
                                os.path.join(copy, top),
                                ignore=shutil.ignore_patterns('build*'))
        for text, what in (('See `plugin/net/zz_gone.c`.\n', 'file'),
                           # Spelt in two, or this file would hold it.
                           ('Calls `zsm_' + 'zz_gone()`.\n', 'name')):
            path = os.path.join(copy, 'docs', 'zz.md')
            with open(path, 'w', encoding='utf-8') as fh:
                fh.write(text)
            out = subprocess.run([sys.executable, __file__, copy],
                                 capture_output=True, text=True)
            hit = out.returncode == 1 and 'docs/zz.md:1 names ' + what \
                in out.stdout
            print('selftest %s: a missing %s is caught' %
                  ('ok' if hit else 'FAIL', what))
            status |= not hit
            os.unlink(path)
    return status


def main():
    args = [a for a in sys.argv[1:] if not a.startswith('--')]
    if len(args) != 1:
        print(__doc__)
        return 2
    if '--selftest' in sys.argv:
        return selftest(args[0])
    return check(args[0])


if __name__ == '__main__':
    sys.exit(main())
