# mk/deb.mk - the Debian packages (debian/), included by the top-level Makefile.
#
#   make test-deb   builds them with dpkg-buildpackage from a copy of the
#                   tree in $(B)/deb, checks them with lintian, extracts
#                   them there and builds and runs programs against them
#                   (tests/checks/test_deb.sh; its PMIx program runs under mpirun:
#                   run it under the mpirun lock)
#
# The packages themselves: cp -r the tree anywhere, then
# `dpkg-buildpackage -us -uc -b` in it (the .deb files go to its parent).

.PHONY: test-deb

test-deb:
	@scripts/deps.sh test deb
	@B="$(B)" CC="$(CC)" sh tests/checks/test_deb.sh
