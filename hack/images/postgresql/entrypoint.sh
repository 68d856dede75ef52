#!/bin/sh
# On an empty PGDATA: initdb with POSTGRES_USER as the superuser (password POSTGRES_PASSWORD, required over
# TCP with scram-sha-256 from any address) and POSTGRES_DB created. Then the server, in the foreground.
set -eu
: "${PGDATA:?PGDATA is required}"
user=${POSTGRES_USER:-postgres}
db=${POSTGRES_DB:-$user}
if [ ! -s "$PGDATA/PG_VERSION" ]; then
  : "${POSTGRES_PASSWORD:?POSTGRES_PASSWORD is required to initialise $PGDATA}"
  pwfile=$(mktemp)
  printf '%s\n' "$POSTGRES_PASSWORD" >"$pwfile"
  initdb --pgdata="$PGDATA" --username="$user" --pwfile="$pwfile" --encoding=UTF8 --auth-local=trust --auth-host=scram-sha-256
  rm -f "$pwfile"
  echo 'host all all all scram-sha-256' >>"$PGDATA/pg_hba.conf"
  if [ "$db" != postgres ]; then
    quote() { printf '"%s"' "$(printf '%s' "$1" | sed 's/"/""/g')"; }
    echo "CREATE DATABASE $(quote "$db") OWNER $(quote "$user")" | postgres --single -D "$PGDATA" postgres >/dev/null
  fi
fi
exec postgres -D "$PGDATA" -c listen_addresses='*' "$@"
