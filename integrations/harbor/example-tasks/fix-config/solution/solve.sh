#!/bin/bash
sed -i 's/^port = eighty$/port = 8080/' /app/server.conf
