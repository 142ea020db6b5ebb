#!/bin/sh
# SPDX-License-Identifier: MIT
# put-chain.sh API_RANKS MAX: how many functions a small zsm_put_signal
# passes through on its way to the provider's write (host memory, a tcp
# peer).  Rank 0 of `api_ranks chain` runs under gdb, which breaks on
# libfabric's fi_write, fi_writemsg and fi_writedata (inline: gdb finds
# them inside zsm's code by its debug information) and prints the stack.
# Every stack that holds zsm_put_signal must have at most MAX functions
# from it down to the write, inline ones counted as the source names
# them; at least one such stack must come (the caller posts its own put
# whenever the engine is free, which in this quiet process it nearly
# always is).  SKIP without gdb.
set -u
ranks=$1
max=$2
if ! command -v gdb >/dev/null 2>&1; then
	echo "SKIP: gdb is not installed (scripts/setup-debian.sh installs it)"
	exit 77
fi
dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT
cat >"$dir/gdb.x" <<'GDB'
set pagination off
set confirm off
set startup-with-shell off
set breakpoint pending on
set print frame-arguments none
set print thread-events off
set print inferior-events off
break fi_writemsg
commands
silent
echo ZSM-STACK\n
bt
continue
end
break fi_write
commands
silent
echo ZSM-STACK\n
bt
continue
end
break fi_writedata
commands
silent
echo ZSM-STACK\n
bt
continue
end
run
quit $_exitcode
GDB
API_RANK0_GDB="$dir/gdb.x" "$ranks" chain --hosts 0,1 --iters 20 \
	>"$dir/out" 2>&1
rc=$?
if [ $rc -ne 0 ]; then
	cat "$dir/out"
	echo "FAIL: api_ranks chain under gdb exited $rc"
	exit 1
fi
python3 - "$dir/out" "$max" <<'PY'
import re, sys

text = open(sys.argv[1], errors="replace").read()
limit = int(sys.argv[2])
frame = re.compile(r"^#(\d+)\s+(?:0x[0-9a-f]+ in )?([A-Za-z_][A-Za-z0-9_]*)")
stacks = []
for block in text.split("ZSM-STACK")[1:]:
    names = []
    for line in block.splitlines():
        m = frame.match(line)
        if m:
            names.append(m.group(2))
    stacks.append(names)
# Calls in tail position leave no frame: the engine's post of a
# descriptor (core's zsm_comm_post_desc) and net's per-kind poster jump
# to what they call.  Each such hop is put back, so that the count is
# the functions the source names.
HIDDEN = {
    ("zsm_proxy_submit_drive", "zsm_net_ep_post_req"):
        ["zsm_comm_post_desc", "zsm_net_ep_post_rma"],
    ("zsm_proxy_submit_drive", "zsm_net_ep_post_rma"):
        ["zsm_comm_post_desc"],
    ("zsm_comm_post_desc", "zsm_net_ep_post_req"):
        ["zsm_net_ep_post_rma"],
}


def source_path(s):
    """zsm_put_signal first, the function that writes last."""
    top = list(reversed(s[1 : s.index("zsm_put_signal") + 1]))
    out = []
    for i, name in enumerate(top):
        if out:
            out += ["(" + h + ")" for h in HIDDEN.get((out[-1].strip("()"),
                                                       name), [])]
        out.append(name)
    return out


issued = [s for s in stacks if "zsm_put_signal" in s and "zsm_entry_put" in s]
print(f"{len(stacks)} writes stopped in, {len(issued)} issued on "
      "zsm_put_signal's own stack")
if not stacks:
    print(text[-3000:])
    sys.exit("FAIL: gdb stopped in no write: no breakpoint took")
if not issued:
    sys.exit("FAIL: no write was issued on zsm_put_signal's own stack")
worst = max(issued, key=lambda s: len(source_path(s)))
path = source_path(worst)
print("path: " + " -> ".join(path) + " -> " + worst[0])
print(f"functions from zsm_put_signal to the write: {len(path)} "
      f"(limit {limit}; in brackets those a tail call leaves off the stack)")
for s in stacks:
    if s not in issued and "zsm_put_signal" in s:
        print("also (a retry by the call's own engine pass): " +
              " -> ".join(source_path(s)))
        break
if len(path) > limit:
    sys.exit(f"FAIL: {len(path)} functions, more than {limit}")
print("PASS")
PY
