//! `pengine explain`: the score changes it records add up, node by node, to crm_simulate's own
//! allocation scores (the corpus `.scores` files, from `crm_simulate -s`) on every corpus case
//! whose scores pengine passes; and the explanation names the constraints behind them.

#[allow(dead_code)]
#[path = "conformance/mod.rs"]
mod conformance;

use std::collections::BTreeMap;

use conformance::corpus;
use conformance::passing;
use conformance::run::Check;
use pengine::unstable::INFINITY;

/// Parses a score as crm_simulate prints it.
fn score(text: &str, line: &str) -> i64 {
    match text.trim() {
        "INFINITY" | "+INFINITY" => INFINITY,
        "-INFINITY" => -INFINITY,
        s => s
            .parse()
            .unwrap_or_else(|_| panic!("bad score in '{line}'")),
    }
}

/// `LABEL: RSC allocation score on NODE: SCORE` lines: (label, rsc, node) -> every score shown,
/// in order (an instance whose first assignment is given up, or a bundle assigned again, is
/// shown more than once).
fn allocation_scores(text: &str) -> BTreeMap<(String, String, String), Vec<i64>> {
    let mut out: BTreeMap<_, Vec<i64>> = BTreeMap::new();
    for line in text.lines() {
        let Some((label, rest)) = line.split_once(": ") else {
            continue;
        };
        let Some((rsc, rest)) = rest.split_once(" allocation score on ") else {
            continue;
        };
        let Some((node, value)) = rest.rsplit_once(": ") else {
            continue;
        };
        out.entry((label.to_string(), rsc.to_string(), node.to_string()))
            .or_default()
            .push(score(value, line));
    }
    out
}

/// `RSC promotion score on NODE: SCORE` lines: (rsc, node, score).
fn promotion_scores(text: &str) -> Vec<(String, String, String)> {
    text.lines()
        .filter_map(|line| {
            let (rsc, rest) = line.split_once(" promotion score on ")?;
            let (node, value) = rest.rsplit_once(": ")?;
            Some((rsc.to_string(), node.to_string(), value.trim().to_string()))
        })
        .collect()
}

fn wall_clock() -> i64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_secs() as i64)
        .unwrap_or(0)
}

