#!/bin/sh
# Runs a command as an unprivileged user when run as root (root may write
# into read-only directories), else as is.
if [ "$(id -u)" = 0 ]; then
  exec setpriv --reuid=nobody --regid=nogroup --clear-groups -- "$@"
fi
exec "$@"
