#!/usr/bin/env bash
# One real check of tunepack's hf backend, the first thing to run when a token is at hand: through tunepack's own
# CLI it submits a tiny PEP 723 script as a cpu-basic HF job (10-minute timeout, the token as a job secret), follows
# it to the end, checks on the Hub that the job created a PRIVATE model repo {user}/tunepack-smoke-<random> holding
# the file it uploaded at the commit it announced (TUNEPACK_DONE), then deletes the repo (also on failure or
# Ctrl-C, which cancels the job too). Costs about a minute of cpu-basic (~$0.0002; the budget of project
# tunepack-smoke is charged at most $0.0017 until the job is settled).
#
# Usage: HF_TOKEN=hf_... bash bench/hf_smoke.sh     # the real check (network, a job, a repo created and deleted)
#        bash bench/hf_smoke.sh --quick             # no network, no money: renders the script, builds the exact
#                                                   # command the hf backend sends, decodes it locally (CI)
# Prints one block, `hf_smoke: PASS` last (exit 0), or `hf_smoke: FAIL <why>` (exit 1); exit 2 without HF_TOKEN.
set +x  # never trace: the token is in the environment
set -euo pipefail
cd "$(dirname "$0")/.."

FLAVOR=cpu-basic
TIMEOUT_S=600            # the job's own timeout
WAIT_S=900               # how long this script follows the job (scheduling included) before it cancels it
SCRIPT_NAME=tunepack_smoke.py
LABELS=(--label stage=smoke --label project=tunepack-smoke)
QUICK=0
for arg in "$@"; do
  case "$arg" in
    --quick) QUICK=1 ;;
    -h|--help) sed -n '2,12p' "$0"; exit 0 ;;
    *) echo "hf_smoke: FAIL unknown argument '$arg' (use --quick or nothing)"; exit 1 ;;
  esac
done

if [[ -x .venv/bin/python ]]; then PY=.venv/bin/python; else PY=${PYTHON:-python3}; fi
if [[ -x .venv/bin/tunepack ]]; then TUNEPACK=.venv/bin/tunepack; else TUNEPACK=$(command -v tunepack || true); fi

WORK=$(mktemp -d "${TMPDIR:-/tmp}/hf_smoke.XXXXXX")
JOB_ID="" JOB_ENDED=0 REPO="" REPO_MAY_EXIST=0 CLEANED=0

fail() {
  echo "hf_smoke: FAIL $*"
  exit 1
}

delete_repo() {  # $1: missing_ok (the trap: the job may not have made it) or strict (the success path)
  "$PY" - "$REPO" "$1" <<'EOF'
import sys

from mcp_server import hf_auth

repo, how = sys.argv[1:3]
try:
    api = hf_auth.api()
    api.delete_repo(repo, repo_type="model", missing_ok=how == "missing_ok")
    if api.repo_exists(repo, repo_type="model"):
        sys.exit("it is still there")
except Exception as exc:
    sys.exit(" ".join(str(exc).split())[:300])
EOF
}

cleanup() {  # on every way out: cancel a job still running, delete the repo it may have made, drop the temp dir
  local rc=$?
  trap - EXIT INT TERM
  if [[ -n "$JOB_ID" && "$JOB_ENDED" != 1 ]]; then
    if "$TUNEPACK" jobs cancel "$JOB_ID" --backend hf >/dev/null 2>&1; then
      echo "hf_smoke: cleanup: canceled job $JOB_ID" >&2
    else
      echo "hf_smoke: cleanup: could not cancel job $JOB_ID: run \`$TUNEPACK jobs cancel $JOB_ID --backend hf\`" >&2
    fi
  fi
  if [[ -n "$REPO" && "$REPO_MAY_EXIST" == 1 && "$CLEANED" != 1 ]]; then
    if delete_repo missing_ok >&2; then
      echo "hf_smoke: cleanup: deleted $REPO (if the job had made it)" >&2
    else
      echo "hf_smoke: cleanup: could not delete $REPO: delete it at ${HF_ENDPOINT:-https://huggingface.co}/$REPO/settings" >&2
    fi
  fi
  rm -rf "$WORK"
  exit "$rc"
}
trap cleanup EXIT
trap 'echo "hf_smoke: FAIL interrupted"; exit 130' INT TERM

