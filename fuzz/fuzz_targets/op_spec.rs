//! Fuzz target: crm_simulate-style injection arguments (`-i`/`-F` op specs, node names, quorum
//! values) and their application to a small CIB: a typed value or an error naming the text,
//! never a panic; a parsed spec prints back to text that parses to the same spec.
#![no_main]

use libfuzzer_sys::fuzz_target;
use pengine::{Injection, OpSpec};

const CIB: &str = r#"<cib have-quorum="1"><configuration><crm_config/><nodes><node id="1" uname="n1"/><node id="2" uname="n2"/></nodes><resources><primitive id="vm" class="ocf" provider="heartbeat" type="VirtualDomain"/><group id="g"><primitive id="a_b" class="ocf" provider="pacemaker" type="Dummy"/></group></resources><constraints/></configuration><status><node_state id="1" uname="n1" in_ccm="true" crmd="online" join="member" expected="member"><transient_attributes id="1"><instance_attributes id="s1"><nvpair id="f" name="fail-count-vm#monitor_10000" value="INFINITY"/></instance_attributes></transient_attributes><lrm id="1"><lrm_resources><lrm_resource id="vm" class="ocf" provider="heartbeat" type="VirtualDomain"><lrm_rsc_op id="vm_last_0" operation="start" call-id="2147483647" rc-code="0" op-status="0" interval="0"/></lrm_resource></lrm_resources></lrm></node_state></status></cib>"#;

fuzz_target!(|data: &[u8]| {
    let Ok(text) = std::str::from_utf8(data) else {
        return;
    };
    let Ok(cib) = pengine::Cib::parse(CIB) else {
        return;
    };
    let mut what_if = cib.what_if(1_700_000_000);
    for line in text.lines() {
        match OpSpec::parse(line) {
            Ok(spec) => {
                let printed = format!("{}@{}={}", spec.key(), spec.node, spec.rc);
                assert_eq!(OpSpec::parse(&printed).as_ref(), Ok(&spec), "{printed}");
                what_if = what_if.inject(Injection::Op(spec));
            }
            Err(e) => assert!(e.to_string().contains(line), "{e} / {line}"),
        }
        if let Ok(w) = what_if.clone().node_fail(line) {
            what_if = w.node_up(line).and_then(|w| w.node_down(line)).expect("a valid node name");
        }
        if let Ok(w) = what_if.clone().quorum(line) {
            what_if = w;
        }
    }
    let _ = what_if.plan();
});
