#!/usr/bin/env bash
# CPU cost of recording 10 s of 48 kHz stereo in each format recd writes (AAC-LC 128 kbit/s, Opus
# 32 kbit/s, FLAC), as ratios against peers run here with the same codec settings:
#   recd        the daemon recording from ALSA pulse:mic.monitor (start/stop through recctl)
#   ffmpeg-cli  ffmpeg recording the same ALSA device
#   floor       ffmpeg encoding the same 10 s from a raw file into MP4 (no capture, no pacing)
#   capture     arecord reading the same device for 10 s into /dev/null (what capture alone costs
#               through this device: recd pays it too, the encode-only floor does not)
#   start       the floor's command on 0.1 s of input: ffmpeg's own process start and set-up, which
#               the floor pays and recd (a running daemon) does not; floor − start is the encode alone
# CPU is perf's task-clock (every thread's run time, in nanoseconds, threads started later
# included): /proc's and time(1)'s 10 ms ticks made the ratios of these 0.1 s values move by ±0.1
# between runs.
# Each is run RUNS times (default 5) per format; medians, the ratios recd/floor and ffmpeg-cli/floor
# and the file size per minute are printed and written into BENCHMARKS.md (only this script's section
# is replaced). FORMATS (default "aac opus flac") picks the formats.
#
# The device is a private PulseAudio server (null sink "mic") behind ALSA's pulse plugin, fed a
# 440 Hz tone with paplay during every capture run, so the recorders encode real, paced signal.
#
# Environment: RECD_BIN, RECCTL_BIN (default .build/release/{recd,recctl}, built if missing),
#              RUNS (default 3), KEEP_WORK=1 keeps the temp dir (its path is printed).
set -euo pipefail
cd "$(dirname "$0")/.."
REPO=$(pwd)

SECTION_TITLE='## Recording CPU per format (10 s, 48 kHz stereo)'
SECONDS_RECORDED=10
RUNS=${RUNS:-5}
FORMATS=${FORMATS:-aac opus flac}
# The ffmpeg CLI's settings for what recd writes in each format (recd's defaults).
codec_args() {
    case "$1" in
        aac) echo "-c:a aac -b:a 128k" ;;
        opus) echo "-c:a libopus -b:a 32k -frame_duration 20" ;;
        flac) echo "-c:a flac -strict -2" ;;
        *) die "unknown format $1" ;;
    esac
}
GOAL=1.2

log() { printf '[record-cpu] %s\n' "$*" >&2; }
die() { printf '[record-cpu] error: %s\n' "$*" >&2; exit 1; }

# --- tools ------------------------------------------------------------------------------------
missing=()
need() { command -v "$1" >/dev/null 2>&1 || missing+=("$2"); }
need pulseaudio pulseaudio
need paplay pulseaudio-utils
need pactl pulseaudio-utils
need sox sox
need ffmpeg ffmpeg
need ffprobe ffmpeg
need perf linux-perf
if ! compgen -G '/usr/lib/*/alsa-lib/libasound_module_pcm_pulse.so' >/dev/null \
   && ! compgen -G '/usr/lib/alsa-lib/libasound_module_pcm_pulse.so' >/dev/null; then
    missing+=(libasound2-plugins)
