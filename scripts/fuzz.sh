#!/usr/bin/env bash
# Fuzzes the live daemon against its OpenAPI document with schemathesis: every check, every phase
# (examples, coverage, fuzzing, stateful). A real recd on a private PulseAudio server (a tone playing
# into its microphone), reached over TCP through socat, since schemathesis speaks TCP and recd a Unix
# socket. The suite runs a short pass (Tests/RecdIntegrationTests/FuzzTests.swift); run long ones here:
#
#   scripts/fuzz.sh                        # seed 1 and a random seed, 25 examples per operation
#   scripts/fuzz.sh --examples 500 --seed random --max-steps 100
#   scripts/fuzz.sh --seed 123456          # replay a seed a failure printed
#   scripts/fuzz.sh -- --mode negative --include-operation-id editRecording   # one operation's refusals
#
# Options: --recd PATH (default: the debug build's), --examples N, --seed N|random (repeatable; default
# "1 random"), --max-steps N (stateful scenario length), --keep (leave the work directory for reading).
# Arguments after `--` go to `schemathesis run` as they are.
# Needs scripts/install-deps.sh --test (socat, pulseaudio, sox, and schemathesis in .build/fuzz-venv).
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
recd="$root/.build/debug/recd"
examples=25
seeds=()
max_steps=30
keep=0
while (($#)); do
  case "$1" in
    --recd) recd="$2"; shift 2 ;;
    --examples) examples="$2"; shift 2 ;;
    --seed) seeds+=("$2"); shift 2 ;;
    --max-steps) max_steps="$2"; shift 2 ;;
    --keep) keep=1; shift ;;
    --) shift; break ;;
    *) echo "fuzz: unknown option $1 (see the comment at the top of $0)" >&2; exit 2 ;;
  esac
done
((${#seeds[@]})) || seeds=(1 random)
st="$root/.build/fuzz-venv/bin/schemathesis"
for tool in "$st" "$recd"; do
  [[ -x "$tool" ]] || { echo "fuzz: $tool is missing (scripts/install-deps.sh --test; swift build)" >&2; exit 2; }
done
for tool in socat pulseaudio paplay sox; do
  command -v "$tool" >/dev/null || { echo "fuzz: $tool is missing (scripts/install-deps.sh --test)" >&2; exit 2; }
done

work="$(mktemp -d /tmp/recd-fuzz.XXXXXX)"
export XDG_RUNTIME_DIR="$work/run"
mkdir -m 0700 "$XDG_RUNTIME_DIR"
export PULSE_SERVER="unix:$XDG_RUNTIME_DIR/pulse/native"
pids=()
cleanup() {
  for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done
  wait 2>/dev/null || true
  [[ -f "$XDG_RUNTIME_DIR/pulse/pid" ]] && kill "$(cat "$XDG_RUNTIME_DIR/pulse/pid")" 2>/dev/null || true
  if ((keep)); then echo "fuzz: work directory kept: $work"; else rm -rf "$work"; fi
}
trap cleanup EXIT

cat > "$work/pa.pa" <<'EOF'
load-module module-null-sink sink_name=mic rate=48000 channels=1
load-module module-null-sink sink_name=speaker rate=48000 channels=2
load-module module-native-protocol-unix
EOF
pulseaudio -n -F "$work/pa.pa" --exit-idle-time=-1 --daemonize=yes --use-pid-file=yes 2>/dev/null
for _ in $(seq 100); do pactl info >/dev/null 2>&1 && break; sleep 0.05; done
# A tone into the microphone with a short latency: a recording's start then takes milliseconds, not
# the idle null sink's two seconds (shared/TESTING-AUDIO.md).
sox -n -r 48000 -c 1 -b 16 "$work/tone.wav" synth 3600 sine 440 vol 0.3
paplay --latency-msec=10 -d mic "$work/tone.wav" & pids+=($!)

sock="$XDG_RUNTIME_DIR/recd/recd.sock"
"$recd" --data-dir "$work/data" --socket "$sock" --capture-device pulse:mic.monitor \
  --playback-device pulse:speaker > "$work/recd.log" 2>&1 & recd_pid=$!; pids+=($recd_pid)
for _ in $(seq 200); do [[ -S "$sock" ]] && break; sleep 0.05; done
[[ -S "$sock" ]] || { echo "fuzz: recd did not start:"; cat "$work/recd.log"; exit 1; }

# The checked-in settings, with this run's scenario length.
{ cat "$root/Tests/fuzz/schemathesis.toml"; printf '\n[phases.stateful]\nmax-steps = %d\n' "$max_steps"; } > "$work/schemathesis.toml"

port="$(python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')"
socat "TCP-LISTEN:$port,bind=127.0.0.1,fork,reuseaddr" "UNIX-CONNECT:$sock" & pids+=($!)
for _ in $(seq 100); do curl -sf "http://127.0.0.1:$port/v1/status" >/dev/null && break; sleep 0.05; done

status=0
for seed in "${seeds[@]}"; do
  [[ "$seed" == random ]] && seed=$((RANDOM * 32768 + RANDOM))
  echo "fuzz: seed $seed, $examples examples per operation, stateful scenarios of up to $max_steps steps"
  # What is left recording, playing or listening by one pass must not turn the next one's starts into 409s.
  curl -s -X POST -d '{"then": "discard"}' "http://127.0.0.1:$port/v1/record/stop" >/dev/null || true
  curl -s -X POST "http://127.0.0.1:$port/v1/playback/stop" >/dev/null || true
  curl -s -X DELETE "http://127.0.0.1:$port/v1/listen" >/dev/null || true
  out="$work/schemathesis-$seed.txt"
  set +e
  # From the work directory: schemathesis keeps its cache (.schemathesis/) in the current one.
  (cd "$work" && PYTHONPATH="$root/Tests/fuzz" SCHEMATHESIS_HOOKS=recd_formats \
    "$st" --config-file "$work/schemathesis.toml" run "$root/Sources/Server/openapi.yaml" \
    --url "http://127.0.0.1:$port" --checks all --seed "$seed" --max-examples "$examples" \
    --max-failures 50 --no-color "$@" > "$out" 2>&1)
  rc=$?
  set -e
  if ((rc == 0)); then
    grep -v '^\s*$' "$out" | tail -n 12
  else
    cat "$out"
    echo "fuzz: seed $seed FAILED (exit $rc; replay: scripts/fuzz.sh --seed $seed --examples $examples)"
    status=1
  fi
  kill -0 "$recd_pid" 2>/dev/null || { echo "fuzz: recd died:"; tail -n 50 "$work/recd.log"; exit 1; }
done
exit $status
