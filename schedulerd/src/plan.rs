//! The daemon's only door into pengine: a CIB's text in, the transition graph (Pacemaker's
//! XML), the summary lines and the warning flags out. Every call into the `pengine` crate is
//! here, so that a change of its API touches this module alone.

use pengine::cib::{NvSet, Primitive, ResourceDef};

/// Which migration model the plan uses.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Models {
    /// Each resource's own (`migration-model` meta attribute, else its agent's default).
    AsConfigured,
    /// What Pacemaker itself would plan, which the guard compares with: every resource
    /// `two-phase`, and Highlander's recovery and shutdown policies off.
    PacemakerEquivalent,
}

/// pengine's answer for one input.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Plan {
    /// `<transition_graph transition_id="0" ...>` as Pacemaker writes it.
    pub graph_xml: String,
    /// The "Transition Summary" lines (`* Start rsc ( node )`), without the `* `.
    pub summary: Vec<String>,
    /// Resources whose open migration the atomic model is resolving, described.
    pub atomic_notes: Vec<String>,
    /// What the recovery policies and the node lifecycle rules decided (`rsc: text`).
    pub policy_notes: Vec<String>,
    /// The origin records the lifecycle rules want written (the executor's job).
    pub meta_writes: Vec<MetaWrite>,
}

/// Meta attributes of one resource to set or delete, and why.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct MetaWrite {
    pub rsc: String,
    pub set: Vec<(String, String)>,
    pub delete: Vec<String>,
    pub why: String,
}

fn meta_write(u: &pengine::lifecycle::Update) -> MetaWrite {
    use pengine::lifecycle::{ORIGIN_CAUSE, ORIGIN_NODE, ORIGIN_SINCE, Update};
    let names = [ORIGIN_NODE, ORIGIN_CAUSE, ORIGIN_SINCE];
    match u {
        Update::SetOrigin {
            rsc,
            node,
            cause,
            since,
        } => MetaWrite {
            rsc: rsc.clone(),
            set: names
                .iter()
                .map(|n| n.to_string())
                .zip([node.clone(), cause.clone(), since.to_string()])
                .collect(),
            delete: Vec::new(),
            why: u.to_string(),
        },
        Update::ClearOrigin { rsc, .. } => MetaWrite {
            rsc: rsc.clone(),
            set: Vec::new(),
            delete: names.iter().map(|n| n.to_string()).collect(),
            why: u.to_string(),
        },
    }
}

/// pengine could not plan this input.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum PlanError {
    #[error("pengine cannot read the CIB: {0}")]
    Cib(String),
    #[error("pengine does not support: {0}")]
    Unsupported(String),
}

/// A CIB pengine has read.
#[derive(Debug, Clone)]
pub struct Input {
    cib: pengine::Cib,
}

impl Input {
    /// A cluster option (`crm_config`), rules not evaluated.
    pub fn option(&self, name: &str) -> Option<&str> {
        self.cib.options.get(name).map(String::as_str)
    }

    /// The input's `execution-date`, if it has one.
    pub fn execution_date(&self) -> Option<i64> {
        self.cib.execution_date
    }

    /// What pengine noticed about the configuration (Pacemaker would log warnings).
    pub fn warnings(&self) -> Vec<String> {
        self.cib
            .diagnostics
            .iter()
            .map(|d| format!("<{} id=\"{}\">: {}", d.element, d.id, d.message))
            .collect()
    }
}

/// Reads the CIB `cib_xml`.
pub fn read(cib_xml: &str) -> Result<Input, PlanError> {
    let cib = pengine::parse_cib(cib_xml).map_err(|e| PlanError::Cib(e.to_string()))?;
    if !cib.unsupported.is_empty() {
        return Err(PlanError::Unsupported(cib.unsupported.join(", ")));
    }
    Ok(Input { cib })
}