#[test]
fn explained_totals_are_crm_simulates_allocation_scores() {
    let dir = corpus::corpus_dir();
    let tsv = std::fs::read_to_string(dir.join("tests.tsv")).expect("tests.tsv");
    let cases = corpus::parse_cases(&tsv).expect("a well-formed tests.tsv");
    let list_text = std::fs::read_to_string(passing::list_path()).expect("the passing list");
    let list = passing::parse(&list_text).expect("a well-formed passing list");
    let (mut cases_checked, mut scores_checked, mut parts_checked) = (0, 0, 0);
    let (mut clone_scores_checked, mut promotions_checked) = (0, 0);
    let mut failures = Vec::new();
    for (name, checks) in &list.cases {
        if !checks.contains(&Check::Scores) {
            continue;
        }
        let case = cases.iter().find(|c| &c.name == name);
        let date = case.and_then(|c| {
            let i = c.extra_args.iter().position(|a| a == "-t")?;
            c.extra_args.get(i + 1).cloned()
        });
        let text = std::fs::read_to_string(dir.join("xml").join(format!("{name}.xml")))
            .expect("the corpus CIB");
        let cib = pengine::parse_cib(&text).expect("a CIB pengine passes");
        let now = match (date, cib.execution_date) {
            (Some(t), _) => pengine::parse_iso_date(&t).expect("a valid -t date"),
            (None, Some(e)) => e,
            (None, None) => wall_clock(),
        };
        let scores_text =
            std::fs::read_to_string(dir.join("scores").join(format!("{name}.scores")))
                .expect("the corpus scores");
        let expected = allocation_scores(&scores_text);
        let promotions = promotion_scores(&scores_text);
        let observed = pengine::unstable::observe(&cib, now);
        // Every resource is explained: a clone instance (or instance group member) by its
        // clone's placement, a bundle's container, IP, connection and inner instance by the
        // bundle's; each explanation's totals must be what crm_simulate shows for it (of the
        // scores it shows for that node, once per assignment: the last for a primitive).
        for r in observed.resources.iter().filter(|r| !r.orphan) {
            let (t, trace) = match pengine::unstable::explain(&cib, now, &r.id) {
                Ok(x) => x,
                Err(e) => {
                    failures.push(format!("{name}: {}: {e}", r.id));
                    continue;
                }
            };
            let part = trace.clone.is_some() || pengine::unstable::is_replica_part(&t, trace.rsc);
            let totals = pengine::unstable::fold(&trace.steps);
            for (ni, node) in t.observed.nodes.iter().enumerate() {
                let key = (
                    "pcmk__primitive_assign".to_string(),
                    r.id.clone(),
                    node.uname.clone(),
                );
                let Some(want) = expected.get(&key) else {
                    continue;
                };
                let got = totals.get(&ni).copied().unwrap_or(-INFINITY);
                let matches = if part {
                    want.contains(&got)
                } else {
                    want.last() == Some(&got)
                };
                if !matches {
                    failures.push(format!(
                        "{name}: {} on {}: explained {got}, crm_simulate {want:?}",
                        r.id, node.uname
                    ));
                }
                scores_checked += 1;
                if part {
                    parts_checked += 1;
                }
            }
            // The clone's own scores (`pcmk__clone_allocate` for the clone itself).
            if let Some(ci) = trace.clone {
                let clone_id = &t.observed.groups[ci].id;
                let own = pengine::unstable::fold(&trace.clone_steps);
                for (ni, node) in t.observed.nodes.iter().enumerate() {
                    let key = (
                        "pcmk__clone_allocate".to_string(),
                        clone_id.clone(),
                        node.uname.clone(),
                    );
                    let Some(want) = expected.get(&key) else {
                        continue;
                    };
                    let got = own.get(&ni).copied().unwrap_or(-INFINITY);
                    if !want.contains(&got) {
                        failures.push(format!(
                            "{name}: clone {clone_id} (explaining {}) on {}: explained {got}, crm_simulate {want:?}",
                            r.id, node.uname
                        ));
                    }
                    clone_scores_checked += 1;
                }
            }
            // A promotable instance's explanation states its promotion scores.
            let text = pengine::unstable::render(&t, &trace);
            for (_, node, value) in promotions.iter().filter(|(rsc, _, _)| *rsc == r.id) {
                let stated = format!("{value} on {node}");
                if !text.contains(&stated) {
                    failures.push(format!(
                        "{name}: {}: promotion score '{stated}' not explained:\n{text}",
                        r.id
                    ));
                }
                promotions_checked += 1;
            }
        }
        cases_checked += 1;
    }
    eprintln!(
        "explain: {scores_checked} scores ({parts_checked} of clone instances and bundle parts), \
         {clone_scores_checked} clones' own scores and {promotions_checked} promotion scores on \
         {cases_checked} corpus cases"
    );
    assert!(
        cases_checked >= 50,
        "only {cases_checked} cases with passing scores"
    );
    assert!(
        parts_checked >= 1000 && clone_scores_checked >= 1000 && promotions_checked >= 100,
        "too few clone and bundle scores checked"
    );
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}

/// Four nodes, `vm` running on node1 with stickiness 100, preferring node2 by 50 and banned
/// from node3; node4 is in standby. Scores worked out by hand from Pacemaker's rules.
const CIB: &str = r#"<cib admin_epoch="0" epoch="1" num_updates="1" dc-uuid="n1" have-quorum="1" validate-with="pacemaker-3.0">
  <configuration>
    <crm_config><cluster_property_set id="o"><nvpair id="o1" name="stonith-enabled" value="false"/></cluster_property_set></crm_config>
    <nodes><node id="n1" uname="node1"/><node id="n2" uname="node2"/><node id="n3" uname="node3"/>
      <node id="n4" uname="node4"><instance_attributes id="n4a"><nvpair id="n4s" name="standby" value="on"/></instance_attributes></node></nodes>
    <resources>
      <primitive id="vm" class="ocf" provider="heartbeat" type="Dummy">
        <meta_attributes id="vm-m"><nvpair id="vm-s" name="resource-stickiness" value="100"/></meta_attributes>
      </primitive>
    </resources>
    <constraints>
      <rsc_location id="prefer-node2" rsc="vm" node="node2" score="50"/>
      <rsc_location id="ban-node3" rsc="vm" node="node3" score="-INFINITY"/>
    </constraints>
  </configuration>
  <status>
    <node_state id="n1" uname="node1" in_ccm="true" crmd="online" join="member" expected="member">
      <lrm id="n1"><lrm_resources>
        <lrm_resource id="vm" class="ocf" provider="heartbeat" type="Dummy">
          <lrm_rsc_op id="vm_last_0" operation="start" call-id="2" rc-code="0" op-status="0" interval="0" transition-key="1:0:0:00000000-0000-0000-0000-000000000000" op-digest="f2317cad3d54cec5d7d7aa7d0bf35cf8"/>
        </lrm_resource>
      </lrm_resources></lrm>
    </node_state>
    <node_state id="n2" uname="node2" in_ccm="true" crmd="online" join="member" expected="member"/>
    <node_state id="n3" uname="node3" in_ccm="true" crmd="online" join="member" expected="member"/>
    <node_state id="n4" uname="node4" in_ccm="true" crmd="online" join="member" expected="member"/>
  </status>
