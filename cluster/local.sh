#!/usr/bin/env bash
# A development cluster on loopback: a Ray head node and a SeaweedFS S3 server, both bound to 127.0.0.1.
#
#   cluster/local.sh start [ray|s3|all]   # default all; prints the environment to export
#   cluster/local.sh env                  # print it again
#   cluster/local.sh stop  [ray|s3|all]
#
#   eval "$(cluster/local.sh env)"
#   ray job submit --runtime-env cluster/runtime_env.yaml --working-dir . -- \
#       python -m jobs.audit --config jobs/configs/demo.yaml --set store.run=s3://$SB_BUCKET/demo
#
# Ports (all overridable): SB_RAY_PORT (GCS, 6379), SB_DASHBOARD_PORT (8265), SB_CLIENT_PORT (10001),
# SB_NODE_MANAGER_PORT, SB_OBJECT_MANAGER_PORT, SB_METRICS_PORT, SB_AGENT_LISTEN_PORT,
# SB_AGENT_GRPC_PORT, SB_RUNTIME_ENV_AGENT_PORT, SB_MIN_WORKER_PORT..SB_MAX_WORKER_PORT, SB_S3_PORT (8333)
# and the SeaweedFS internals SB_WEED_*_PORT / SB_WEED_*_GRPC_PORT. State lives in SB_LOCAL_DIR (default runs/.local-cluster).
# The cluster runs with the Python of this checkout (.venv): jobs submitted to it run `python` from
# the same venv, because the Ray processes inherit this PATH.
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
VENV_BIN="${SB_VENV_BIN:-$ROOT/.venv/bin}"
STATE="${SB_LOCAL_DIR:-$ROOT/runs/.local-cluster}"
HOST=127.0.0.1

: "${SB_RAY_PORT:=6379}" "${SB_DASHBOARD_PORT:=8265}" "${SB_CLIENT_PORT:=10001}"
: "${SB_NODE_MANAGER_PORT:=6380}" "${SB_OBJECT_MANAGER_PORT:=6381}" "${SB_METRICS_PORT:=6382}"
: "${SB_AGENT_LISTEN_PORT:=6383}" "${SB_AGENT_GRPC_PORT:=6384}" "${SB_RUNTIME_ENV_AGENT_PORT:=6385}"
: "${SB_MIN_WORKER_PORT:=20000}" "${SB_MAX_WORKER_PORT:=20199}" "${SB_NUM_CPUS:=$(nproc)}"
: "${SB_S3_PORT:=8333}" "${SB_WEED_MASTER_PORT:=9333}" "${SB_WEED_VOLUME_PORT:=9340}"
: "${SB_WEED_FILER_PORT:=8888}" "${SB_WEED_MASTER_GRPC_PORT:=19333}" "${SB_WEED_VOLUME_GRPC_PORT:=19340}"
: "${SB_WEED_FILER_GRPC_PORT:=18888}" "${SB_WEED_S3_GRPC_PORT:=18333}" "${SB_BUCKET:=sourcebench}"
: "${AWS_ACCESS_KEY_ID:=sourcebench}" "${AWS_SECRET_ACCESS_KEY:=sourcebench-local-secret}"

# Every Ray listener on loopback, and one authentication mode for `ray start`, drivers and `ray job submit`.
export RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER=0 RAY_AUTH_MODE="${RAY_AUTH_MODE:-disabled}"
export PATH="$VENV_BIN:$PATH" AWS_ACCESS_KEY_ID AWS_SECRET_ACCESS_KEY

print_env() {
  cat <<EOF
export RAY_ADDRESS=http://$HOST:$SB_DASHBOARD_PORT
export RAY_AUTH_MODE=$RAY_AUTH_MODE
export RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER=0
export AWS_ENDPOINT_URL=http://$HOST:$SB_S3_PORT
export AWS_ACCESS_KEY_ID=$AWS_ACCESS_KEY_ID
export AWS_SECRET_ACCESS_KEY=$AWS_SECRET_ACCESS_KEY
export SB_BUCKET=$SB_BUCKET
EOF
}