/// Plans `input` at `now` (seconds since the epoch).
pub fn plan(input: &Input, now: i64, models: Models) -> Plan {
    let forced;
    let cib = match models {
        Models::AsConfigured => &input.cib,
        Models::PacemakerEquivalent => {
            let mut c = input.cib.clone();
            force_two_phase(&mut c.resources);
            strip_policies(&mut c);
            forced = c;
            &forced
        }
    };
    let t = pengine::schedule(cib, now);
    let graph_xml = pengine::graph::render_graph_xml(&t.observed, &t.graph);
    let summary = pengine::graph::summary_lines(&t.observed, &t.plan, &t.reconciliation, &t.graph)
        .into_iter()
        .map(|l| {
            let mut s = format!("{} {} ( {} )", l.verb, l.rsc, l.details);
            if !l.reason.is_empty() {
                s.push(' ');
                s.push_str(&l.reason);
            }
            s
        })
        .collect();
    let atomic_notes = t
        .atomic
        .entries
        .iter()
        .map(|e| {
            let id = &t.observed.resources[e.rsc].id;
            format!("{id}: {:?}, decision {:?}", e.location, e.decision)
        })
        .collect();
    let policy_notes = t
        .recovery
        .iter()
        .map(|n| format!("{}: {}", n.rsc, n.text))
        .chain(t.lifecycle.iter().map(|n| format!("{}: {}", n.rsc, n.text)))
        .collect();
    let meta_writes = pengine::lifecycle::updates(cib, &t.observed)
        .iter()
        .map(meta_write)
        .collect();
    Plan {
        graph_xml,
        summary,
        atomic_notes,
        policy_notes,
        meta_writes,
    }
}

/// Highlander's policy attributes (meta attributes, `rsc_defaults`, cluster properties), which
/// Pacemaker ignores: the Pacemaker-equivalent plan drops them.
const POLICY_ATTRIBUTES: &[&str] = &[
    pengine::recovery::RESTARTS,
    pengine::recovery::RELOCATIONS,
    pengine::lifecycle::SHUTDOWN_POLICY,
    pengine::lifecycle::FAILBACK,
    pengine::lifecycle::ORIGIN_NODE,
    pengine::lifecycle::ORIGIN_CAUSE,
    pengine::lifecycle::ORIGIN_SINCE,
];

fn strip_policies(cib: &mut pengine::Cib) {
    let strip = |sets: &mut Vec<NvSet>| {
        for set in sets {
            set.pairs
                .retain(|(k, _)| !POLICY_ATTRIBUTES.contains(&k.as_str()));
        }
    };
    strip(&mut cib.rsc_defaults);
    strip(&mut cib.option_sets);
    cib.options
        .retain(|k, _| !POLICY_ATTRIBUTES.contains(&k.as_str()));
    for r in &mut cib.resources {
        match r {
            ResourceDef::Primitive(p) => strip(&mut p.meta),
            ResourceDef::Group(g) => {
                strip(&mut g.meta);
                g.members.iter_mut().for_each(|p| strip(&mut p.meta));
            }
            ResourceDef::Clone(c) => {
                strip(&mut c.meta);
                strip(&mut c.child.meta);
                if let Some(g) = &mut c.group {
                    strip(&mut g.meta);
                    g.members.iter_mut().for_each(|p| strip(&mut p.meta));
                }
            }
            ResourceDef::Bundle(_) => {}
        }
    }
}

/// The name of the meta-attribute set the guard puts first in every primitive.
const GUARD_SET: &str = "highlander-guard-two-phase";

fn force_two_phase(resources: &mut [ResourceDef]) {
    for r in resources {
        match r {
            ResourceDef::Primitive(p) => force_primitive(p),
            ResourceDef::Group(g) => g.members.iter_mut().for_each(force_primitive),
            ResourceDef::Clone(c) => {
                force_primitive(&mut c.child);
                if let Some(g) = &mut c.group {
                    g.members.iter_mut().for_each(force_primitive);
                }
            }
            // Bundles hold containers and remote connections: never live-migrated VMs.
            ResourceDef::Bundle(_) => {}
        }
    }
}

fn force_primitive(p: &mut Primitive) {
    let top = p.meta.iter().map(|s| s.score).max().unwrap_or(0);
    p.meta.insert(
        0,
        NvSet {
            id: GUARD_SET.to_string(),
            score: top.saturating_add(1).max(1_000_000),
            rules: Vec::new(),
            pairs: vec![(
                pengine::atomic::MIGRATION_MODEL_META.to_string(),
                pengine::atomic::MigrationModel::TwoPhase
                    .as_str()
                    .to_string(),
            )],
        },
    );
}

/// Puts `id` in the graph's `transition_id` (pengine always writes 0; Pacemaker counts its
/// transitions from 0 for the life of the daemon, and the controller keys its actions on it).
pub fn with_transition_id(graph_xml: &str, id: u64) -> String {
    graph_xml.replacen(
        " transition_id=\"0\"",
        &format!(" transition_id=\"{id}\""),
        1,
    )
}