# The job's script: create the private repo named by its argument, upload one small file, announce the commit.
cat >"$WORK/$SCRIPT_NAME" <<'EOF'
# /// script
# requires-python = ">=3.10"
# dependencies = ["huggingface_hub>=0.30"]
# ///
"""tunepack's HF smoke job: a private model repo, one small file, the commit as a TUNEPACK_DONE marker."""

import json
import sys

from huggingface_hub import HfApi


def marker(kind: str, payload: dict) -> None:  # the format of mcp_server/jobs/markers.py: TUNEPACK_<KIND> {json}
    print(f"TUNEPACK_{kind} " + json.dumps(payload), flush=True)


def main(repo_id: str) -> None:
    api = HfApi()  # the token is the job's HF_TOKEN secret
    content = f"tunepack hf smoke check: {repo_id}\n".encode()
    print(f"[tunepack] smoke: creating the private repo {repo_id}", flush=True)
    api.create_repo(repo_id, repo_type="model", private=True, exist_ok=False)
    commit = api.upload_file(path_or_fileobj=content, path_in_repo="smoke.txt", repo_id=repo_id,
                             repo_type="model", commit_message="tunepack hf smoke check")
    print(f"[tunepack] smoke: uploaded smoke.txt ({len(content)} bytes) at {commit.oid}", flush=True)
    marker("DONE", {"hub_repo": repo_id, "hub_commit": commit.oid, "file": "smoke.txt", "bytes": len(content)})


if __name__ == "__main__":
    try:
        main(sys.argv[1])
    except Exception as exc:
        marker("ERROR", {"kind": "hub", "problem": f"{type(exc).__name__}: {exc}"[:400],
                         "fix": "check that the token can write repos (repo.write) in its own namespace"})
        sys.exit(1)
EOF

# The exact command and limits the hf backend uses (HfBackend.submit: inline_command + check_limits) and the
# submit-time rules (hf_rules.check_job). Prints the bytes of argv, argv + env, the largest argument, the script.
measure() {
  "$PY" - "$WORK/$SCRIPT_NAME" "$1" "$FLAVOR" "$TIMEOUT_S" <<'EOF'
import os
import sys
from pathlib import Path

from mcp_server.jobs import hf_rules
from mcp_server.jobs.pricing import hf_flavors
from mcp_server.jobs.transport import check_limits, inline_command

script, repo, flavor, timeout = sys.argv[1:5]
text = Path(script).read_text(encoding="utf-8")
command = inline_command(text, [repo])
token = os.environ.get("HF_TOKEN") or "hf_" + "x" * 34  # only its length counts (a job secret is env)
try:
    size = check_limits(command, {"HF_TOKEN": token}, script_bytes=len(text.encode("utf-8")))
    hf_rules.check_job(flavor, int(timeout), {"stage": "smoke", "project": "tunepack-smoke"}, ["HF_TOKEN"], [],
                       [h.name for h in hf_flavors()], name=Path(script).stem)
except Exception as exc:
    print(" ".join(str(exc).split()))
    sys.exit(1)
print(f"{size.argv_bytes:,} {size.total_bytes:,} {size.largest_argument_bytes:,} {size.script_bytes:,}")
EOF
}

