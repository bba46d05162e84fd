#!/usr/bin/env bash
# Runs every fuzz target in fuzz/ (cargo-fuzz, libFuzzer) for a bounded time, with seed corpora
# built at run time from the project's fixtures and the Pacemaker conformance inputs.
#
#   tools/fuzz.sh             every target 60 s (about 6 minutes)
#   tools/fuzz.sh 600         every target 600 s (the longer run)
#   tools/fuzz.sh --ci        every target 25 s (CI: at most about 3 minutes of fuzzing)
#   tools/fuzz.sh 60 cib      only the named target(s)
#
# Installs cargo-fuzz when missing. The toolchain is stable: RUSTC_BOOTSTRAP=1 lets cargo-fuzz pass
# its nightly flags. Sanitizers: none (-s none): the workspace denies unsafe code, so
# AddressSanitizer would only watch the dependencies, and it costs a 2-core machine half the
# executions; debug assertions and overflow checks are on. FUZZ_SANITIZER=address to change that.
# Corpora and crash artifacts go to fuzz/corpus and fuzz/artifacts (ignored by git). A crash makes
# the script exit non-zero and print the reproducer's path.
set -euo pipefail
cd "$(dirname "$0")/.."
root=$(pwd)

seconds=60
if [[ "${1:-}" == "--ci" ]]; then
    seconds=25
    shift
elif [[ "${1:-}" =~ ^[0-9]+$ ]]; then
    seconds=$1
    shift
