#!/bin/sh
# check-cli.sh BUILD_DIR - queue-tester on input that must not pass or crash (run by `make check`):
# an empty directory fails with a message instead of "0 passed, 0 failed" and status 0; a file
# with a chain of 40 000 `else if` links runs (its expansion once took a stack frame per link).
set -u
B=$1
QT=$B/queue-tester
T=$(mktemp -d)
trap 'rm -rf "$T"' EXIT
fail=0

mkdir "$T/empty"
"$QT" "$T/empty" > "$T/out" 2>&1
rc=$?
if [ $rc -ne 1 ] || ! grep -q "no \*.acc files" "$T/out" || ! grep -q "^0 passed, 1 failed" "$T/out"; then
	echo "check-cli: an empty directory: status $rc, expected 1 with 'no *.acc files':"
	cat "$T/out"
	fail=1
fi

# rank 1 falls through every link to the else; rank 0 takes the last link
awk 'BEGIN {
	n = 40000
	print "name \"else-if-chain\"\ndevices 2\nbuffer b int32 4 = rank + 5\nbuffer r int32 4\nprogram {"
	print "  let v = rank == 0 ? " n + 1 " : -7\n  if v == -1 { fence }"
	for (k = 0; k < n; k++)
		print "  else if v == " k + 2 " { send b to 1 tag " k " }"
	print "  else { recv r from 0 tag " n - 1 " }\n}"
	print "expect r = rank == 1 ? 5 : 0"
}' > "$T/chain.acc"
"$QT" "$T/chain.acc" > "$T/out" 2>&1
rc=$?
if [ $rc -ne 0 ] || ! grep -q "^PASS else-if-chain" "$T/out"; then
	echo "check-cli: a chain of 40000 else-if: status $rc, expected a pass:"
	tail -5 "$T/out"
	fail=1
fi
[ $fail -eq 0 ] && echo "check-cli: ok"
exit $fail
