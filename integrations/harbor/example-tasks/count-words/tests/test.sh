#!/bin/bash
# 1 when the script counts the words of two files the agent never saw.
printf 'one two  three\nfour\tfive\n\nsix seven\n' > /tmp/a.txt
printf 'solo\n' > /tmp/b.txt
if [ -x /app/count_words.sh ] && [ "$(/app/count_words.sh /tmp/a.txt)" = 7 ] && [ "$(/app/count_words.sh /tmp/b.txt)" = 1 ]; then
  echo 1 > /logs/verifier/reward.txt
else
  echo 0 > /logs/verifier/reward.txt
fi
