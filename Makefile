# make install: the agent as ocf:highlander:VirtualDomain, the pengine CLI and highlander-schedulerd
# (installed only; `highlander-schedulerd install` puts it in place of Pacemaker's scheduler).
# DESTDIR honoured.
PREFIX   ?= /usr
OCF_ROOT ?= $(PREFIX)/lib/ocf
DESTDIR  ?=
CARGO    ?= cargo

.PHONY: all build install uninstall test demo
all: build
build:
	$(CARGO) build --release -p highlander-agent -p pengine -p highlander-schedulerd
install: build
	install -D -m 0755 target/release/VirtualDomain $(DESTDIR)$(OCF_ROOT)/resource.d/highlander/VirtualDomain
	install -D -m 0755 target/release/VirtualDomain-libvirt $(DESTDIR)$(OCF_ROOT)/resource.d/highlander/.VirtualDomain-libvirt
	install -D -m 0755 target/release/pengine $(DESTDIR)$(PREFIX)/bin/pengine
	install -D -m 0755 target/release/highlander-schedulerd $(DESTDIR)$(PREFIX)/sbin/highlander-schedulerd
uninstall:
	rm -f $(DESTDIR)$(OCF_ROOT)/resource.d/highlander/VirtualDomain $(DESTDIR)$(PREFIX)/bin/pengine
	rm -f $(DESTDIR)$(OCF_ROOT)/resource.d/highlander/.VirtualDomain-libvirt
	rm -f $(DESTDIR)$(PREFIX)/sbin/highlander-schedulerd
test:
	bash tools/test.sh
demo:
	bash tools/demo.sh
