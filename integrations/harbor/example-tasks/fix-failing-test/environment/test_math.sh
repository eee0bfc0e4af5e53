#!/bin/bash
. /app/math.sh
[ "$(add 2 3)" = 5 ] || { echo "add 2 3 is $(add 2 3), not 5"; exit 1; }
[ "$(double 21)" = 42 ] || { echo "double 21 is $(double 21), not 42"; exit 1; }
echo "all passed"