</cib>"#;

/// The explanation's folded total per node name (-INFINITY where no step touched the node).
fn totals_by_node<'a>(
    t: &'a pengine::unstable::Transition,
    trace: &pengine::unstable::Trace,
) -> BTreeMap<&'a str, i64> {
    let totals = pengine::unstable::fold(&trace.steps);
    t.observed
        .nodes
        .iter()
        .enumerate()
        .map(|(ni, n)| {
            (
                n.uname.as_str(),
                totals.get(&ni).copied().unwrap_or(-INFINITY),
            )
        })
        .collect()
}

#[test]
fn explanation_names_each_contribution_and_the_choice() {
    let cib = pengine::parse_cib(CIB).expect("valid CIB");
    let (t, trace) = pengine::unstable::explain(&cib, 0, "vm").expect("vm is configured");
    let by_name = totals_by_node(&t, &trace);
    let want: BTreeMap<&str, i64> = [
        ("node1", 100),
        ("node2", 50),
        ("node3", -INFINITY),
        ("node4", 0),
    ]
    .into_iter()
    .collect();
    assert_eq!(by_name, want);
    let text = pengine::unstable::render(&t, &trace);
    let block = |node: &str| -> String {
        text.split("\n\n")
            .find(|b| b.starts_with(&format!("{node}:")))
            .unwrap_or_else(|| panic!("no block for {node} in\n{text}"))
            .to_string()
    };
    assert!(
        text.starts_with("vm (ocf:heartbeat:Dummy): stays on node1\n"),
        "{text}"
    );
    assert!(
        block("node1").starts_with("node1: 100, chosen, ranked 1 of 2"),
        "{text}"
    );
    let has_step = |node: &str, op: &str, why: &str| {
        block(node)
            .lines()
            .any(|l| l.trim_start().starts_with(op) && l.contains(why))
    };
    assert!(has_step("node1", "+ 100 ", "resource-stickiness"), "{text}");
    assert!(
        has_step("node2", "+ 50 ", "location prefer-node2"),
        "{text}"
    );
    assert!(
        has_step("node3", "- INFINITY ", "location ban-node3"),
        "{text}"
    );
    assert!(block("node2").contains("location prefer-node2"), "{text}");
    assert!(
        block("node3").contains("filtered: score -INFINITY is negative"),
        "{text}"
    );
    assert!(block("node3").contains("location ban-node3"), "{text}");
    assert!(
        block("node4").contains("filtered: node is in standby"),
        "{text}"
    );
    assert_eq!(
        pengine::unstable::explain(&cib, 0, "nope").map(|_| ()),
        Err(pengine::ExplainError::UnknownResource { rsc: "nope".into() })
    );
}

