# Shared set-up of the agent benchmarks (sourced, not run): private libvirtd daemons started by
# test-cts's hl-libvirtd, torn down by PID on exit, and a tiny diskless guest's domain XML.
#
# bench_daemons N PREFIX: builds the agent and hl-libvirtd, makes $WORK (mktemp PREFIX.XXXXXX),
# starts N daemons and fills URI[0..N-1]; the EXIT trap closes hl-libvirtd's stdin, which makes it
# tear its daemons down (guests included), then removes $WORK.
bench_daemons() {
    local n=$1 prefix=$2 line
    cargo build --release --quiet -p highlander-agent -p test-cts
    WORK=$(mktemp -d "$prefix.XXXXXX")
    DAEMON_PID=
    trap bench_cleanup EXIT
    mkfifo "$WORK/in" "$WORK/out"
    target/release/hl-libvirtd "$n" <"$WORK/in" >"$WORK/out" 2>"$WORK/daemon.err" &
    DAEMON_PID=$!
    exec {DAEMON_IN}>"$WORK/in"
    URI=()
    while read -r line; do
        case $line in
            URI*=*) line=${line#URI}; URI[${line%%=*}]=${line#*=} ;;
            READY) break ;;
        esac
    done <"$WORK/out"
    [ -n "${URI[$((n - 1))]:-}" ] || {
        echo "bench: libvirtd did not start: $(cat "$WORK/daemon.err")" >&2
        exit 1
    }
}

bench_cleanup() {
    set +e
    [ -n "${DAEMON_IN:-}" ] && exec {DAEMON_IN}>&-
    [ -n "${DAEMON_PID:-}" ] && wait "$DAEMON_PID" 2>/dev/null
    rm -rf "$WORK"
}

# bench_guest_xml NAME MEMORY_MIB: a diskless one-vCPU TCG guest, on stdout.
bench_guest_xml() {
    cat <<XML
<domain type='qemu'>
  <name>$1</name>
  <memory unit='MiB'>$2</memory>
  <vcpu>1</vcpu>
  <os><type arch='x86_64' machine='pc'>hvm</type></os>
  <devices>
    <emulator>/usr/bin/qemu-system-x86_64</emulator>
    <serial type='pty'/>
    <memballoon model='none'/>
  </devices>
</domain>
XML
}
