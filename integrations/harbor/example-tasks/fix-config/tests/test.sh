#!/bin/bash
# 1 when the port is 8080 and nothing else changed.
expected=$'# The service\'s settings\nname = ledger\nport = 8080\nworkers = 4'
if [ "$(cat /app/server.conf)" = "$expected" ]; then echo 1 > /logs/verifier/reward.txt; else echo 0 > /logs/verifier/reward.txt; fi
