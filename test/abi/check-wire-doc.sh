#!/bin/sh
# SPDX-License-Identifier: MIT
# Each wire's numbers as the code has them (wire_doc) must be stated, word
# for word, in its document: net's in docs/design.md, ce's in docs/ce.md.
# usage: check-wire-doc.sh WIRE_DOC DOCS_DIR
set -u
out=$("$1") || { echo "FAIL: $1 did not run"; exit 1; }
status=0
check() {
	line=$(echo "$out" | grep "^$1 ")
	[ -n "$line" ] || { echo "FAIL: wire_doc printed no $1 line"; status=1; return; }
	if grep -qF "$line" "$2"; then
		echo "ok: $2 says \"$line\""
	else
		echo "FAIL: $2 does not say \"$line\" (the code's numbers)"
		status=1
	fi
}
check net "$2/design.md"
check ce "$2/ce.md"
exit $status