if [[ "$QUICK" == 1 ]]; then
  export HF_HUB_OFFLINE=1
  REPO_Q="alice/tunepack-smoke-00000000"
  SIZES=$(measure "$REPO_Q") || fail "the command was refused: ${SIZES:-it could not be built (above)}"
  read -r ARGV TOTAL LARGEST SCRIPT_BYTES <<<"$SIZES"
  DECODED=$("$PY" - "$WORK/$SCRIPT_NAME" "$REPO_Q" "$WORK/decoded.py" <<'EOF'
import hashlib
import shlex
import subprocess
import sys
from pathlib import Path

from mcp_server.jobs.transport import ARGV0, SCRIPT_IN_JOB, inline_command, script_from_command

script, repo, decoded = sys.argv[1:4]
text = Path(script).read_text(encoding="utf-8")
command = inline_command(text, [repo])
decode, sep, run = command[2].partition(" && ")
checks = [
    (command[:2] == ["bash", "-c"] and command[3:4] == [ARGV0] and len(command) > 4,
     "the command is not one `bash -c` line with the packed script as its arguments"),
    (run == f"exec uv run {SCRIPT_IN_JOB} {shlex.quote(repo)}", f"its second step is not `uv run`: {run[:80]}"),
]
# the job's first step, run as the job runs it (bash with the chunks as $1.., printf, python3), writing here
done = subprocess.run(["bash", "-c", decode.replace(SCRIPT_IN_JOB, shlex.quote(decoded)), *command[3:]],
                      capture_output=True)
got = Path(decoded).read_bytes() if Path(decoded).is_file() else b""
checks += [
    (done.returncode == 0, f"the decode step failed: {done.stderr.decode(errors='replace')[-200:]}"),
    (got == text.encode("utf-8"), "the decoded script differs from the rendered one"),
    (script_from_command(command) == text, "transport.script_from_command reads another script"),
    ("# /// script" in text and '"huggingface_hub' in text, "the script has no PEP 723 header with huggingface_hub"),
]
try:
    compile(got, SCRIPT_IN_JOB, "exec")
except SyntaxError as exc:
    checks.append((False, f"the decoded script does not compile: {exc}"))
bad = [why for ok, why in checks if not ok]
if bad:
    print("; ".join(bad))
    sys.exit(1)
print(f"sha256 {hashlib.sha256(got).hexdigest()[:12]}")
EOF
  ) || fail "the command does not round-trip: ${DECODED:-the check crashed (above)}"
  echo "hf_smoke: quick: script $SCRIPT_BYTES bytes -> command $ARGV bytes (largest argument $LARGEST of 65,536;" \
    "argv + env $TOTAL of 262,144)"
  echo "hf_smoke: quick: decoded by bash + python3 as the job does: identical to the rendered script ($DECODED)," \
    "compiles, runs as \`uv run /tmp/tunepack_job.py $REPO_Q\`"
  echo "hf_smoke: quick: check_job passes ($FLAVOR, timeout $TIMEOUT_S s, labels, secret HF_TOKEN); no job, no network"
  echo "hf_smoke: quick PASS"
  exit 0
fi

if [[ -z "${HF_TOKEN:-}" ]]; then
  echo "hf_smoke: needs HF_TOKEN exported (a Hugging Face token that can write repos and run Jobs); nothing was" \
    "run. Offline check: bash bench/hf_smoke.sh --quick"
  exit 2
fi
[[ -n "$TUNEPACK" ]] || fail "no tunepack CLI (.venv/bin/tunepack or tunepack on PATH): pip install -e ."

# Who the token is, and a fresh repo name that is not taken (so the cleanup can only delete what the job made).
FOUND=$("$PY" - <<'EOF'
import secrets
import sys

from mcp_server import hf_auth

try:
    api = hf_auth.api()
    repo = f"{api.whoami()['name']}/tunepack-smoke-{secrets.token_hex(4)}"
    taken = api.repo_exists(repo, repo_type="model")
except Exception as exc:
    print(f"the token could not be checked: {' '.join(str(exc).split())[:300]}")
    sys.exit(1)
if taken:
    print(f"{repo} exists already; run again")
    sys.exit(1)
print(repo)
EOF
) || fail "${FOUND:-the token could not be checked (above)}"
REPO=$FOUND

SIZES=$(measure "$REPO") || fail "the command was refused: ${SIZES:-it could not be built (above)}"
read -r ARGV _ _ _ <<<"$SIZES"
REPO_MAY_EXIST=1
"$TUNEPACK" jobs submit --backend hf --flavor "$FLAVOR" --timeout "$TIMEOUT_S" "${LABELS[@]}" \
  --project tunepack-smoke "$WORK/$SCRIPT_NAME" "$REPO" >"$WORK/submit.json" || fail "tunepack jobs submit failed (above)"
