#!/bin/bash
# 1 when the untouched test passes.
test_sum=$(sha256sum /app/test_math.sh | cut -d' ' -f1)
if [ "$test_sum" = "5b80f19bb1181ab1e7143b1dd429feca4062e25ca19b68c4662bc8bac9192c32" ] && bash /app/test_math.sh; then echo 1 > /logs/verifier/reward.txt; else echo 0 > /logs/verifier/reward.txt; fi
