#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""The layering rules of plugin/ (docs/design.md, "Layers"), checked.

    nccl     only plugin/abi includes NCCL's declarations or names an
             NCCL type or constant (ncclFoo, NCCL_FOO)
    net-ce   plugin/net and plugin/ce neither include nor call each other
    ce-name  no code outside plugin/ce and the core's transport registry
             names ce (an include of ce/, zsm_ce_*, ZSM_CE_*, a field or
             variable called ce, ce_* or *_ce)

Comments and string literals are not code: a message may say "ce".
Each violation is printed as one (rule, file, name), and any fails the
check.  With --selftest the check is run on copies of the tree with one
deliberate violation of each rule, each of which must fail, and on an
unchanged copy, which must pass.

usage: check-structure.py PLUGIN_DIR [--selftest]
"""
import os
import re
import shutil
import subprocess
import sys
import tempfile

NCCL_INCLUDE = re.compile(r'#\s*include\s*[<"](?:[^">]*/)?(?:nccl[^">]*|net_v\d+\.h)[">]')
NCCL_NAME = re.compile(r'\b(nccl[A-Z]\w*|NCCL_\w+)\b')
CE_NAME = re.compile(r'\b((?:[A-Za-z0-9]+_)*[cC][eE](?:_[A-Za-z0-9]+)*)\b')
NET_NAME = re.compile(r'\b((?:zsm|ZSM)_(?:net|NET)_\w+)\b')
INCLUDE = re.compile(r'#\s*include\s*"([^"]+)"')

# The core's transport registry: the one place outside plugin/ce that
# knows the transports by name.
REGISTRY = {'core/registry.c', 'core/registry.h'}
# The one table of every ZSM_* setting (house style) lists ce's too.
PARAM_TABLE = {'common/param.c', 'common/param.h'}


def strip(text):
    """The code of a C file: comments and string/char literals blanked,
    line structure kept."""
    out, i, n = [], 0, len(text)
    while i < n:
        c = text[i]
        if text.startswith('/*', i):
            j = text.find('*/', i + 2)
            j = n if j < 0 else j + 2
            out.append(re.sub(r'[^\n]', ' ', text[i:j]))
            i = j
        elif text.startswith('//', i):
            j = text.find('\n', i)
            j = n if j < 0 else j
            i = j
        elif c in '"\'':
            j = i + 1
            while j < n and text[j] != c:
                j += 2 if text[j] == '\\' else 1
            # An include's path is code: keep it.
            line_start = text.rfind('\n', 0, i) + 1
            if re.match(r'\s*#\s*include', text[line_start:i]):
                out.append(text[i:j + 1])
            else:
                out.append(c + ' ' * (j - i - 1) + c)
            i = j + 1
        else:
            out.append(c)
            i += 1
    return ''.join(out)


def part(rel):
    return rel.split('/', 1)[0] if '/' in rel else ''


def violations(root):
    found = set()
    for dirpath, _, files in os.walk(root):
        for f in sorted(files):
            if not f.endswith(('.c', '.h')):
                continue
            path = os.path.join(dirpath, f)
            rel = os.path.relpath(path, root)
            with open(path, encoding='utf-8') as fh:
                code = strip(fh.read())
            top = part(rel)
            includes = INCLUDE.findall(code)
            if top != 'abi':
                for m in NCCL_INCLUDE.finditer(code):
                    found.add(('nccl', rel, m.group(0).split()[-1]))
                for m in NCCL_NAME.finditer(code):
                    found.add(('nccl', rel, m.group(1)))
            if top == 'net':
                for inc in includes:
                    if inc.startswith('ce/'):
                        found.add(('net-ce', rel, inc))
            if top == 'ce':
                for inc in includes:
                    if inc.startswith('net/'):
                        found.add(('net-ce', rel, inc))
                for m in NET_NAME.finditer(code):
                    found.add(('net-ce', rel, m.group(1)))
            if top != 'ce' and rel not in REGISTRY:
                for inc in includes:
                    if inc.startswith('ce/'):
                        found.add(('ce-name', rel, inc))
                for m in CE_NAME.finditer(code):
                    name = m.group(1)
                    if rel in PARAM_TABLE and re.match(
                            r'(ZSM_P_)?CE(_\w+)?$', name):
                        continue
                    found.add(('ce-name', rel, name))
                    # net calling into ce is the net-ce rule too.
                    if top == 'net' and name.lower().startswith('zsm_ce_'):
                        found.add(('net-ce', rel, name))
    return found


def check(root, quiet=False):
    found = sorted(violations(root))
    for rule, rel, name in found:
        print(f'FAIL {rule}: plugin/{rel} names {name}')
    if not quiet:
        print('structure: %d violation(s) of the rules nccl, net-ce, '
              'ce-name' % len(found))
    return 1 if found else 0


# One deliberate violation per rule: (rule, file to write, its text).
PLANTS = [
    ('nccl', 'common/zz_plant.c',
     '#include "abi/nccl_net.h"\nint zz(void) { return 0; }\n'),
    ('nccl', 'proxy/zz_plant.c',
     'typedef int ncclResult_t;\nncclResult_t zz(void) { return 0; }\n'),
    ('net-ce', 'net/zz_plant.c',
     '#include "ce/ce.h"\nint zz(void) { return 0; }\n'),
    ('net-ce', 'ce/zz_plant.c',
     'void zsm_net_comm_fail(void *c, int e, const char *w);\n'
     'void zz(void *c) { zsm_net_comm_fail(c, -5, 0); }\n'),
    ('ce-name', 'proxy/zz_plant.c',
     'struct zz { int ce; };\nint zz(struct zz *z) { return z->ce; }\n'),
    ('ce-name', 'core/zz_plant.c',
     'int zsm_ce_enabled(void);\nint zz(void) { return zsm_ce_enabled(); }\n'),
]


def selftest(root):
    status = 0
    with tempfile.TemporaryDirectory() as tmp:
        copy = os.path.join(tmp, 'plugin')
        shutil.copytree(root, copy)
        if check(copy, quiet=True):
            print('selftest FAIL: the unchanged tree does not pass')
            return 1
        print('selftest: the unchanged tree passes')
        for rule, rel, text in PLANTS:
            path = os.path.join(copy, rel)
            with open(path, 'w', encoding='utf-8') as fh:
                fh.write(text)
            out = subprocess.run([sys.executable, __file__, copy],
                                 capture_output=True, text=True)
            os.unlink(path)
            hit = out.returncode == 1 and f'FAIL {rule}: plugin/{rel}' in out.stdout
            print('selftest %s: rule %s on plugin/%s%s' %
                  ('ok' if hit else 'FAIL', rule, rel,
                   '' if hit else ' was not caught:\n' + out.stdout))
            status |= not hit
        # A comment or a message that says "ce" or "NCCL_PTR_CUDA" is
        # not code.
        path = os.path.join(copy, 'proxy', 'zz_plant.c')
        with open(path, 'w', encoding='utf-8') as fh:
            fh.write('/* ce and ncclNet_v8_t */\nconst char *zz = '
                     '"ce: NCCL_PTR_CUDA";\n')
        out = subprocess.run([sys.executable, __file__, copy],
                             capture_output=True, text=True)
        os.unlink(path)
        ok = out.returncode == 0
        print('selftest %s: comments and strings are not code' %
              ('ok' if ok else 'FAIL'))
        status |= not ok
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