fi
if ((${#missing[@]})); then
    die "missing tools; install them with: apt-get install $(printf '%s\n' "${missing[@]}" | sort -u | tr '\n' ' ')"
fi
ffmpeg -hide_banner -devices 2>/dev/null | grep -qw alsa || die "this ffmpeg has no ALSA input (-f alsa)"

# --- binaries ---------------------------------------------------------------------------------
if [[ -z "${RECD_BIN:-}" || -z "${RECCTL_BIN:-}" ]]; then
    RECD_BIN=${RECD_BIN:-.build/release/recd}
    RECCTL_BIN=${RECCTL_BIN:-.build/release/recctl}
    if [[ ! -x "$RECD_BIN" || ! -x "$RECCTL_BIN" ]]; then
        log "building release binaries"
        [[ -x "$RECD_BIN" ]] || swift build -c release >&2
        [[ -x "$RECCTL_BIN" ]] || swift build -c release --product recctl >&2
    fi
fi
[[ -x "$RECD_BIN" ]] || die "RECD_BIN=$RECD_BIN is not an executable"
[[ -x "$RECCTL_BIN" ]] || die "RECCTL_BIN=$RECCTL_BIN is not an executable"
RECD_SHOWN=${RECD_BIN#"$REPO/"}
RECD_BIN=$(realpath "$RECD_BIN"); RECCTL_BIN=$(realpath "$RECCTL_BIN")
case "$RECD_BIN" in
    */debug/*) BUILD_KIND=debug ;;
    */release/*) BUILD_KIND=release ;;
    */usr/bin/*) BUILD_KIND=packaged ;;   # the .deb's, unpacked (dpkg-deb -x) or installed
    *) BUILD_KIND=unknown ;;
esac

# --- private environment ----------------------------------------------------------------------
WORK=$(mktemp -d -t record-cpu.XXXXXX)
RECD_PID=""; PAPLAY_PID=""
cleanup() {
    set +e
    [[ -n "$PAPLAY_PID" ]] && kill "$PAPLAY_PID" 2>/dev/null && wait "$PAPLAY_PID" 2>/dev/null
    [[ -n "$RECD_PID" ]] && kill "$RECD_PID" 2>/dev/null && wait "$RECD_PID" 2>/dev/null
    if [[ -f "$XDG_RUNTIME_DIR/pulse/pid" ]]; then
        kill "$(cat "$XDG_RUNTIME_DIR/pulse/pid")" 2>/dev/null
    fi
    if [[ "${KEEP_WORK:-0}" == 1 ]]; then log "work files kept in $WORK"; else rm -rf "$WORK"; fi
}
export XDG_RUNTIME_DIR="$WORK/xdg"
trap cleanup EXIT
trap 'exit 130' INT TERM
mkdir -p "$XDG_RUNTIME_DIR" "$WORK/home/.config/pulse"; chmod 700 "$XDG_RUNTIME_DIR"
# A private HOME keeps PulseAudio's cookie and state out of the real one; the server is named
# explicitly and autospawn is off, so no client can reach (or start) any other PulseAudio.
export HOME="$WORK/home"
export PULSE_SERVER="unix:$XDG_RUNTIME_DIR/pulse/native"
echo 'autospawn = no' > "$HOME/.config/pulse/client.conf"
cat > "$XDG_RUNTIME_DIR/pa.pa" <<'EOF'
load-module module-null-sink sink_name=mic rate=48000 channels=2
load-module module-native-protocol-unix
EOF
pulseaudio -n -F "$XDG_RUNTIME_DIR/pa.pa" --exit-idle-time=-1 --daemonize=yes --use-pid-file=yes \
    --log-target=file:"$WORK/pulseaudio.log" 2>>"$WORK/pulseaudio.log" \
    || die "pulseaudio did not start; see $WORK/pulseaudio.log"
for _ in $(seq 50); do pactl info >/dev/null 2>&1 && break; sleep 0.1; done
pactl info >/dev/null 2>&1 || die "pulseaudio is not answering"

# --- signal -----------------------------------------------------------------------------------
sox -n -r 48000 -c 2 -b 16 "$WORK/tone.wav" synth $((SECONDS_RECORDED + 2)) sine 440 vol 0.5
sox -n -r 48000 -c 2 -b 16 -e signed-integer -t raw "$WORK/tone.raw" synth "$SECONDS_RECORDED" sine 440 vol 0.5
sox -n -r 48000 -c 2 -b 16 -e signed-integer -t raw "$WORK/short.raw" synth 0.1 sine 440 vol 0.5

start_tone() {
    paplay -d mic "$WORK/tone.wav" & PAPLAY_PID=$!
    sleep 0.3   # the stream is running before the recorder opens the monitor
}
stop_tone() {
    [[ -n "$PAPLAY_PID" ]] || return 0
    kill "$PAPLAY_PID" 2>/dev/null || true; wait "$PAPLAY_PID" 2>/dev/null || true; PAPLAY_PID=""
}

# perf stat's CSV (-x,) -> task-clock in seconds, three decimals. task-clock counts the time every
# thread of the process spent on a CPU (user and kernel), exactly rather than in clock ticks.
task_clock() { awk -F, '$3 == "task-clock" { printf "%.3f\n", $1 / 1000 }' "$1"; }
# Runs a command under perf stat: $1 = output file for perf's counts, then the command.
timed() { local out=$1; shift; perf stat -x, -e task-clock -o "$out" -- "$@"; }
# duration (s) and max volume (dB) of a recorded file, for the log: catches silent or short takes
probe() {
    local d v
    d=$(ffprobe -v error -show_entries format=duration -of csv=p=0 "$1" 2>/dev/null || echo "?")
    v=$(ffmpeg -nostdin -hide_banner -i "$1" -af volumedetect -f null - 2>&1 | sed -n 's/.*max_volume: //p')
    printf '%.2f s, max %s' "$d" "${v:-?}"
}
# MB per minute of a file: its size over its duration.
per_minute() {
    local d size
    d=$(ffprobe -v error -show_entries format=duration -of csv=p=0 "$1" 2>/dev/null || echo 0)
    size=$(stat -c %s "$1" 2>/dev/null || echo 0)
    awk -v s="$size" -v d="$d" 'BEGIN { if (d > 0) printf "%.2f", s / d * 60 / 1e6; else print "?" }'
}
median() { printf '%s\n' "$@" | sort -g | awk '{ v[NR] = $1 } END { print v[int((NR + 1) / 2)] }'; }

# --- 1. recd ----------------------------------------------------------------------------------
# Each run_* sets RESULT (CPU seconds) and logs to stderr; they run in this shell, not in $(...),
# so the PIDs they start stay visible to the cleanup trap.
# One take of SECONDS_RECORDED under perf: $1 = perf's output file, $2 = format, $3 = the PIDs to
# count (comma-separated). perf stops counting at SIGINT, just after record stop has replied
# (finalization included). Sets REPLY_JSON (the stop reply).
record_take() {
    local perf_pid
    start_tone
    perf stat -x, -e task-clock -p "$3" -o "$1" & perf_pid=$!
    sleep 0.2   # perf is attached
    "$RECCTL_BIN" --socket "$sock" record start --format "$2" >/dev/null
    sleep "$SECONDS_RECORDED"
    REPLY_JSON=$("$RECCTL_BIN" --socket "$sock" --json record stop)
    kill -INT "$perf_pid"; wait "$perf_pid" 2>/dev/null || true
    stop_tone
}
run_recd() {   # $1 = run number, $2 = format
    local dir="$WORK/recd$1$2" sock="$WORK/recd$1$2.sock"
    mkdir -p "$dir"
    "$RECD_BIN" --data-dir "$dir" --socket "$sock" --capture-device pulse:mic.monitor \
        --channels 2 --bitrate 128000 --opus-bitrate 32000 >"$WORK/recd$1$2.log" 2>&1 & RECD_PID=$!
    for _ in $(seq 100); do
        "$RECCTL_BIN" --socket "$sock" status >/dev/null 2>&1 && break
        kill -0 "$RECD_PID" 2>/dev/null || die "recd exited at start-up; see $WORK/recd$1.log"
        sleep 0.1
    done
    "$RECCTL_BIN" --socket "$sock" status >/dev/null || die "recd does not answer on $sock"
    sleep 0.5   # let start-up settle
    # Two takes per daemon. recd encodes in a media worker (a child process, `recd --media-worker`)
    # that it starts at the first take and keeps idle for the next. perf counts the processes it
    # is attached to and every process they start after that (a worker started during a take is
    # counted: perf's counters are inherited across fork and exec).
    # Take 1 ("cold"): recd alone is attached; the take starts the worker, so its start is counted.
    record_take "$WORK/recd$1$2.cold.perf" "$2" "$RECD_PID"
    COLD_RESULT=$(task_clock "$WORK/recd$1$2.cold.perf")
    # Take 2 ("warm", the steady state): recd and its idle worker are attached.
    local workers
    workers=$(cat /proc/"$RECD_PID"/task/*/children 2>/dev/null | tr -s ' \n' ',' | sed 's/,$//')
    [[ -n "$workers" ]] || die "recd kept no media worker after its first take; see $WORK/recd$1$2.log"
    record_take "$WORK/recd$1$2.perf" "$2" "$RECD_PID,$workers"
    kill "$RECD_PID"; wait "$RECD_PID" 2>/dev/null || true; RECD_PID=""
    local file overruns
    file=$(find "$dir" \( -name '*.m4a' -o -name '*.mp4' \) -printf '%T@ %p\n' | sort -n | tail -n 1 | cut -d' ' -f2-)   # take 2's
    overruns=$(grep -o '"overruns" *: *[0-9]*' <<<"$REPLY_JSON" | grep -o '[0-9]*$' || echo "?")
    RESULT=$(task_clock "$WORK/recd$1$2.perf")
    [[ -n "$RESULT" ]] || die "perf stat counted nothing for recd; see $WORK/recd$1$2.perf"
    PER_MINUTE=$(per_minute "$file")
    log "recd run $1 ($2): $RESULT s CPU (first take, starting its worker: $COLD_RESULT s); file: $( [[ -n "$file" ]] && probe "$file" || echo missing ); overruns: ${overruns:-?}"
}

# --- 2. ffmpeg CLI from ALSA ------------------------------------------------------------------
run_ffmpeg_cli() {   # $1 = run number, $2 = format
    local out="$WORK/cli$1$2.m4a"
    start_tone
    # shellcheck disable=SC2046
    timed "$WORK/cli$1$2.perf" \
        ffmpeg -nostdin -f alsa -channels 2 -sample_rate 48000 -i pulse:mic.monitor \
        -t "$SECONDS_RECORDED" $(codec_args "$2") -f mp4 -y "$out" >"$WORK/cli$1$2.log" 2>&1 \
        || die "ffmpeg capture failed; see $WORK/cli$1$2.log"
    stop_tone
    RESULT=$(task_clock "$WORK/cli$1$2.perf")
    log "ffmpeg-cli run $1 ($2): $RESULT s CPU; file: $(probe "$out")"
}

# --- 3. encode-only floor, and the floor's own start -------------------------------------------
# ffmpeg encoding raw input into MP4 with recd's settings; sets RESULT, and the file as $ENCODED.
encode_raw() {   # $1 = name, $2 = format, $3 = raw input
    ENCODED="$WORK/$1.m4a"
    # shellcheck disable=SC2046
    timed "$WORK/$1.perf" \
        ffmpeg -nostdin -f s16le -ar 48000 -ac 2 -i "$3" \
        $(codec_args "$2") -f mp4 -y "$ENCODED" >"$WORK/$1.log" 2>&1 \
        || die "ffmpeg encode failed; see $WORK/$1.log"
    RESULT=$(task_clock "$WORK/$1.perf")
}
run_floor() {   # $1 = run number, $2 = format
    encode_raw "floor$1$2" "$2" "$WORK/tone.raw"
    PER_MINUTE=$(per_minute "$ENCODED")
    log "floor run $1 ($2): $RESULT s CPU; file: $(probe "$ENCODED")"
}
# The same command on 0.1 s of input: ffmpeg's own start and set-up.
run_start() {   # $1 = run number, $2 = format
    encode_raw "start$1$2" "$2" "$WORK/short.raw"
}

# --- 4. capture alone -------------------------------------------------------------------------
run_capture() {
    start_tone
    timed "$WORK/cap$1.perf" \
        arecord -q -D pulse:mic.monitor -f S16_LE -r 48000 -c 2 --period-size=1920 --buffer-size=24000 \
        -d "$SECONDS_RECORDED" -t raw /dev/null >"$WORK/cap$1.log" 2>&1 \
        || die "arecord failed; see $WORK/cap$1.log"
    stop_tone
    RESULT=$(task_clock "$WORK/cap$1.perf")
    log "capture run $1: $RESULT s CPU"
}

log "recd: $RECD_SHOWN ($BUILD_KIND); formats: $FORMATS; $RUNS runs each"
declare -A recd_t cold_t cli_t floor_t start_t recd_size floor_size
cap_t=()
for i in $(seq "$RUNS"); do   # interleaved, so drift in machine load touches all alike
    for f in $FORMATS; do
        run_recd "$i" "$f"; recd_t[$f]+="$RESULT "; recd_size[$f]+="$PER_MINUTE "; cold_t[$f]+="$COLD_RESULT "
        run_ffmpeg_cli "$i" "$f"; cli_t[$f]+="$RESULT "
        run_floor "$i" "$f"; floor_t[$f]+="$RESULT "; floor_size[$f]+="$PER_MINUTE "
        run_start "$i" "$f"; start_t[$f]+="$RESULT "
    done
    run_capture "$i"; cap_t+=("$RESULT")
done

ratio() { awk -v a="$1" -v b="$2" 'BEGIN { if (b > 0) printf "%.2f×", a / b; else print "n/a" }'; }
cap_m=$(median "${cap_t[@]}")
cpu_model=$(sed -n 's/^model name[[:space:]]*: //p' /proc/cpuinfo | head -n 1)
[[ -n "$cpu_model" ]] || cpu_model=$(uname -m)
join() { local IFS=' '; echo "$*"; }

table="| Format | recd CPU s (median of $RUNS) | recd's first take, starting its worker | floor CPU s | recd vs floor | recd vs floor + capture | ffmpeg's start (floor on 0.1 s) | recd vs encode alone + capture | ffmpeg CLI from ALSA | MB per minute (recd / ffmpeg) |
|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|"
goal_line="Goal: recd ≤ ${GOAL}× the floor (ffmpeg encoding the same raw input with the same settings):"
for f in $FORMATS; do
    # shellcheck disable=SC2086
    { r_m=$(median ${recd_t[$f]}); fl_m=$(median ${floor_t[$f]}); c_m=$(median ${cli_t[$f]});
      rs=$(median ${recd_size[$f]}); fs=$(median ${floor_size[$f]}); st_m=$(median ${start_t[$f]});
      cold_m=$(median ${cold_t[$f]}); }
    both=$(awk -v a="$fl_m" -v b="$cap_m" 'BEGIN { printf "%.3f", a + b }')
    alone=$(awk -v a="$fl_m" -v s="$st_m" -v b="$cap_m" 'BEGIN { v = a - s; if (v < 0.001) v = 0.001; printf "%.3f", v + b }')
    verdict=$(awk -v a="$r_m" -v b="$fl_m" -v g="$GOAL" 'BEGIN { print (b > 0 && a / b <= g) ? "met" : "not met" }')
    table+="
| $f | $r_m ($(join ${recd_t[$f]})) | $cold_m ($(ratio "$cold_m" "$fl_m") of the floor) | $fl_m ($(join ${floor_t[$f]})) | $(ratio "$r_m" "$fl_m") | $(ratio "$r_m" "$both") | $st_m | $(ratio "$r_m" "$alone") | $c_m ($(ratio "$c_m" "$fl_m")) | $rs / $fs |"
    goal_line+=" $f ${verdict} ($(ratio "$r_m" "$fl_m"));"
done
goal_line="${goal_line%;}. Capture alone (arecord, same device, to /dev/null): $cap_m s ($(join "${cap_t[@]}"))."

section=$(cat <<EOF
$SECTION_TITLE

Written by \`bench/record-cpu.sh\` on $(date -u +%F) — $(nproc) CPUs, $cpu_model; recd: $BUILD_KIND build (\`$RECD_SHOWN\`).

CPU seconds to record ${SECONDS_RECORDED} s of 48 kHz stereo: AAC-LC at 128 kbit/s, Opus (libopus) at
32 kbit/s VBR with 20 ms frames, FLAC at compression level 5, each into MP4. CPU is perf's
\`task-clock\` (the time every thread spent on a CPU, user and kernel, counted exactly rather than in
10 ms ticks). recd: \`perf stat -p\` attached before \`record start\` and stopped just after \`record stop\`
returns (the recording's threads, finalization included; daemon start-up excluded). recd encodes in
a media worker, a child process it starts at the first take and keeps idle for the next (30 s by
default), so each daemon makes two takes: the first with recd alone attached (the worker it starts
is counted, start included: perf's counters follow fork and exec), the second — the figure compared
— with recd and its idle worker attached. ffmpeg and arecord: \`perf stat\` of the whole process.
Capture source: a private PulseAudio null sink playing a 440 Hz tone, through ALSA's pulse plugin.
The floor: the ffmpeg CLI encoding the same ${SECONDS_RECORDED} s from a raw file with the same settings
(\`$(codec_args aac)\`, \`$(codec_args opus)\`, \`$(codec_args flac)\`, \`-f mp4\`). Sizes: MB per minute of the
finished file (a pure tone: speech compresses FLAC less and Opus alike).
The floor is a whole process: most of it is ffmpeg's own start (loading its libraries, set-up), which
a running daemon does not pay per recording. "ffmpeg's start" is the floor's command on 0.1 s of
input; "encode alone + capture" is floor − start + capture alone: the per-recording work both must
do, and the stricter comparison.

$table

$goal_line
EOF
)

printf '\n%s\n\n%s\n' "$table" "$goal_line"

# --- BENCHMARKS.md: replace (or append) this section only ---------------------------------------
BENCH=BENCHMARKS.md
[[ -f "$BENCH" ]] || printf '# recd benchmarks\n' > "$BENCH"
printf '%s\n' "$section" > "$WORK/section.md"
awk -v title="$SECTION_TITLE" -v secfile="$WORK/section.md" '
    function emit(   line) { while ((getline line < secfile) > 0) print line; close(secfile); done = 1 }
    $0 == title { if (!done) emit(); skipping = 1; next }
    skipping && /^## / { skipping = 0; print "" }
    !skipping { print; last = $0 }
    END { if (!done) { if (last != "") print ""; emit() } }
' "$BENCH" > "$WORK/BENCHMARKS.md"
cp "$WORK/BENCHMARKS.md" "$BENCH"
log "wrote the section to $REPO/$BENCH"
