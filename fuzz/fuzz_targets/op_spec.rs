//! Fuzz target: crm_simulate-style injection arguments (`-i`/`-F` op specs, node names, quorum
//! values) and their application to a small CIB: a typed value or an error naming the text,
//! never a panic; a parsed spec prints back to text that parses to the same spec.
#![no_main]

use libfuzzer_sys::fuzz_target;
use pengine::simulate::{Injection, inject, parse_node, parse_op_spec, parse_quorum};

const CIB: &str = r#"<cib have-quorum="1"><configuration><crm_config/><nodes><node id="1" uname="n1"/><node id="2" uname="n2"/></nodes><resources><primitive id="vm" class="ocf" provider="heartbeat" type="VirtualDomain"/><group id="g"><primitive id="a_b" class="ocf" provider="pacemaker" type="Dummy"/></group></resources><constraints/></configuration><status><node_state id="1" uname="n1" in_ccm="true" crmd="online" join="member" expected="member"><transient_attributes id="1"><instance_attributes id="s1"><nvpair id="f" name="fail-count-vm#monitor_10000" value="INFINITY"/></instance_attributes></transient_attributes><lrm id="1"><lrm_resources><lrm_resource id="vm" class="ocf" provider="heartbeat" type="VirtualDomain"><lrm_rsc_op id="vm_last_0" operation="start" call-id="2147483647" rc-code="0" op-status="0" interval="0"/></lrm_resource></lrm_resources></lrm></node_state></status></cib>"#;

fuzz_target!(|data: &[u8]| {
    let Ok(text) = std::str::from_utf8(data) else {
        return;
    };
    let mut injections = Vec::new();
    for line in text.lines() {
        match parse_op_spec(line) {
            Ok(spec) => {
                let printed = format!("{}@{}={}", spec.key(), spec.node, spec.rc);
                assert_eq!(parse_op_spec(&printed).as_ref(), Ok(&spec), "{printed}");
                injections.push(Injection::Op(spec));
            }
            Err(e) => assert!(e.to_string().contains(line), "{e} / {line}"),
        }
        if let Ok(n) = parse_node(line) {
            injections.push(Injection::NodeFail(n.clone()));
            injections.push(Injection::NodeUp(n.clone()));
            injections.push(Injection::NodeDown(n));
        }
        if let Ok(q) = parse_quorum(line) {
            injections.push(q);
        }
    }
    if let Ok(cib) = pengine::parse_cib(CIB) {
        let injected = inject(&cib, &injections, 1_700_000_000, 1_700_000_000);
        let _ = pengine::schedule(&injected.cib, 1_700_000_000);
    }
});