fi
all_targets=(ocf_env domain_xml journal cib cib_schedule rule_date op_spec schedulerd_message)
targets=("$@")
[[ ${#targets[@]} -eq 0 ]] && targets=("${all_targets[@]}")

export RUSTC_BOOTSTRAP=1
if ! cargo fuzz --version >/dev/null 2>&1; then
    echo "fuzz.sh: installing cargo-fuzz" >&2
    cargo install --locked cargo-fuzz
fi

conformance=$root/testdata/pacemaker-2.1.5/xml
corpus=$root/fuzz/corpus

seed() { # seed TARGET NAME CONTENT
    mkdir -p "$corpus/$1"
    printf '%s' "$3" >"$corpus/$1/seed-$2"
}

seed_all() {
    # CIBs: the conformance inputs, plus hand-made hostile ones.
    mkdir -p "$corpus/cib" "$corpus/cib_schedule" "$corpus/rule_date"
    if [[ ! -d "$conformance" ]]; then
        echo "fuzz.sh: $conformance is missing: the corpus is part of the repository (testdata/)" >&2
        exit 1
    fi
    for f in "$conformance"/*.xml; do
        cp -n "$f" "$corpus/cib/" 2>/dev/null || true
        cp -n "$f" "$corpus/cib_schedule/" 2>/dev/null || true
    done
    # Rule targets start from the conformance CIBs that have rules.
    grep -l '<rule' "$conformance"/*.xml | head -n 80 | xargs -r cp -n -t "$corpus/rule_date/" || true
    local cib='<cib have-quorum="1" execution-date="1700000000"><configuration><crm_config><cluster_property_set id="o"><nvpair id="o1" name="stonith-enabled" value="false"/></cluster_property_set></crm_config><nodes><node id="1" uname="n1"/><node id="2" uname="n2"/></nodes><resources><primitive id="vm" class="ocf" provider="heartbeat" type="VirtualDomain"><meta_attributes id="m"><nvpair id="m1" name="allow-migrate" value="true"/></meta_attributes><operations><op id="vm-mon" name="monitor" interval="10s"/></operations></primitive></resources><constraints><rsc_location id="l" rsc="vm" node="n1" score="INFINITY"/><rsc_order id="o" first="vm" then="vm"/><rsc_colocation id="c" rsc="vm" with-rsc="vm" score="-INFINITY"/></constraints></configuration><status><node_state id="1" uname="n1" in_ccm="true" crmd="online" join="member" expected="member"><lrm id="1"><lrm_resources><lrm_resource id="vm" class="ocf" provider="heartbeat" type="VirtualDomain"><lrm_rsc_op id="vm_last_0" operation="migrate_to" call-id="9" rc-code="1" op-status="0" interval="0" last-rc-change="99999999999" migrate_source="n1" migrate_target="n2"/></lrm_resource></lrm_resources></lrm></node_state></status></cib>'
    seed cib hostile "$cib"
    seed cib_schedule hostile "$cib"
    seed cib entities '<!DOCTYPE cib [<!ENTITY a "aaaaaaaaaa"><!ENTITY b "&a;&a;&a;&a;&a;&a;&a;&a;&a;&a;">]><cib><configuration><nodes><node id="&b;" uname="&b;"/></nodes></configuration></cib>'
    seed rule_date rule '<rule id="r" boolean-op="or" score="INFINITY"><expression id="e" attribute="n" operation="gt" value="5" type="integer"/><date_expression id="d" operation="in_range" start="2019-01-01" end="2030-01-01T00:00:00Z"><duration id="du" years="1"/></date_expression><date_expression id="s" operation="date_spec"><date_spec id="sp" hours="9-17" weekdays="1-5"/></date_expression><rule id="n" boolean-op="and"><expression id="e2" attribute="#uname" operation="eq" value="node1"/></rule></rule>'
    seed rule_date date '2019-09-26T10:00:00+02:00'
    seed rule_date interval 'PT1H30M'

    # crm_simulate injection arguments (-i/-F specs, node names, quorum), one per line.
    seed op_spec monitor 'vm_monitor_10000@n1=7'
    seed op_spec migrate $'vm_migrate_to_0@n1=1\nvm_migrate_from_0@n2=0\na_b_stop_0@n2=-1'
    seed op_spec notify $'c_pre_notify_start_0@n1=0\nc_confirmed-post_notify_stop_0@n2=0'
    seed op_spec hostile $'@=\n_0@n=1\nvm_start_99999999999999999999@n=1\nvm_start_0@n=2147483648\nvm_start_0@@==\n \ntrue\nn1'
    # Domain XML: libvirt-shaped documents with the tricks the reader must get right.
    seed domain_xml plain "<domain type='kvm'><name>vm1</name><memory unit='KiB'>1048576</memory><devices><disk type='file'><source file='/var/lib/libvirt/images/vm1.qcow2'/></disk></devices></domain>"
    seed domain_xml tricky "<?xml version='1.0'?><!-- <name>comment</name> --><domain type='qemu'><metadata><name>not-me</name></metadata><name>vm&amp;&#x31;<![CDATA[x]]></name><title><name>nor-me</name></title></domain>"
    seed domain_xml doctype '<!DOCTYPE domain [<!ENTITY x "boom">]><domain><name>&x;</name></domain>'

    # OCF environments (NAME=VALUE lines; bare names are OCF_RESKEY_ parameters).
    seed ocf_env heartbeat $'OCF_RESOURCE_INSTANCE=vm1\nOCF_RA_VERSION_MAJOR=1\nOCF_RA_VERSION_MINOR=1\nOCF_RESKEY_CRM_meta_timeout=20000\nOCF_RESKEY_CRM_meta_interval=10000\nOCF_RESKEY_CRM_meta_migrate_target=node2\nHA_RSCTMP=/run/resource-agents\nconfig=/etc/libvirt/qemu/vm1.xml\nhypervisor=qemu:///system\nmigration_transport=ssh\nmigration_user=root\nmigration_network_suffix=-mig\nmigrateport=49160\nmigrate_options=--p2p --tunnelled --migrateuri=tcp://%n:49152\nmonitor_scripts=/usr/bin/true /bin/check\nshutdown_mode=agent,acpi\nforce_stop=false\nmigration_speed=100\nmigration_downtime=300\nremoteuri=qemu+ssh://%n/system'
    seed ocf_env hostile $'config=relative.xml\nsnapshot=/x\nmigration_speed=-1\nmigrateport=70000\nmigration_user=Root;rm -rf /\nmigrate_options=--offline\nshutdown_mode=reboot\nforce_stop=maybe\nOCF_CHECK_LEVEL=99999999999\nOCF_RESKEY_CRM_meta_timeout=18446744073709551615\nbogus_param=1'
    seed ocf_env nonutf8 $'config=/etc/\xff\xfe.xml\nOCF_RESOURCE_INSTANCE=\xc3'

    # Journals: a well-formed one and broken ones.
    # schedulerd_message: an odd first byte ("1") sends the rest through the encoder, an even one
    # decodes it as raw frame bytes (a shell string cannot hold the header's NULs).
    seed schedulerd_message request '1<create_request_adv t="crmd" subt="request" reference="r" crm_task="pe_calc" crm_sys_to="pengine" crm_sys_from="1_crmd"><crm_xml><cib/></crm_xml></create_request_adv>'
    seed journal good '[{"at_unix_ms":1,"pid":2,"action":"migrate_to","domain":"vm1","source":"a","target":"b","phase":"begin","detail":""}]'
    seed journal object '{"phase":"answer","detail":"0"}'
    seed journal deep "$(printf '[%.0s' $(seq 1 200))"
    seed journal truncated '[{"at_unix_ms":1,"pid":2,"action":"migr'
}

seed_all
mkdir -p "$root/fuzz/artifacts"
sanitizer=${FUZZ_SANITIZER:-none}
failed=()
summary=()
for t in "${targets[@]}"; do
    dict=()
    case $t in
        ocf_env) dict=(-dict="$root/fuzz/dict/ocf.dict") ;;
        cib | cib_schedule | rule_date | domain_xml) dict=(-dict="$root/fuzz/dict/xml.dict") ;;
    esac
    max_len=65536
    [[ $t == ocf_env || $t == rule_date ]] && max_len=8192
    log="$root/fuzz/artifacts/$t.log"
    echo "fuzz.sh: $t for ${seconds}s" >&2
    set +e
    (cd "$root/fuzz" && cargo fuzz run --release -s "$sanitizer" "$t" "$corpus/$t" -- \
        -max_total_time="$seconds" -max_len="$max_len" -timeout=10 -rss_limit_mb=2048 \
        -artifact_prefix="$root/fuzz/artifacts/$t-" -print_final_stats=1 "${dict[@]}") >"$log" 2>&1
    rc=$?
    set -e
    runs=$(grep -o 'stat::number_of_executed_units: *[0-9]*' "$log" | grep -o '[0-9]*$' | tail -n1)
    summary+=("$t: ${runs:-?} executions in ${seconds}s, exit $rc")
    if [[ $rc -ne 0 ]]; then
        failed+=("$t")
        echo "fuzz.sh: $t FAILED (exit $rc); log $log" >&2
        grep -E 'panicked|ERROR|SUMMARY|Test unit written|artifact' "$log" | head -n 20 >&2 || true
    fi
done
printf '%s\n' "${summary[@]}"
if [[ ${#failed[@]} -gt 0 ]]; then
    echo "fuzz.sh: crashes in: ${failed[*]}" >&2
    exit 1
fi
echo "fuzz.sh: ${#targets[@]} passed, 0 failed"
