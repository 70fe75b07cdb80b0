# `make install`: the release build of `ledgerd`, copied onto the PATH (PREFIX/bin, ~/.local/bin by default; most
# desktop shells have it on the PATH; `make install PREFIX=/usr/local` as root for every user). Then `ledgerd serve`
# starts in a second, with no `swift run` build check before it (6-21 s each). A cold release build takes about
# 15 minutes on two cores; later ones recompile what changed.
PREFIX ?= $(HOME)/.local

.PHONY: install release uninstall

release:
	swift build -c release --product ledgerd

install: release
	install -d "$(PREFIX)/bin"
	install -m 0755 .build/release/ledgerd "$(PREFIX)/bin/ledgerd"
	install -d "$(PREFIX)/share/ledgerd/sql"
	install -m 0644 sql/*.sql "$(PREFIX)/share/ledgerd/sql/"
	@case ":$$PATH:" in *":$(PREFIX)/bin:"*) ;; *) echo "note: $(PREFIX)/bin is not on your PATH: export PATH=\"$(PREFIX)/bin:\$$PATH\"";; esac
	@echo "installed $(PREFIX)/bin/ledgerd"

uninstall:
	rm -f "$(PREFIX)/bin/ledgerd"
	rm -rf "$(PREFIX)/share/ledgerd"
