# `make install`: the release build of `ledgerd`, copied onto the PATH (PREFIX/bin, ~/.local/bin by default; most
# desktop shells have it on the PATH; `make install PREFIX=/usr/local` as root for every user), its migrations beside
# it in PREFIX/share/ledgerd/sql (where the daemon looks, from the binary's real path). Then `ledgerd serve` starts in
# a second, with no `swift run` build check before it (6-21 s each). A cold release build is 29 CPU-minutes: 15-20
# minutes on two idle cores, over an hour on a busy machine (README, "Develop it"); later ones recompile what changed.
PREFIX ?= $(HOME)/.local
# The binary `install-files` copies; the newcomer's-path test puts its debug build here instead of the release one.
BINARY ?= .build/release/ledgerd

.PHONY: install install-files release uninstall

release:
	swift build -c release --product ledgerd

install: release
	@$(MAKE) --no-print-directory install-files PREFIX="$(PREFIX)" BINARY="$(BINARY)"

install-files:
	install -d "$(PREFIX)/bin" "$(PREFIX)/share/ledgerd/sql/acquirer"
	install -m 0755 "$(BINARY)" "$(PREFIX)/bin/ledgerd"
	install -m 0644 sql/*.sql "$(PREFIX)/share/ledgerd/sql/"
	install -m 0644 sql/acquirer/*.sql "$(PREFIX)/share/ledgerd/sql/acquirer/"
	@case ":$$PATH:" in *":$(PREFIX)/bin:"*) ;; *) echo "note: $(PREFIX)/bin is not on your PATH: export PATH=\"$(PREFIX)/bin:\$$PATH\"";; esac
	@echo "installed $(PREFIX)/bin/ledgerd"

uninstall:
	rm -f "$(PREFIX)/bin/ledgerd"
	rm -rf "$(PREFIX)/share/ledgerd"