JOB_ID=$("$PY" -c 'import json,sys; print(json.load(open(sys.argv[1]))["id"])' "$WORK/submit.json") \
  || fail "tunepack jobs submit printed no job id"

# Follow it: its [tunepack] lines show on stderr as they come. --foreground: Ctrl-C reaches tunepack and this script.
set +e
timeout --foreground "$WAIT_S" "$TUNEPACK" jobs wait "$JOB_ID" --backend hf >"$WORK/wait.json"
WAITED=$?
set -e
[[ "$WAITED" != 124 ]] || fail "job $JOB_ID did not end within $WAIT_S s (it is canceled)"
[[ "$WAITED" == 0 ]] || fail "tunepack jobs wait $JOB_ID failed (exit $WAITED, above)"
JOB_ENDED=1
"$TUNEPACK" jobs logs "$JOB_ID" --backend hf >"$WORK/logs.txt" || fail "tunepack jobs logs $JOB_ID failed (above)"

# The job's outcome, then the Hub: the repo exists, is private, holds the file at the announced commit.
SUMMARY=$("$PY" - "$WORK/wait.json" "$WORK/logs.txt" "$REPO" "$FLAVOR" <<'EOF'
import json
import sys
from pathlib import Path

from mcp_server import hf_auth
from mcp_server.jobs.pricing import flavor_info


def fail(why: str) -> None:
    print(why)
    sys.exit(1)


view_path, logs_path, repo, flavor = sys.argv[1:5]
view = json.loads(Path(view_path).read_text())
job = view["job"]
if job["stage"] != "COMPLETED":
    fail(f"job {job['id']} ended {job['stage']}: {' '.join(str(view.get('error') or job.get('message')).split())}")
outcome = view.get("outcome") or {}
if outcome.get("hub_repo") != repo or not outcome.get("hub_commit"):
    fail(f"job {job['id']} completed without a TUNEPACK_DONE marker for {repo} (outcome: {outcome})")
commit = outcome["hub_commit"]
try:
    api = hf_auth.api()
    info = api.repo_info(repo, repo_type="model")
    files = api.list_repo_files(repo, repo_type="model", revision=commit)
    local = api.hf_hub_download(repo, "smoke.txt", revision=commit, cache_dir=str(Path(view_path).parent / "hub"))
    text = Path(local).read_text()
except Exception as exc:
    fail(f"{repo} could not be read on the Hub: {' '.join(str(exc).split())[:300]}")
problems = [why for ok, why in (
    (info.private is True, "it is not private"),
    ("smoke.txt" in files, "smoke.txt is missing"),
    (text == f"tunepack hf smoke check: {repo}\n", "smoke.txt holds something else"),
    (info.sha == commit, f"its head is {info.sha}, not the announced {commit}"),
) if not ok]
if problems:
    fail(f"{repo}: {'; '.join(problems)}")
ran = max(0.0, (job.get("ended_at") or 0) - (job.get("started_at") or 0))
cost = ran / 3600 * flavor_info("hf", flavor).price_per_hour_usd
lines = len(Path(logs_path).read_text().splitlines())
print(f"{job['id']}\t{ran:.0f}\t{cost:.4f}\t{lines}\t{commit}")
EOF
) || fail "${SUMMARY:-the outcome could not be checked (above)}"
IFS=$'\t' read -r _ RAN COST LINES COMMIT <<<"$SUMMARY"

# The success path deletes the repo before it reports (the trap does it on any other way out).
GONE=$(delete_repo strict 2>&1) || fail "$REPO was pushed but could not be deleted ($GONE): delete it by hand"
CLEANED=1

echo "hf_smoke: job $JOB_ID COMPLETED in $RAN s ($FLAVOR, \$$COST)"
echo "hf_smoke: command $ARGV bytes; logs followed: $LINES lines"
echo "hf_smoke: pushed $REPO (private) at $COMMIT; cleaned up"
echo "hf_smoke: PASS"
