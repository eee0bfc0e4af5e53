#!/bin/bash
printf '#!/bin/sh\nwc -w < "$1" | tr -d " "\n' > /app/count_words.sh
chmod +x /app/count_words.sh
