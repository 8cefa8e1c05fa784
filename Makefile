# recd — the two set-up commands are `make run` and `make test` (see README.md).
PREFIX ?= /usr/local
DESTDIR ?=
SWIFT ?= swift
# Extra flags for `swift build` (a release build links the Swift runtime into recd, recctl and
# recd-media: Package.swift's staticRuntime; why: docs/design.md).
SWIFT_BUILD_FLAGS ?=
# What `build` and `install` compile: release (`make test` builds and tests it, and its package test
# packs it: scripts/build-deb.sh).
CONFIGURATION ?= release
RELEASE_DIR = $(shell $(SWIFT) build -c $(CONFIGURATION) $(SWIFT_BUILD_FLAGS) --show-bin-path 2>/dev/null)

.PHONY: run test deps test-deps bench-deps build debug install install-transcriber deb deb-test bench clean

## Install what is missing, build a release, run the daemon in the foreground.
run: deps build
	$(RELEASE_DIR)/recd $(RECD_ARGS)

## Install what is missing (test tools too), build, run every test (unit + integration).
test: test-deps
	SWIFT=$(SWIFT) scripts/run-tests.sh

deps:
	scripts/install-deps.sh

test-deps:
	scripts/install-deps.sh --test

bench-deps:
	scripts/install-deps.sh --bench

## Release binaries: recd, recctl and recd-media (the media worker recd starts from its own directory).
build:
	$(SWIFT) build -c $(CONFIGURATION) $(SWIFT_BUILD_FLAGS) --product recd
	$(SWIFT) build -c $(CONFIGURATION) $(SWIFT_BUILD_FLAGS) --product recctl
	$(SWIFT) build -c $(CONFIGURATION) $(SWIFT_BUILD_FLAGS) --product recd-media

debug:
	$(SWIFT) build

## Binaries (recd-media beside recd: recd starts it from its own directory), units (user and system), sysusers entry, shell completions and the man pages of recctl and recd (swift-argument-parser's generate-manual, run on the built binaries).
install: build
	install -d $(DESTDIR)$(PREFIX)/bin $(DESTDIR)$(PREFIX)/share/recd $(DESTDIR)$(PREFIX)/lib/systemd/user \
		$(DESTDIR)$(PREFIX)/lib/systemd/system $(DESTDIR)$(PREFIX)/lib/sysusers.d \
		$(DESTDIR)$(PREFIX)/share/bash-completion/completions $(DESTDIR)$(PREFIX)/share/zsh/site-functions \
		$(DESTDIR)$(PREFIX)/share/fish/vendor_completions.d $(DESTDIR)$(PREFIX)/share/man/man1
	install -m 0755 $(RELEASE_DIR)/recd $(RELEASE_DIR)/recctl $(RELEASE_DIR)/recd-media $(DESTDIR)$(PREFIX)/bin/
	install -m 0644 Sources/Server/openapi.yaml $(DESTDIR)$(PREFIX)/share/recd/
	install -d $(DESTDIR)$(PREFIX)/share/recd/webapp
	install -m 0644 Sources/Server/webapp/* $(DESTDIR)$(PREFIX)/share/recd/webapp/
	sed -e 's|@BINDIR@|$(PREFIX)/bin|g' -e 's|@DATADIR@|$(PREFIX)/share|g' systemd/recd.service \
		> $(DESTDIR)$(PREFIX)/lib/systemd/user/recd.service
	sed -e 's|@BINDIR@|$(PREFIX)/bin|g' -e 's|@DATADIR@|$(PREFIX)/share|g' systemd/system/recd.service \
		> $(DESTDIR)$(PREFIX)/lib/systemd/system/recd.service
	install -m 0644 systemd/recd.socket $(DESTDIR)$(PREFIX)/lib/systemd/user/recd.socket
	install -m 0644 systemd/system/recd.socket $(DESTDIR)$(PREFIX)/lib/systemd/system/recd.socket
	install -m 0644 systemd/system/recd.sysusers $(DESTDIR)$(PREFIX)/lib/sysusers.d/recd.conf
	$(RELEASE_DIR)/recctl --generate-completion-script bash > $(DESTDIR)$(PREFIX)/share/bash-completion/completions/recctl
	$(RELEASE_DIR)/recctl --generate-completion-script zsh > $(DESTDIR)$(PREFIX)/share/zsh/site-functions/_recctl
	$(RELEASE_DIR)/recctl --generate-completion-script fish > $(DESTDIR)$(PREFIX)/share/fish/vendor_completions.d/recctl.fish
	$(RELEASE_DIR)/recd --generate-completion-script bash > $(DESTDIR)$(PREFIX)/share/bash-completion/completions/recd
	$(SWIFT) build -c $(CONFIGURATION) $(SWIFT_BUILD_FLAGS) --product generate-manual
	$(RELEASE_DIR)/generate-manual $(RELEASE_DIR)/recctl --output-directory $(DESTDIR)$(PREFIX)/share/man/man1
	$(RELEASE_DIR)/generate-manual $(RELEASE_DIR)/recd --output-directory $(DESTDIR)$(PREFIX)/share/man/man1

## recd_VERSION_amd64.deb: a release build with the Swift runtime linked in, installed as `make install`
## would into /usr, packed with dpkg-deb (scripts/build-deb.sh; the package's files are in packaging/debian).
deb:
	scripts/install-deps.sh --deb
	scripts/build-deb.sh

## The transcriber (faster-whisper and Whisper base, about 600 MB) where an installed recd looks for it.
install-transcriber:
	scripts/install-deps.sh --transcribe $(DESTDIR)$(PREFIX)/lib/recd/transcribe

## The package in a clean Debian 12 root (mmdebstrap): installs with apt, records, lists (scripts/deb-test.sh).
deb-test: deb
	scripts/deb-test.sh

## Benchmarks against peers run in the same scripts; they write BENCHMARKS.md.
bench: bench-deps build
	bench/record-cpu.sh
	bench/catalog-ops.py
	bench/playback.py
	bench/metering.py
	bench/video.py
	bench/webapp.py
	bench/editing.py
	bench/enhance.py
	bench/client-startup.py
	bench/idle.py
	bench/first-word.py
	bench/transcribe.py
	RECD_BIN_DIR=$(RELEASE_DIR) bench/power-cut.py

clean:
	rm -rf .build .build-deb
