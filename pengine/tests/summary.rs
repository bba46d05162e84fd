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
    let out = pengine::render_simulation(&cib, 0, None);
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
