#!/usr/bin/env bash
# Builds recd_VERSION_amd64.deb (`make deb`): the release build, whose executables link the Swift
# runtime in (Package.swift's `staticRuntime`: no Swift toolchain needed where it runs; why not a
# private copy of the runtime's .so files: docs/design.md), installed by `make install` into a staging
# /usr, then the package's own files (packaging/debian), Depends computed by dpkg-shlibdeps, packed by
# dpkg-deb. Writes the .deb into the repository's root (or RECD_DEB_OUT) and prints its path last.
# The suite's release build (`make test`) is this build: after it, only the man-page generator is compiled here.
set -euo pipefail
umask 022

root="$(cd "$(dirname "$0")/.." && pwd)"
cd "$root"
out="${RECD_DEB_OUT:-$root}"

for tool in dpkg-deb dpkg-shlibdeps; do
  command -v "$tool" >/dev/null || {
    echo "build-deb: $tool is missing: apt-get install dpkg-dev (or scripts/install-deps.sh --test)" >&2
    exit 1
  }
done

stage="$root/.build/deb/stage"
rm -rf "$root/.build/deb"
mkdir -p "$stage/DEBIAN"

# Every file `make install` puts under a prefix, here /usr (Debian's paths), from the release build.
# RECD_DEB_NICE=N runs at that niceness (the suite's PackageTests: packing shares the machine with the
# other half's timing-sensitive tests).
${RECD_DEB_NICE:+nice -n "$RECD_DEB_NICE"} make --no-print-directory install PREFIX=/usr DESTDIR="$stage" CONFIGURATION=release
for p in recd recctl recd-media; do
  if readelf -d "$stage/usr/bin/$p" | grep -E 'NEEDED.*(libswift|libFoundation|libdispatch|libBlocksRuntime)'; then
    echo "build-deb: $p still loads the Swift runtime's shared libraries (above): not linked statically (Package.swift: staticRuntime)" >&2
    exit 1
  fi
done

# The version from its one place, Sources/RecdAPI/Version.swift, as the built client prints it.
version="$("$stage/usr/bin/recctl" --version)"
[[ "$version" =~ ^[0-9][0-9A-Za-z.+~-]*$ ]] || {
  echo "build-deb: recctl --version printed '$version', which is no Debian version (Sources/RecdAPI/Version.swift)" >&2
  exit 1
}

# Debian's layout: stripped binaries (their debug symbols are not shipped), compressed man pages,
# the copyright and changelog in /usr/share/doc/recd.
strip --strip-unneeded --remove-section=.comment --remove-section=.note "$stage"/usr/bin/recd \
  "$stage"/usr/bin/recctl "$stage"/usr/bin/recd-media
gzip -9n "$stage"/usr/share/man/man1/*.1
# bash-completion sources its files: the generator's #! line makes lintian think they are run.
sed -i '1{/^#!/d}' "$stage"/usr/share/bash-completion/completions/*
# Debian's zsh looks for packaged completions in vendor-completions (site-functions is /usr/local's).
install -d "$stage/usr/share/zsh/vendor-completions"
mv "$stage/usr/share/zsh/site-functions/_recctl" "$stage/usr/share/zsh/vendor-completions/"
rmdir "$stage/usr/share/zsh/site-functions"
install -d "$stage/usr/share/doc/recd"
install -m 0644 packaging/debian/copyright "$stage/usr/share/doc/recd/copyright"
date_r="$(date -R -u -d "@$(git log -1 --format=%ct 2>/dev/null || date +%s)")"
printf 'recd (%s) unstable; urgency=medium\n\n  * Built from %s (see the project'"'"'s git history).\n\n -- %s  %s\n' \
  "$version" "$(git rev-parse --short HEAD 2>/dev/null || echo 'a source tree without git')" \
  "$(sed -n 's/^Maintainer: //p' packaging/debian/control.in)" "$date_r" \
  | gzip -9n > "$stage/usr/share/doc/recd/changelog.gz"   # a native package (no Debian revision)
for f in postinst prerm postrm; do install -m 0755 "packaging/debian/$f" "$stage/DEBIAN/$f"; done

# Depends: the shared libraries the binaries load, through the shlibs/symbols files of the packages
# that provide them. dpkg-shlibdeps wants a debian/control beside it, so it runs in a scratch tree.
shlib="$root/.build/deb/shlibdeps"
mkdir -p "$shlib/debian"
printf 'Source: recd\n\nPackage: recd\nArchitecture: amd64\n' > "$shlib/debian/control"
shlibs="$(cd "$shlib" && dpkg-shlibdeps -O "$stage"/usr/bin/recd "$stage"/usr/bin/recctl "$stage"/usr/bin/recd-media)"
depends="${shlibs#shlibs:Depends=}"
# libavfilter is loaded by recd-media only when a copy is enhanced (dlopen, not linked, so the
# shlibs above cannot name it): the package of the major version its headers were.
depends="$depends, libavfilter$(pkg-config --modversion libavfilter | cut -d. -f1)"
# postinst runs systemd-sysusers: systemd has it, or the standalone package on a machine without systemd.
depends="$depends, systemd | systemd-standalone-sysusers"

installed_size="$(du -sk --exclude=DEBIAN "$stage" | cut -f1)"
sed -e "s#@VERSION@#$version#" -e "s#@DEPENDS@#$depends#" -e "s#@INSTALLED_SIZE@#$installed_size#" \
  packaging/debian/control.in > "$stage/DEBIAN/control"

deb="$out/recd_${version}_amd64.deb"
dpkg-deb --root-owner-group --build -Zxz "$stage" "$deb" >/dev/null
echo "build-deb: Depends: $depends"
echo "build-deb: $(du -k "$deb" | cut -f1) KiB, installed $installed_size KiB"
echo "$deb"
