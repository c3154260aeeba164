#!/usr/bin/env bash
# Runs every Fuzz target in the module for FUZZTIME each (go test -fuzz takes one
# target at a time).
#
# FUZZTIME may be a duration (60s) or a count (20000x). A duration run can end with a
# bare "context deadline exceeded" and no crasher: a race in Go's fuzz coordinator
# (golang/go#75804, fixed in Go 1.27, not in any 1.26.x). So a failing duration run
# counts as a failure only when it wrote a reproducer into testdata/fuzz/<Target>/ or
# printed anything else; count-based runs have no deadline and are taken as they are.
set -uo pipefail
fuzztime=${FUZZTIME:-60s}
minimize=${FUZZMINIMIZETIME:-5s}
failed=0
for dir in $(grep -rl --include='*_test.go' '^func Fuzz' . | xargs -n1 dirname | sort -u); do
  for f in $(grep -h '^func Fuzz' "$dir"/*_test.go | sed 's/func \(Fuzz[A-Za-z0-9_]*\).*/\1/'); do
    echo "fuzz $dir $f ($fuzztime)"
    corpus="$dir/testdata/fuzz/$f"
    before=$(ls "$corpus" 2>/dev/null | sort)
    out=$(go test -run='^$' -fuzz="^$f\$" -fuzztime="$fuzztime" -fuzzminimizetime="$minimize" "$dir" 2>&1)
    rc=$?
    if [ $rc -eq 0 ]; then
      echo "$out" | tail -n 3
    else
      echo "$out" | tail -n 80 # the failure's own lines come before the last three (FAIL, exit status)
      after=$(ls "$corpus" 2>/dev/null | sort)
      if [[ "$fuzztime" != *x ]] && [ "$before" == "$after" ] &&
         echo "$out" | grep -q '^    context deadline exceeded$' &&
         ! echo "$out" | grep -q -e 'panic:' -e 'Failing input written'; then
        echo "fuzz $dir $f: ignoring the fuzztime deadline race (golang/go#75804); no reproducer written"
      else
        echo "fuzz $dir $f: FAILED"
        failed=1
      fi
    fi
  done
done
exit $failed
