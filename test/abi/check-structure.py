#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""The layering rules of plugin/ (docs/design.md, "Layers"), checked.

    rank     every folder of plugin/ has a rank (RANKS below); a file
             includes and calls only its own folder or one of a lower
             rank, so folders of equal rank never meet and no circle
             can form.  A call is any use of a name another folder
             defines (a function or an object), whatever the includes.
    nccl     only plugin/abi includes NCCL's declarations or names an
             NCCL type or constant (ncclFoo, NCCL_FOO)
    ce-name  no code outside plugin/ce and the transport choice
             (entry/select.c) names ce (an include of ce/, zsm_ce_*,
             ZSM_CE_*, a field or variable called ce, ce_* or *_ce), so
             that file is the only one that names both transports
    atomic   every atomic call names its memory order: the _explicit
             forms only (atomic_load(), atomic_store(), atomic_fetch_*()
             and the like are seq_cst without saying so)
    size     no struct in plugin/ over 25 members, no function over 80
             lines (its braces' lines included), no file of plugin/ or
             of the tools (--tools DIR) over 1000 lines.  One still
             over would be listed in OVER (empty now); one listed that
             is no longer over fails too, so the list only shrinks.

Comments and string literals are not code: a message may say "ce".
Each violation is printed as one (rule, file, name), and any fails the
check.  With --selftest the check is run on copies of the tree with one
deliberate violation of each kind, each of which must fail, and on an
unchanged copy, which must pass.  With --ranks the rank table is printed
as docs/design.md draws it; with --doc FILE that drawing must be in FILE.

usage: check-structure.py PLUGIN_DIR [--tools DIR] [--selftest | --ranks |
                          --doc FILE]
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
INCLUDE = re.compile(r'#\s*include\s*"([^"]+)"')
IDENT = re.compile(r'\b(zsm_\w+)\b')
IMPLICIT_ATOMIC = re.compile(
    r'\b(atomic_(?:load|store|exchange|fetch_(?:add|sub|or|and|xor)|'
    r'compare_exchange_(?:strong|weak)))\s*\(')

# Highest first: (rank, folders, what they are).  A folder names only
# folders on lower lines.
RANKS = [
    (10, ('abi',), "the ABI edge: NCCL's tables"),
    (9, ('api', 'rma'), "zsm's own API; NCCL 2.30's RMA semantics, for NCCL alone"),
    (8, ('group',), 'every rank pair joined, windows registered symmetrically'),
    (7, ('entry',), 'entry points, lifetime, the transport choice'),
    (6, ('net', 'ce'), 'the transports, behind struct zsm_comm_ops'),
    (5, ('core',), 'comm, request and registration base objects'),
    (4, ('boot',), "the API's own bootstrap over TCP"),
    (3, ('proxy',), 'the engine: queue, fifos, progress thread'),
    (2, ('common',), 'log, settings, handles, CUDA state, host identity'),
]
RANK = {f: r for r, folders, _ in RANKS for f in folders}

MAX_MEMBERS = 25
MAX_FUNC_LINES = 80
MAX_FILE_LINES = 1000
# Still over a size limit, if any: (kind, file, name).  Empty since
# issue 33 took the last ones apart; a new one must not be added.
OVER = set()

# The transport choice: the one place outside plugin/ce that knows the
# transports by name.
SELECT = {'entry/select.c', 'entry/select.h'}
# The one table of every ZSM_* setting (house style) lists ce's too.
PARAM_TABLE = {'common/param.c', 'common/param.h'}


def ranks_drawing():
    """The rank table as docs/design.md draws it."""
    lines = []
    for r, folders, what in RANKS:
        names = ', '.join('plugin/' + f for f in folders)
        lines.append('    %2d  %-30s %s' % (r, names, what))
    return '\n'.join(lines) + '\n'


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


def sources(root):
    for dirpath, _, files in os.walk(root):
        for f in sorted(files):
            if f.endswith(('.c', '.h')):
                path = os.path.join(dirpath, f)
                rel = os.path.relpath(path, root)
                with open(path, encoding='utf-8') as fh:
                    yield rel, strip(fh.read())


def top_level(code):
    """The text of code at brace depth 0, where definitions start: each
    body or initialiser is blanked between its braces."""
    out, depth = [], 0
    for c in code:
        if c == '{':
            depth += 1
            out.append('{' if depth == 1 else ' ')
        elif c == '}':
            depth -= 1
            out.append('}' if depth == 0 else ' ')
        else:
            out.append(c if depth == 0 or c == '\n' else ' ')
    return ''.join(out)


DEF_FUNC = re.compile(r'\b(zsm_\w+)\s*\([^;{}]*\)\s*(?:__attribute__\s*\(\([^;{}]*\)\)\s*)*\{')
DEF_OBJ = re.compile(r'^(?!\s*(?:extern|typedef|static)\b)[^;#(){}]*?\b(zsm_\w+)\s*(?:\[[^\]]*\]\s*)*(?:=|;)', re.M)


def definitions(tree):
    """Each zsm_* function or object a folder defines: name -> folder.
    Static functions count (a header's inline ones are called from
    other folders); a name defined in two folders is left out."""
    owner = {}
    for rel, code in tree:
        top = top_level(code)
        names = set(m.group(1) for m in DEF_FUNC.finditer(top))
        if rel.endswith('.c'):
            names |= set(m.group(1) for m in DEF_OBJ.finditer(top))
        for name in names:
            if owner.get(name, part(rel)) != part(rel):
                owner[name] = None
            else:
                owner[name] = part(rel)
    return {n: f for n, f in owner.items() if f}


def rank_ok(user, used):
    return user == used or (used in RANK and RANK[used] < RANK[user])


def rank_violations(tree, found):
    owner = definitions(tree)
    for rel, code in tree:
        top = part(rel)
        if top not in RANK:
            found.add(('rank', rel, 'folder %s is not in the rank table'
                       % (top or '.')))
            continue
        for inc in INCLUDE.findall(code):
            if '/' in inc and not rank_ok(top, part(inc)):
                found.add(('rank', rel, inc))
        for name in set(IDENT.findall(code)):
            used = owner.get(name)
            if used and not rank_ok(top, used):
                found.add(('rank', rel, '%s (%s)' % (name, used)))


def struct_members(code):
    """(name, members) of each struct defined in code: its semicolons at
    its own depth, so a nested struct or union is one member."""
    out = []
    for m in re.finditer(r'\bstruct\s+(\w+)\s*\{', code):
        depth, n, k = 1, 0, m.end()
        while depth and k < len(code):
            c = code[k]
            depth += (c == '{') - (c == '}')
            n += c == ';' and depth == 1
            k += 1
        out.append((m.group(1), n))
    return out


def function_lines(code):
    """(name, lines) of each function defined in code, from the line of
    its opening brace to that of its closing one."""
    top = top_level(code)
    out = []
    for m in re.finditer(r'\b(\w+)\s*\([^;{}]*\)\s*\{', top):
        end = top.index('}', m.end())
        out.append((m.group(1),
                    top.count('\n', m.end() - 1, end) + 1))
    return out


def size_over(rel, text, code, in_plugin):
    """What of file rel is over a size limit: (kind, file, name, size)."""
    over = []
    lines = text.count('\n')
    if lines > MAX_FILE_LINES:
        over.append(('file', rel, '', lines))
    if not in_plugin:
        return over
    for name, n in struct_members(code):
        if n > MAX_MEMBERS:
            over.append(('struct', rel, name, n))
    for name, n in function_lines(code):
        if n > MAX_FUNC_LINES:
            over.append(('function', rel, name, n))
    return over


def size_violations(root, tools, found):
    seen = set()
    dirs = [(root, '', True)] + ([(tools, 'tools/', False)] if tools else [])
    for base, prefix, in_plugin in dirs:
        for dirpath, _, files in os.walk(base):
            for f in sorted(files):
                if not f.endswith(('.c', '.h')):
                    continue
                path = os.path.join(dirpath, f)
                rel = prefix + os.path.relpath(path, base)
                with open(path, encoding='utf-8') as fh:
                    text = fh.read()
                for kind, r, name, n in size_over(rel, text, strip(text),
                                                  in_plugin):
                    seen.add((kind, r, name))
                    if (kind, r, name) not in OVER:
                        found.add(('size', rel, '%s %s: %d' %
                                   (kind, name or 'length', n)))
    for kind, rel, name in OVER:
        if (kind, rel, name) not in seen and (tools or not rel.startswith(
                'tools/')):
            found.add(('size', rel, '%s %s is no longer over its limit: '
                       'take it out of OVER' % (kind, name or 'length')))


def violations(root, tools=None):
    found = set()
    size_violations(root, tools, found)
    tree = list(sources(root))
    rank_violations(tree, found)
    for rel, code in tree:
        top = part(rel)
        if top != 'abi':
            for m in NCCL_INCLUDE.finditer(code):
                found.add(('nccl', rel, m.group(0).split()[-1]))
            for m in NCCL_NAME.finditer(code):
                found.add(('nccl', rel, m.group(1)))
        for m in IMPLICIT_ATOMIC.finditer(code):
            found.add(('atomic', rel, m.group(1) + '()'))
        if top != 'ce' and rel not in SELECT:
            for inc in INCLUDE.findall(code):
                if inc.startswith('ce/'):
                    found.add(('ce-name', rel, inc))
            for m in CE_NAME.finditer(code):
                name = m.group(1)
                if rel in PARAM_TABLE and re.match(
                        r'(ZSM_P_)?CE(_\w+)?$', name):
                    continue
                found.add(('ce-name', rel, name))
    return found


def check(root, tools=None, quiet=False):
    found = sorted(violations(root, tools))
    for rule, rel, name in found:
        where = rel if rel.startswith('tools/') else 'plugin/' + rel
        print(f'FAIL {rule}: {where} names {name}')
    if not quiet:
        print('structure: %d violation(s) of the rules rank, nccl, '
              'ce-name, atomic, size (%d still over, listed)' %
              (len(found), len(OVER)))
    return 1 if found else 0


# One deliberate violation of each kind: (rule, file to write, its text).
PLANTS = [
    # A lower rank includes a higher one; and calls one, with no include.
    ('rank', 'core/zz_plant.c',
     '#include "entry/entry.h"\nint zz(void) { return 0; }\n'),
    ('rank', 'common/zz_plant.c',
     'int zsm_comm_error(const void *c);\n'
     'int zz(const void *c) { return zsm_comm_error(c); }\n'),
    ('rank', 'net/zz_plant.c',
     'int zsm_entry_life_enter(const char *call);\n'
     'int zz(void) { return zsm_entry_life_enter("zz"); }\n'),
    # Equal ranks meet: an include, and a call.
    ('rank', 'net/zz_plant.c',
     '#include "ce/ce.h"\nint zz(void) { return 0; }\n'),
    ('rank', 'ce/zz_plant.c',
     'void zsm_net_comm_fail(void *c, int e, const char *w);\n'
     'void zz(void *c) { zsm_net_comm_fail(c, -5, 0); }\n'),
    ('rank', 'api/zz_plant.c',
     '#include "abi/shim.h"\nint zz(void) { return 0; }\n'),
    # The API beside NCCL's RMA semantics, never on them.
    ('rank', 'api/zz_plant.c',
     'int zsm_rma_test(void *c, void *r, int *d);\n'
     'int zz(int *d) { return zsm_rma_test(0, 0, d); }\n'),
    # A folder the table does not know.
    ('rank', 'zz/zz_plant.c', 'int zz(void) { return 0; }\n'),
    ('nccl', 'common/zz_plant.c',
     '#include "abi/nccl_net.h"\nint zz(void) { return 0; }\n'),
    ('nccl', 'proxy/zz_plant.c',
     'typedef int ncclResult_t;\nncclResult_t zz(void) { return 0; }\n'),
    ('ce-name', 'proxy/zz_plant.c',
     'struct zz { int ce; };\nint zz(struct zz *z) { return z->ce; }\n'),
    ('ce-name', 'entry/zz_plant.c',
     'int zsm_ce_enabled(void);\nint zz(void) { return zsm_ce_enabled(); }\n'),
    ('atomic', 'common/zz_plant.c',
     '#include <stdatomic.h>\nint zz(atomic_int *a) '
     '{ return atomic_load(a); }\n'),
    # One over each size limit.
    ('size', 'common/zz_plant.c',
     'struct zz {\n' + ''.join('\tint m%d;\n' % i for i in range(26)) +
     '};\n'),
    ('size', 'proxy/zz_plant.c',
     'int zz(int x)\n{\n' + '\tx++;\n' * 79 + '\treturn x;\n}\n'),
    ('size', 'core/zz_plant.c', '/* long */\n' * 1001),
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
            os.makedirs(os.path.dirname(path), exist_ok=True)
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


def doc_check(path):
    with open(path, encoding='utf-8') as fh:
        text = fh.read()
    if ranks_drawing() in text:
        print('structure: %s draws the rank table' % path)
        return 0
    print('FAIL doc: %s does not draw the rank table as it is; it should '
          'hold:\n%s' % (path, ranks_drawing()))
    return 1


def main():
    argv, args, opts = sys.argv[1:], [], {}
    while argv:
        a = argv.pop(0)
        if a in ('--tools', '--doc'):
            if not argv:
                print(__doc__)
                return 2
            opts[a] = argv.pop(0)
        elif a.startswith('--'):
            opts[a] = True
        else:
            args.append(a)
    if '--ranks' in opts:
        sys.stdout.write(ranks_drawing())
        return 0
    if '--doc' in opts:
        return doc_check(opts['--doc'])
    if len(args) != 1:
        print(__doc__)
        return 2
    if '--selftest' in opts:
        return selftest(args[0])
    return check(args[0], opts.get('--tools'))


if __name__ == '__main__':
    sys.exit(main())
