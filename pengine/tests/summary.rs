//! End-to-end checks of the simulate output on small inline CIBs; expected text captured from
//! `LC_ALL=C crm_simulate -x FILE -S` (Pacemaker 2.1.5), not from pengine.

const MOVE_CIB: &str = r#"<cib admin_epoch="0" epoch="1" num_updates="1" dc-uuid="n1" have-quorum="1" validate-with="pacemaker-3.0">
  <configuration>
    <crm_config><cluster_property_set id="o"><nvpair id="o1" name="stonith-enabled" value="false"/></cluster_property_set></crm_config>
    <nodes><node id="n1" uname="node1"/><node id="n2" uname="node2"/></nodes>
    <resources>
      <primitive id="vm" class="ocf" provider="heartbeat" type="Dummy"/>
      <group id="g"><primitive id="a" class="ocf" provider="heartbeat" type="Dummy"/><primitive id="b" class="ocf" provider="heartbeat" type="Dummy"/></group>
    </resources>
    <constraints><rsc_location id="ban" rsc="vm" node="node1" score="-INFINITY"/></constraints>
  </configuration>
  <status>
    <node_state id="n1" uname="node1" in_ccm="true" crmd="online" join="member" expected="member">
      <lrm id="n1"><lrm_resources>
        <lrm_resource id="vm" class="ocf" provider="heartbeat" type="Dummy">
          <lrm_rsc_op id="vm_last_0" operation="start" call-id="2" rc-code="0" op-status="0" interval="0" transition-key="1:0:0:00000000-0000-0000-0000-000000000000"/>
        </lrm_resource>
      </lrm_resources></lrm>
    </node_state>
    <node_state id="n2" uname="node2" in_ccm="true" crmd="online" join="member" expected="member"/>
  </status>
</cib>"#;

fn section(text: &str, title: &str) -> String {
    text.split("\n\n")
        .skip_while(|p| !p.starts_with(title))
        .take_while(|p| !p.starts_with("Executing") || title.starts_with("Executing"))
        .take(2)
        .collect::<Vec<_>>()
        .join("\n\n")
}

#[test]
fn move_and_group_start_match_crm_simulate() {
    let cib = pengine::parse_cib(MOVE_CIB).expect("valid CIB");
    let out = pengine::render_simulation(&cib, 0);
    let current = "Current cluster status:
  * Node List:
    * Online: [ node1 node2 ]

  * Full List of Resources:
    * vm\t(ocf:heartbeat:Dummy):\t Started node1
    * Resource Group: g:
      * a\t(ocf:heartbeat:Dummy):\t Stopped
      * b\t(ocf:heartbeat:Dummy):\t Stopped
";
    assert!(out.starts_with(current), "{out}");
    let summary = "Transition Summary:
  * Move       vm      ( node1 -> node2 )
  * Start      a       (          node1 )
  * Start      b       (          node1 )
";
    assert!(out.contains(summary), "{out}");
    let revised = "Revised Cluster Status:
  * Node List:
    * Online: [ node1 node2 ]

  * Full List of Resources:
    * vm\t(ocf:heartbeat:Dummy):\t Started node2
    * Resource Group: g:
      * a\t(ocf:heartbeat:Dummy):\t Started node1
      * b\t(ocf:heartbeat:Dummy):\t Started node1
";
    assert!(out.ends_with(revised), "{out}");
    assert!(!section(&out, "Transition Summary").is_empty());
}

#[test]
fn not_a_cib_is_an_error() {
    assert!(pengine::parse_cib("<configuration/>").is_err());
    assert!(pengine::parse_cib("<cib><status>").is_err());
}

/// Three nodes, no quorum, fencing enabled: node1 is lost and cannot be fenced (no quorum).
const NO_QUORUM_CIB: &str = r#"<cib have-quorum="0" dc-uuid="2" admin_epoch="0" epoch="1" num_updates="1" validate-with="pacemaker-3.0">
  <configuration>
    <crm_config><cluster_property_set id="o"><nvpair id="o1" name="stonith-enabled" value="true"/></cluster_property_set></crm_config>
    <nodes><node id="1" uname="node1"/><node id="2" uname="node2"/><node id="3" uname="node3"/></nodes>
    <resources>
      <primitive id="fence" class="stonith" type="fence_dummy"/>
      <primitive id="vm" class="ocf" provider="heartbeat" type="Dummy"/>
      <primitive id="vm2" class="ocf" provider="heartbeat" type="Dummy"/>
    </resources>
    <constraints/>
  </configuration>
  <status>
    <node_state id="1" uname="node1" in_ccm="false" crmd="offline" join="member" expected="member">
      <lrm id="1"><lrm_resources><lrm_resource id="vm" class="ocf" provider="heartbeat" type="Dummy">
        <lrm_rsc_op id="vm_last_0" operation_key="vm_start_0" operation="start" call-id="2" rc-code="0" op-status="0" interval="0" transition-key="1:0:0:x"/>
      </lrm_resource></lrm_resources></lrm>
    </node_state>
    <node_state id="2" uname="node2" in_ccm="true" crmd="online" join="member" expected="member">
      <lrm id="2"><lrm_resources><lrm_resource id="vm2" class="ocf" provider="heartbeat" type="Dummy">
        <lrm_rsc_op id="vm2_last_0" operation_key="vm2_start_0" operation="start" call-id="2" rc-code="0" op-status="0" interval="0" transition-key="1:0:0:x"/>
      </lrm_resource>
      <lrm_resource id="vm" class="ocf" provider="heartbeat" type="Dummy">
        <lrm_rsc_op id="vm_last_0" operation_key="vm_monitor_0" operation="monitor" call-id="1" rc-code="7" op-status="0" interval="0" transition-key="1:0:7:x"/>
      </lrm_resource>
      <lrm_resource id="fence" class="stonith" type="fence_dummy">
        <lrm_rsc_op id="fence_last_0" operation_key="fence_monitor_0" operation="monitor" call-id="3" rc-code="7" op-status="0" interval="0" transition-key="1:0:7:x"/>
      </lrm_resource></lrm_resources></lrm>
    </node_state>
  </status>
</cib>"#;

/// Nothing is sent to a lost node that cannot be fenced: its stop is blocked (crm_simulate 2.1.5
/// prints `Stop vm ( node1 ) due to no quorum (blocked)` and runs only vm2's stop).
#[test]
fn no_stop_is_sent_to_a_lost_node_without_quorum() {
    let cib = pengine::parse_cib(NO_QUORUM_CIB).expect("valid CIB");
    let out = pengine::render_simulation(&cib, 0);
    let squeeze = |s: &str| s.split_whitespace().collect::<Vec<_>>().join(" ");
    let flat = squeeze(&out);
    assert!(
        flat.contains("* Stop vm ( node1 ) due to no quorum (blocked)"),
        "{out}"
    );
    assert!(
        flat.contains("* Stop vm2 ( node2 ) due to no quorum"),
        "{out}"
    );
    let executing = section(&out, "Executing Cluster Transition:");
    assert!(executing.contains("vm2             stop on node2"), "{out}");
    assert!(!executing.contains("on node1"), "{out}");
}
