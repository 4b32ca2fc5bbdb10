#!/usr/bin/env bash
# `npm run dev`            local OpenShift-on-AWS cluster + the operator (once built), live summary; Ctrl-C stops all
# `npm run dev -- --detach` the same in the background; admin kubeconfig in .local/dev/kubeconfig
# `npm run dev:stop`        stops a detached one (= tools/dev.sh --stop)
set -euo pipefail
KO_SCRIPT=dev
# shellcheck source=cluster/lib.sh
. "$(dirname "${BASH_SOURCE[0]}")/cluster/lib.sh"
cd "$ko_repo_root"
dev_dir="$ko_local_dir/dev"
pid_file="$dev_dir/pid"
mkdir -p "$dev_dir"

running_pid() {
  local pid
  pid=$(cat "$pid_file" 2>/dev/null || true)
  if [ -n "$pid" ] && kill -0 "$pid" 2>/dev/null; then echo "$pid"; fi
}

mode=foreground
for arg in "$@"; do
  case "$arg" in
    --detach|-d) mode=detach ;;
    --stop) mode=stop ;;
    -h|--help) sed -n '2,4p' "$0" | sed 's/^# //'; exit 0 ;;
    *) ko_fail "unknown argument $arg (use --detach or --stop)" ;;
  esac
done

if [ "$mode" = stop ]; then
  pid=$(running_pid)
  if [ -z "$pid" ]; then rm -f "$pid_file"; ko_log "nothing is running"; exit 0; fi
  kill -TERM "$pid"
  for _ in $(seq 1 60); do kill -0 "$pid" 2>/dev/null || break; sleep 0.5; done
  if kill -0 "$pid" 2>/dev/null; then kill -KILL "$pid"; ko_log "pid $pid did not stop in 30s: killed (its watchdog cleans up the cluster)"; fi
  rm -f "$pid_file"
  ko_log "stopped"
  exit 0
fi

if pid=$(running_pid) && [ -n "$pid" ]; then
  ko_fail "already running (pid $pid; kubeconfig $dev_dir/kubeconfig): npm run dev:stop first"
fi

bash tools/setup.sh
node=node_modules/.bin/node
"$node" tools/cluster/bundle.mjs packages/testkit/src/dev.ts "$dev_dir/dev.mjs" || ko_fail "bundling packages/testkit/src/dev.ts failed"

if [ "$mode" = foreground ]; then
  echo $$ > "$pid_file"
  trap 'rm -f "$pid_file"' EXIT
  "$node" --enable-source-maps "$dev_dir/dev.mjs"
  exit $?
fi

# Detached: its own session, so a closed terminal or Ctrl-C here does not reach it.
rm -f "$dev_dir/state.json"
setsid "$node" --enable-source-maps "$dev_dir/dev.mjs" --detached > "$dev_dir/dev.log" 2>&1 < /dev/null &
echo $! > "$pid_file"
pid=$(cat "$pid_file")
ko_log "starting in the background (pid $pid, log .local/dev/dev.log)"
for _ in $(seq 1 600); do
  [ -f "$dev_dir/state.json" ] && break
  if ! kill -0 "$pid" 2>/dev/null; then
    tail -n 5 "$dev_dir/dev.log" >&2
    ko_fail "the dev cluster exited during start-up (full log: .local/dev/dev.log)"
  fi
  sleep 0.5
done
[ -f "$dev_dir/state.json" ] || ko_fail "the dev cluster did not come up in 5 minutes (log: .local/dev/dev.log)"
sleep 1
awk '/^--- /{block=""} {block=block $0 "\n"} END{printf "%s", block}' "$dev_dir/dev.log" | sed '1d'
ko_log "running in the background; kubeconfig: $dev_dir/kubeconfig; stop with: npm run dev:stop"
