//! The CIB generator for differential testing: from a seed, a small cluster (2 to 4 nodes in
//! every state), resources weighted toward VM clusters (primitives, groups, clones, promotable
//! clones, a fencing device), the meta attributes that change scheduling, constraints of every
//! kind, and an operation history (see [`super::history`]). Every generated CIB names the
//! features it holds, so a run can say which features its differences had.

use super::history;
use super::rng::Rng;
use std::collections::BTreeSet;
use std::fmt::Write as _;

/// One generated CIB and the features it exercises.
pub struct Generated {
    pub xml: String,
    pub features: BTreeSet<String>,
}

#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub enum NodeState {
    Online,
    Standby,
    Maintenance,
    Offline,
    Unclean,
    Shutdown,
}

impl NodeState {
    /// Whether the node is a cluster member (it has a running controller).
    pub fn member(self) -> bool {
        !matches!(self, NodeState::Offline | NodeState::Unclean)
    }
}

pub struct Node {
    pub id: usize,
    pub name: String,
    pub state: NodeState,
    pub site: &'static str,
}

#[derive(Clone, Copy, PartialEq, Eq)]
pub enum Agent {
    Dummy,
    Stateful,
    Fence,
}

pub struct Prim {
    pub id: String,
    pub agent: Agent,
    pub params: Vec<(String, String)>,
    pub meta: Vec<(&'static str, String)>,
    pub monitor_on_fail: Option<&'static str>,
    pub stop_on_fail: Option<&'static str>,
}

impl Prim {
    pub fn meta(&self, name: &str) -> Option<&str> {
        self.meta
            .iter()
            .find(|(k, _)| *k == name)
            .map(|(_, v)| v.as_str())
    }
}

#[derive(Clone, Copy, PartialEq, Eq)]
pub enum Shape {
    Primitive,
    Group,
    Clone,
    Promotable,
}

/// A top-level resource: a primitive, a group of primitives, or a clone of one primitive.
pub struct Top {
    pub id: String,
    pub shape: Shape,
    pub prims: Vec<Prim>,
    pub meta: Vec<(&'static str, String)>,
}

/// The model of one generated cluster, before it is written out.
pub struct Model {
    pub nodes: Vec<Node>,
    pub tops: Vec<Top>,
    pub stonith: bool,
    pub quorum: bool,
    pub properties: Vec<(&'static str, String)>,
    pub rsc_defaults: Vec<(&'static str, String)>,
    pub op_defaults: Vec<(&'static str, String)>,
    pub constraints: Vec<String>,
    pub tickets: Vec<(String, bool)>,
    pub features: BTreeSet<String>,
    /// The `<status>` section, written by [`history::status`].
    pub status: String,
}

impl Model {
    pub fn feature(&mut self, name: impl Into<String>) {
        self.features.insert(name.into());
    }
}

const NODE_STATES: [NodeState; 5] = [
    NodeState::Standby,
    NodeState::Maintenance,
    NodeState::Offline,
    NodeState::Unclean,
    NodeState::Shutdown,
];

fn state_name(state: NodeState) -> &'static str {
    match state {
        NodeState::Online => "online",
        NodeState::Standby => "standby",
        NodeState::Maintenance => "maintenance",
        NodeState::Offline => "offline",
        NodeState::Unclean => "unclean",
        NodeState::Shutdown => "shutdown",
    }
}

fn gen_nodes(rng: &mut Rng, model: &mut Model) {
    let count = 2 + rng.below(3);
    for i in 0..count {
        let state = if rng.chance(70) {
            NodeState::Online
        } else {
            rng.pick(&NODE_STATES)
        };
        // The first node is the DC: it is always a member.
        let state = if i == 0 && !state.member() {
            NodeState::Online
        } else {
            state
        };
        if state != NodeState::Online {
            model.feature(format!("node:{}", state_name(state)));
        }
        model.nodes.push(Node {
            id: i + 1,
            name: format!("node{}", i + 1),
            state,
            site: if i % 2 == 0 { "a" } else { "b" },
        });
    }
}

/// Meta attributes a primitive may carry, each with the values tried.
const PRIM_META: &[(&str, &[&str])] = &[
    ("target-role", &["Stopped", "Started"]),
    ("is-managed", &["false"]),
    ("priority", &["1", "10"]),
    ("resource-stickiness", &["0", "50", "INFINITY"]),
    ("migration-threshold", &["1", "3"]),
    ("failure-timeout", &["60s"]),
    ("multiple-active", &["block", "stop_only", "stop_start"]),
    ("requires", &["nothing", "quorum", "fencing"]),
    ("critical", &["false"]),
    ("restart-type", &["restart"]),
];

const ON_FAIL: [&str; 6] = ["ignore", "block", "stop", "restart", "standby", "fence"];

fn gen_prim(rng: &mut Rng, model: &mut Model, id: String, agent: Agent) -> Prim {
    let mut meta = Vec::new();
    if agent == Agent::Dummy && rng.chance(50) {
        meta.push(("allow-migrate", "true".to_string()));
        model.feature("meta:allow-migrate");
    }
    for (name, values) in PRIM_META {
        if rng.chance(7) {
            let value = rng.pick(values);
            meta.push((*name, value.to_string()));
            model.feature(format!("meta:{name}={value}"));
        }
    }
    let mut params = Vec::new();
    if agent == Agent::Dummy && rng.chance(40) {
        params.push(("fake".to_string(), format!("/vm/{id}.xml")));
        model.feature("params");
    }
    let monitor_on_fail = rng.chance(12).then(|| {
        let value = if agent == Agent::Stateful && rng.chance(30) {
            "demote"
        } else {
            rng.pick(&ON_FAIL)
        };
        // on-fail=fence without fencing is a configuration error.
        let value = if value == "fence" && !model.stonith {
            "restart"
        } else {
            value
        };
        model.feature(format!("on-fail:monitor={value}"));
        value
    });
    let stop_on_fail = rng.chance(5).then(|| {
        let value = rng.pick(&["block", "fence", "ignore"]);
        let value = if value == "fence" && !model.stonith {
            "block"
        } else {
            value
        };
        model.feature(format!("on-fail:stop={value}"));
        value
    });
    Prim {
        id,
        agent,
        params,
        meta,
        monitor_on_fail,
        stop_on_fail,
    }
}

fn gen_top(rng: &mut Rng, model: &mut Model, index: usize) -> Top {
    let shape = match rng.below(100) {
        0..=54 => Shape::Primitive,
        55..=74 => Shape::Group,
        75..=89 => Shape::Clone,
        _ => Shape::Promotable,
    };
    let base = format!("vm{index}");
    let (id, prims) = match shape {
        Shape::Primitive => (base.clone(), vec![gen_prim(rng, model, base, Agent::Dummy)]),
        Shape::Group => {
            model.feature("group");
            let members = (0..2 + rng.below(2))
                .map(|m| gen_prim(rng, model, format!("{base}-{m}"), Agent::Dummy))
                .collect();
            (format!("{base}-group"), members)
        }
        Shape::Clone | Shape::Promotable => {
            let promotable = shape == Shape::Promotable;
            model.feature(if promotable { "promotable" } else { "clone" });
            let agent = if promotable {
                Agent::Stateful
            } else {
                Agent::Dummy
            };
            let prim = gen_prim(rng, model, base.clone(), agent);
            (format!("{base}-clone"), vec![prim])
        }
    };
    let meta = gen_top_meta(rng, model, shape);
    Top {
        id,
        shape,
        prims,
        meta,
    }
}

fn gen_top_meta(rng: &mut Rng, model: &mut Model, shape: Shape) -> Vec<(&'static str, String)> {
    let mut meta = Vec::new();
    if shape == Shape::Promotable {
        meta.push(("promotable", "true".to_string()));
    }
    let clone = matches!(shape, Shape::Clone | Shape::Promotable);
    let choices: [(&'static str, &[&str], usize, bool); 5] = [
        (
            "target-role",
            &["Stopped", "Started"],
            8,
            shape != Shape::Primitive,
        ),
        ("is-managed", &["false"], 5, shape != Shape::Primitive),
        ("clone-max", &["1", "2"], 20, clone),
        ("interleave", &["true"], 25, clone),
        ("promoted-max", &["2"], 20, shape == Shape::Promotable),
    ];
    for (name, values, percent, applies) in choices {
        if applies && rng.chance(percent) {
            let value = rng.pick(values);
            model.feature(format!("top-meta:{name}={value}"));
            meta.push((name, value.to_string()));
        }
    }
    meta
}

fn gen_resources(rng: &mut Rng, model: &mut Model) {
    let unclean = model.nodes.iter().any(|n| n.state == NodeState::Unclean);
    model.stonith = unclean || rng.chance(25);
    let count = 1 + rng.below(5);
    for i in 1..=count {
        let top = gen_top(rng, model, i);
        model.tops.push(top);
    }
    if model.stonith {
        model.feature("stonith");
        let prim = Prim {
            id: "fencing".into(),
            agent: Agent::Fence,
            params: Vec::new(),
            meta: Vec::new(),
            monitor_on_fail: None,
            stop_on_fail: None,
        };
        model.tops.push(Top {
            id: "fencing".into(),
            shape: Shape::Primitive,
            prims: vec![prim],
            meta: Vec::new(),
        });
    }
}

fn gen_properties(rng: &mut Rng, model: &mut Model) {
    model.quorum = !rng.chance(10);
    if !model.quorum {
        model.feature("no-quorum");
    }
    let stonith = model.stonith.to_string();
    model.properties.push(("stonith-enabled", stonith));
    let choices: &[(&str, &[&str], usize)] = &[
        ("symmetric-cluster", &["false"], 10),
        (
            "no-quorum-policy",
            &["stop", "freeze", "ignore", "demote"],
            15,
        ),
        ("start-failure-is-fatal", &["false"], 10),
        ("maintenance-mode", &["true"], 3),
        ("stop-all-resources", &["true"], 3),
        ("enable-startup-probes", &["false"], 8),
    ];
    for (name, values, percent) in choices {
        if rng.chance(*percent) {
            let value = rng.pick(values);
            model.feature(format!("property:{name}={value}"));
            model.properties.push((name, value.to_string()));
        }
    }
    if rng.chance(50) {
        let value = rng.pick(&["0", "100", "INFINITY"]);
        model.feature(format!("rsc_defaults:resource-stickiness={value}"));
        model
            .rsc_defaults
            .push(("resource-stickiness", value.to_string()));
    }
    if rng.chance(8) {
        model.feature("rsc_defaults:migration-threshold");
        model.rsc_defaults.push(("migration-threshold", "2".into()));
    }
    if rng.chance(10) {
        model.feature("op_defaults:timeout");
        model.op_defaults.push(("timeout", "30s".into()));
    }
}

/// Generates the model of seed `seed`.
pub fn model(seed: u64) -> Model {
    let mut rng = Rng::new(seed);
    let mut model = Model {
        nodes: Vec::new(),
        tops: Vec::new(),
        stonith: false,
        quorum: true,
        properties: Vec::new(),
        rsc_defaults: Vec::new(),
        op_defaults: Vec::new(),
        constraints: Vec::new(),
        tickets: Vec::new(),
        features: BTreeSet::new(),
        status: String::new(),
    };
    gen_nodes(&mut rng, &mut model);
    gen_resources(&mut rng, &mut model);
    gen_properties(&mut rng, &mut model);
    super::constraints::generate(&mut rng, &mut model);
    model.status = history::status(&mut rng, &mut model);
    model
}

/// Generates the CIB of seed `seed`.
pub fn generate(seed: u64) -> Generated {
    let model = model(seed);
    let mut xml = String::with_capacity(16 * 1024);
    write_head(&mut xml, &model);
    write_resources(&mut xml, &model);
    xml.push_str("    <constraints>\n");
    for constraint in &model.constraints {
        let _ = writeln!(xml, "      {constraint}");
    }
    xml.push_str("    </constraints>\n");
    write_defaults(&mut xml, &model);
    xml.push_str("  </configuration>\n");
    xml.push_str(&model.status);
    xml.push_str("</cib>\n");
    Generated {
        xml,
        features: model.features,
    }
}

pub fn nvpair(owner: &str, name: &str, value: &str) -> String {
    format!(r#"<nvpair id="{owner}-{name}" name="{name}" value="{value}"/>"#)
}

fn write_head(xml: &mut String, model: &Model) {
    let _ = writeln!(
        xml,
        r#"<cib crm_feature_set="{}" validate-with="pacemaker-3.7" epoch="10" num_updates="0" admin_epoch="0" have-quorum="{}" dc-uuid="1">
  <configuration>
    <crm_config>
      <cluster_property_set id="cib-bootstrap-options">"#,
        history::FEATURE_SET,
        u8::from(model.quorum)
    );
    for (name, value) in &model.properties {
        let _ = writeln!(xml, "        {}", nvpair("opt", name, value));
    }
    xml.push_str("      </cluster_property_set>\n    </crm_config>\n    <nodes>\n");
    for node in &model.nodes {
        let owner = format!("nodes-{}", node.id);
        let _ = write!(
            xml,
            r#"      <node id="{}" uname="{}"><instance_attributes id="{owner}">{}"#,
            node.id,
            node.name,
            nvpair(&owner, "site", node.site)
        );
        match node.state {
            NodeState::Standby => xml.push_str(&nvpair(&owner, "standby", "on")),
            NodeState::Maintenance => xml.push_str(&nvpair(&owner, "maintenance", "on")),
            _ => {}
        }
        xml.push_str("</instance_attributes></node>\n");
    }
    xml.push_str("    </nodes>\n");
}

fn write_meta(xml: &mut String, owner: &str, meta: &[(&'static str, String)], indent: &str) {
    if meta.is_empty() {
        return;
    }
    let owner = format!("{owner}-meta");
    let _ = write!(xml, r#"{indent}<meta_attributes id="{owner}">"#);
    for (name, value) in meta {
        xml.push_str(&nvpair(&owner, name, value));
    }
    xml.push_str("</meta_attributes>\n");
}

fn write_ops(xml: &mut String, prim: &Prim, indent: &str) {
    let id = &prim.id;
    let on_fail = |value: Option<&str>| {
        value
            .map(|v| format!(r#" on-fail="{v}""#))
            .unwrap_or_default()
    };
    let _ = writeln!(xml, "{indent}<operations>");
    for (interval_s, role) in history::monitors(prim) {
        let role_attr = role.map(|r| format!(r#" role="{r}""#)).unwrap_or_default();
        // on-fail=demote is only allowed on the promoted monitor.
        let fail = match prim.monitor_on_fail {
            Some("demote") if role != Some("Promoted") => String::new(),
            other => on_fail(other),
        };
        let _ = writeln!(
            xml,
            r#"{indent}  <op id="{id}-monitor-{interval_s}s" name="monitor" interval="{interval_s}s" timeout="20s"{role_attr}{fail}/>"#
        );
    }
    if prim.stop_on_fail.is_some() {
        let _ = writeln!(
            xml,
            r#"{indent}  <op id="{id}-stop-0s" name="stop" interval="0s" timeout="20s"{}/>"#,
            on_fail(prim.stop_on_fail)
        );
    }
    let _ = writeln!(xml, "{indent}</operations>");
}

fn write_prim(xml: &mut String, prim: &Prim, indent: &str) {
    let (class, provider, kind) = match prim.agent {
        Agent::Dummy => ("ocf", Some("pacemaker"), "Dummy"),
        Agent::Stateful => ("ocf", Some("pacemaker"), "Stateful"),
        Agent::Fence => ("stonith", None, "fence_xvm"),
    };
    let provider = provider
        .map(|p| format!(r#" provider="{p}""#))
        .unwrap_or_default();
    let _ = writeln!(
        xml,
        r#"{indent}<primitive id="{}" class="{class}"{provider} type="{kind}">"#,
        prim.id
    );
    let inner = format!("{indent}  ");
    if !prim.params.is_empty() {
        let owner = format!("{}-params", prim.id);
        let _ = write!(xml, r#"{inner}<instance_attributes id="{owner}">"#);
        for (name, value) in &prim.params {
            xml.push_str(&nvpair(&owner, name, value));
        }
        xml.push_str("</instance_attributes>\n");
    }
    write_meta(xml, &prim.id, &prim.meta, &inner);
    write_ops(xml, prim, &inner);
    let _ = writeln!(xml, "{indent}</primitive>");
}

fn write_resources(xml: &mut String, model: &Model) {
    xml.push_str("    <resources>\n");
    for top in &model.tops {
        let (open, close) = match top.shape {
            Shape::Primitive => {
                write_prim(xml, &top.prims[0], "      ");
                continue;
            }
            Shape::Group => ("group", "group"),
            Shape::Clone | Shape::Promotable => ("clone", "clone"),
        };
        let _ = writeln!(xml, r#"      <{open} id="{}">"#, top.id);
        write_meta(xml, &top.id, &top.meta, "        ");
        for prim in &top.prims {
            write_prim(xml, prim, "        ");
        }
        let _ = writeln!(xml, "      </{close}>");
    }
    xml.push_str("    </resources>\n");
}

fn write_defaults(xml: &mut String, model: &Model) {
    for (element, values) in [
        ("rsc_defaults", &model.rsc_defaults),
        ("op_defaults", &model.op_defaults),
    ] {
        if values.is_empty() {
            continue;
        }
        let owner = format!("{element}-options");
        let _ = write!(xml, r#"    <{element}><meta_attributes id="{owner}">"#);
        for (name, value) in values {
            xml.push_str(&nvpair(&owner, name, value));
        }
        let _ = writeln!(xml, "</meta_attributes></{element}>");
    }
}
