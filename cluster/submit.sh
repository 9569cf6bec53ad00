#!/usr/bin/env bash
# `ray job submit` with this repository as the working dir, cluster/runtime_env.yaml, and the code
# version (git sha) recorded in the run manifest. S3 settings in the caller's environment
# (AWS_ENDPOINT_URL, AWS_ACCESS_KEY_ID, AWS_SECRET_ACCESS_KEY, AWS_REGION) are passed to the job.
#
#   cluster/submit.sh [--address http://HEAD:8265] [other ray job submit flags] -- \
#       python -m jobs.audit --config jobs/configs/cluster.yaml --set store.run=s3://BUCKET/RUN
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
PY="${SB_VENV_BIN:-$ROOT/.venv/bin}/python"
RUNTIME_ENV="$("$PY" - "$ROOT" <<'PY'
import json, os, subprocess, sys
import yaml
root = sys.argv[1]
spec = yaml.safe_load(open(os.path.join(root, "cluster", "runtime_env.yaml")))
env = spec.setdefault("env_vars", {})
try:
    sha = subprocess.run(["git", "-C", root, "rev-parse", "HEAD"], capture_output=True, text=True, check=True).stdout.strip()
    dirty = subprocess.run(["git", "-C", root, "status", "--porcelain", "--untracked-files=no"],
                           capture_output=True, text=True, check=True).stdout.strip()
    env["SOURCEBENCH_CODE_VERSION"] = sha + ("-dirty" if dirty else "")
except (OSError, subprocess.CalledProcessError):
    pass
for name in ("AWS_ENDPOINT_URL", "AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY", "AWS_SESSION_TOKEN", "AWS_REGION",
             "RAY_AUTH_MODE"):
    if os.environ.get(name):
        env[name] = os.environ[name]
print(json.dumps(spec))
PY
)"
exec "${SB_VENV_BIN:-$ROOT/.venv/bin}/ray" job submit --working-dir "$ROOT" --runtime-env-json "$RUNTIME_ENV" "$@"