/// Three nodes; clone `b` (two instances, `b:0` active on node2) and clone `a` (two instances,
/// interleaved with `b` by an INFINITY colocation), and a group `g`.
const CLONES_CIB: &str = r#"<cib admin_epoch="0" epoch="1" num_updates="1" dc-uuid="n1" have-quorum="1" validate-with="pacemaker-3.0">
  <configuration>
    <crm_config><cluster_property_set id="o"><nvpair id="o1" name="stonith-enabled" value="false"/></cluster_property_set></crm_config>
    <nodes><node id="n1" uname="node1"/><node id="n2" uname="node2"/><node id="n3" uname="node3"/></nodes>
    <resources>
      <clone id="b-clone">
        <meta_attributes id="b-m"><nvpair id="b-max" name="clone-max" value="2"/></meta_attributes>
        <primitive id="b" class="ocf" provider="heartbeat" type="Dummy"/>
      </clone>
      <clone id="a-clone">
        <meta_attributes id="a-m"><nvpair id="a-max" name="clone-max" value="2"/><nvpair id="a-i" name="interleave" value="true"/></meta_attributes>
        <primitive id="a" class="ocf" provider="heartbeat" type="Dummy"/>
      </clone>
      <group id="g"><primitive id="g1" class="ocf" provider="heartbeat" type="Dummy"/><primitive id="g2" class="ocf" provider="heartbeat" type="Dummy"/></group>
    </resources>
    <constraints>
      <rsc_colocation id="a-with-b" rsc="a-clone" with-rsc="b-clone" score="INFINITY"/>
      <rsc_location id="b-avoids-node1" rsc="b-clone" node="node1" score="-100"/>
    </constraints>
  </configuration>
  <status>
    <node_state id="n1" uname="node1" in_ccm="true" crmd="online" join="member" expected="member"/>
    <node_state id="n2" uname="node2" in_ccm="true" crmd="online" join="member" expected="member">
      <lrm id="n2"><lrm_resources>
        <lrm_resource id="b" class="ocf" provider="heartbeat" type="Dummy">
          <lrm_rsc_op id="b_last_0" operation="start" call-id="2" rc-code="0" op-status="0" interval="0" transition-key="1:0:0:00000000-0000-0000-0000-000000000000"/>
        </lrm_resource>
      </lrm_resources></lrm>
    </node_state>
    <node_state id="n3" uname="node3" in_ccm="true" crmd="online" join="member" expected="member"/>
  </status>
</cib>"#;

#[test]
fn clone_instances_and_collectives_are_explained() {
    let cib = pengine::parse_cib(CLONES_CIB).expect("valid CIB");
    let all = pengine::unstable::explain_all(&cib, 0, "a-clone").expect("a clone is explained");
    assert_eq!(all.len(), 2);
    for (t, trace) in &all {
        // The steps add up to the scores placement gave the instance, the clone's own steps
        // to the clone's.
        let totals = pengine::unstable::fold(&trace.steps);
        assert_eq!(totals, t.desired.scores[trace.rsc]);
        let ci = trace.clone.expect("an instance of its clone");
        assert_eq!(t.observed.groups[ci].id, "a-clone");
        let own = pengine::unstable::fold(&trace.clone_steps);
        assert_eq!(own, t.desired.group_scores[ci]);
        // Interleaved with b: only the node of the instance of b it pairs with is left.
        let placed = trace.assigned.expect("placed");
        let b_nodes: Vec<usize> = t
            .observed
            .resources
            .iter()
            .enumerate()
            .filter(|(_, r)| r.id.starts_with("b:"))
            .filter_map(|(ri, _)| t.desired.assigned[ri])
            .collect();
        assert!(b_nodes.contains(&placed));
        assert!(
            trace
                .steps
                .iter()
                .any(|s| s.why.contains("a-with-b") && s.why.contains("interleaved")),
            "{:?}",
            trace.steps
        );
    }
    // crm_simulate 2.1.5 on this CIB: a:1 -INFINITY on node1 and node2, 0 on node3.
    let (t, trace) = &all[1];
    let by_name: Vec<(&str, i64)> = totals_by_node(t, trace).into_iter().collect();
    assert_eq!(
        by_name,
        [("node1", -INFINITY), ("node2", -INFINITY), ("node3", 0)]
    );
    let text = pengine::unstable::render_all(&all);
    assert!(
        text.starts_with("a:0 (ocf:heartbeat:Dummy), an instance of a-clone"),
        "{text}"
    );
    assert_eq!(text.matches("a-clone's own scores").count(), 1, "{text}");
    // b's instance: its clone's location shows in the clone's own scores.
    let (_, trace) = pengine::unstable::explain(&cib, 0, "b:0").expect("an instance");
    assert!(
        trace
            .clone_steps
            .iter()
            .any(|s| s.why.contains("b-avoids-node1"))
    );
    // A group: each member; a group id alone is not a primitive.
    let group = pengine::unstable::explain_all(&cib, 0, "g").expect("a group is explained");
    assert_eq!(group.len(), 2);
    assert!(matches!(
        pengine::unstable::explain(&cib, 0, "g"),
        Err(pengine::ExplainError::Collective { kind: "group", .. })
    ));
    // The resource a clone is made of, by its own id: the clone's instances.
    let by_template = pengine::unstable::explain_all(&cib, 0, "a").expect("a clone's resource");
    assert_eq!(by_template.len(), 2);
    let missing = pengine::unstable::explain_all(&cib, 0, "a:7").map(|_| ());
    assert_eq!(
        missing,
        Err(pengine::ExplainError::UnknownResource { rsc: "a:7".into() })
    );
}