start_ray() {
  mkdir -p "$STATE/ray"
  # --block keeps `ray start` in the foreground as the owner of the node: stopping that one process
  # (its reaper takes the raylet, GCS, dashboard and workers with it) never touches other Rays.
  nohup ray start --block --head --node-ip-address=$HOST --port="$SB_RAY_PORT" \
    --dashboard-host=$HOST --dashboard-port="$SB_DASHBOARD_PORT" --ray-client-server-port="$SB_CLIENT_PORT" \
    --node-manager-port="$SB_NODE_MANAGER_PORT" --object-manager-port="$SB_OBJECT_MANAGER_PORT" \
    --metrics-export-port="$SB_METRICS_PORT" --dashboard-agent-listen-port="$SB_AGENT_LISTEN_PORT" \
    --dashboard-agent-grpc-port="$SB_AGENT_GRPC_PORT" --runtime-env-agent-port="$SB_RUNTIME_ENV_AGENT_PORT" \
    --min-worker-port="$SB_MIN_WORKER_PORT" --max-worker-port="$SB_MAX_WORKER_PORT" \
    --num-cpus="$SB_NUM_CPUS" --temp-dir="$STATE/ray" --disable-usage-stats >"$STATE/ray-start.log" 2>&1 &
  echo $! >"$STATE/ray.pid"
  wait_port "$SB_DASHBOARD_PORT" || { cat "$STATE/ray-start.log" >&2; exit 1; }
  echo "ray head on $HOST:$SB_RAY_PORT, dashboard/jobs http://$HOST:$SB_DASHBOARD_PORT" >&2
}

stop_pid_file() {
  local file="$1"
  [ -f "$file" ] || return 0
  local pid
  pid="$(cat "$file")"
  kill "$pid" 2>/dev/null || true
  for _ in $(seq 1 100); do kill -0 "$pid" 2>/dev/null || break; sleep 0.1; done
  kill -9 "$pid" 2>/dev/null || true
  rm -f "$file"
}

stop_ray() { stop_pid_file "$STATE/ray.pid"; }

wait_port() {
  for _ in $(seq 1 "${SB_WAIT_STEPS:-600}"); do  # 0.2 s steps: 2 min by default
    (exec 3<>"/dev/tcp/$HOST/$1") 2>/dev/null && return 0
    sleep 0.2
  done
  echo "nothing listens on $HOST:$1" >&2
  return 1
}

start_s3() {
  mkdir -p "$STATE/weed"
  "$VENV_BIN/weed" mini -dir="$STATE/weed" -ip=$HOST -ip.bind=$HOST -master.telemetry=false \
    -admin.ui=false -webdav=false -s3.port.iceberg=0 -s3.port.lance=0 -s3.port="$SB_S3_PORT" \
    -master.port="$SB_WEED_MASTER_PORT" -volume.port="$SB_WEED_VOLUME_PORT" -filer.port="$SB_WEED_FILER_PORT" \
    -master.port.grpc="$SB_WEED_MASTER_GRPC_PORT" -volume.port.grpc="$SB_WEED_VOLUME_GRPC_PORT" \
    -filer.port.grpc="$SB_WEED_FILER_GRPC_PORT" -s3.port.grpc="$SB_WEED_S3_GRPC_PORT" \
    >"$STATE/weed.log" 2>&1 &
  echo $! >"$STATE/weed.pid"
  wait_port "$SB_S3_PORT" || { cat "$STATE/weed.log" >&2; exit 1; }
  # The S3 gateway accepts connections shortly before its filer is ready: retry the bucket creation.
  "$VENV_BIN/python" - "$HOST" "$SB_S3_PORT" "$SB_BUCKET" <<'PY'
import sys, time
import boto3
host, port, bucket = sys.argv[1:]
client = boto3.client("s3", endpoint_url=f"http://{host}:{port}", region_name="us-east-1")
deadline = time.monotonic() + 30
while True:
    try:
        if bucket not in [b["Name"] for b in client.list_buckets().get("Buckets", [])]:
            client.create_bucket(Bucket=bucket)
        break
    except Exception:
        if time.monotonic() > deadline:
            raise
        time.sleep(0.5)
PY
  echo "SeaweedFS S3 on http://$HOST:$SB_S3_PORT, bucket $SB_BUCKET" >&2
}

stop_s3() { stop_pid_file "$STATE/weed.pid"; }

command="${1:-start}"
what="${2:-all}"
case "$command:$what" in
  start:ray) start_ray; print_env ;;
  start:s3) start_s3; print_env ;;
  start:all) start_s3; start_ray; print_env ;;
  stop:ray) stop_ray ;;
  stop:s3) stop_s3 ;;
  stop:all) stop_ray; stop_s3 ;;
  env:*) print_env ;;
  *) echo "usage: $0 start|stop|env [ray|s3|all]" >&2; exit 2 ;;
esac
