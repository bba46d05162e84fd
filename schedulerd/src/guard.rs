//! The guard: Pacemaker's own answer for an input (`crm_simulate -x INPUT -G GRAPH -Q`, run on
//! the saved input; Pacemaker's scheduler, not ours) and the structural comparison of two
//! transition graphs (synapses as a multiset of action + inputs; ids, `transition_id`,
//! `crm_feature_set` and `batch-limit` ignored).

use quick_xml::events::{BytesStart, Event};
use std::collections::BTreeMap;
use std::path::Path;
use std::process::Command;

/// How the daemon answers (cluster property `highlander-scheduler-mode`, else the config file).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Mode {
    /// Highlander's plan when pengine's two-phase plan equals Pacemaker's; else Pacemaker's.
    #[default]
    Guarded,
    /// Always Pacemaker's graph; differences are only logged and counted.
    Shadow,
    /// Highlander's plan without asking Pacemaker.
    Trusted,
}

impl Mode {
    pub fn parse(v: &str) -> Option<Mode> {
        match v.trim().to_ascii_lowercase().as_str() {
            "guarded" => Some(Mode::Guarded),
            "shadow" => Some(Mode::Shadow),
            "trusted" => Some(Mode::Trusted),
            _ => None,
        }
    }

    pub fn as_str(self) -> &'static str {
        match self {
            Mode::Guarded => "guarded",
            Mode::Shadow => "shadow",
            Mode::Trusted => "trusted",
        }
    }
}

/// Pacemaker's scheduler could not answer.
#[derive(Debug, thiserror::Error)]
pub enum OracleError {
    #[error("cannot run {program}: {error}")]
    Spawn {
        program: String,
        error: std::io::Error,
    },
    #[error("{program} failed ({status}): {stderr}")]
    Failed {
        program: String,
        status: String,
        stderr: String,
    },
    #[error("cannot read the graph {program} wrote: {0}", program = "crm_simulate")]
    Read(std::io::Error),
}

/// Pacemaker's transition graph for the saved input `input` (`crm_simulate -x input -G out -Q`).
pub fn pacemaker_graph(
    crm_simulate: &Path,
    input: &Path,
    scratch: &Path,
) -> Result<String, OracleError> {
    let out = scratch.join("pacemaker-graph.xml");
    let _ = std::fs::remove_file(&out);
    let program = crm_simulate.display().to_string();
    let result = Command::new(crm_simulate)
        .arg("-x")
        .arg(input)
        .arg("-G")
        .arg(&out)
        .arg("-Q")
        .env("PCMK_logfile", "/dev/null")
        .env("PCMK_debug", "no")
        .output()
        .map_err(|error| OracleError::Spawn {
            program: program.clone(),
            error,
        })?;
    if !result.status.success() {
        return Err(OracleError::Failed {
            program,
            status: result.status.to_string(),
            stderr: String::from_utf8_lossy(&result.stderr).trim().to_string(),
        });
    }
    std::fs::read_to_string(&out).map_err(OracleError::Read)
}

/// Compares two graphs structurally; the differing synapses (first few) when they differ.
pub fn compare(pacemaker: &str, ours: &str) -> Result<(), String> {
    let want = canonical_graph(pacemaker).map_err(|e| format!("Pacemaker's graph: {e}"))?;
    let got = canonical_graph(ours).map_err(|e| format!("pengine's graph: {e}"))?;
    if want.root != got.root {
        return Err(format!(
            "graph attributes differ: Pacemaker {}, pengine {}",
            want.root, got.root
        ));
    }
    let (missing, extra) = multiset_difference(want.synapses, got.synapses);
    if missing.is_empty() && extra.is_empty() {
        return Ok(());
    }
    let clip = |v: &[String]| {
        v.iter()
            .take(3)
            .map(|s| s.chars().take(240).collect::<String>())
            .collect::<Vec<_>>()
            .join(" | ")
    };
    Err(format!(
        "{} synapse(s) only Pacemaker's: {}; {} only pengine's: {}",
        missing.len(),
        clip(&missing),
        extra.len(),
        clip(&extra)
    ))
}

fn multiset_difference(mut want: Vec<String>, mut got: Vec<String>) -> (Vec<String>, Vec<String>) {
    want.sort();
    got.sort();
    let (mut missing, mut extra) = (Vec::new(), Vec::new());
    let (mut w, mut g) = (want.into_iter().peekable(), got.into_iter().peekable());
    loop {
        match (w.peek(), g.peek()) {
            (None, None) => break,
            (Some(_), None) => missing.extend(w.by_ref()),
            (None, Some(_)) => extra.extend(g.by_ref()),
            (Some(a), Some(b)) => match a.cmp(b) {
                std::cmp::Ordering::Equal => {
                    w.next();
                    g.next();
                }
                std::cmp::Ordering::Less => missing.extend(w.next()),
                std::cmp::Ordering::Greater => extra.extend(g.next()),
            },
        }
    }
    (missing, extra)
}

/// An XML element with its attributes (in document order) and child elements; text is dropped
/// (transition graphs carry none).
#[derive(Clone, Debug, PartialEq, Eq)]
struct Element {
    name: String,
    attrs: Vec<(String, String)>,
    children: Vec<Element>,
}

impl Element {
    fn attr(&self, key: &str) -> Option<&str> {
        self.attrs
            .iter()
            .find(|(k, _)| k == key)
            .map(|(_, v)| v.as_str())
    }

    /// One line: `name{k="v",...}[child;child]`, attributes sorted, minus those in `drop`.
    fn canonical(&self, drop: &[&str]) -> String {
        let attrs: BTreeMap<&str, &str> = self
            .attrs
            .iter()
            .filter(|(k, _)| {
                !drop.contains(&k.as_str()) && !IGNORED_ATTRIBUTES.contains(&k.as_str())
            })
            .map(|(k, v)| (k.as_str(), v.as_str()))
            .collect();
        let attrs: Vec<String> = attrs.iter().map(|(k, v)| format!("{k}={v:?}")).collect();
        let children: Vec<String> = self.children.iter().map(|c| c.canonical(&[])).collect();
        format!(
            "{}{{{}}}[{}]",
            self.name,
            attrs.join(","),
            children.join(";")
        )
    }
}

fn start_element(start: &BytesStart<'_>) -> Result<Element, String> {
    let name = String::from_utf8_lossy(start.name().as_ref()).into_owned();
    let mut attrs = Vec::new();
    for attr in start.attributes() {
        let attr = attr.map_err(|e| format!("<{name}>: bad attribute: {e}"))?;
        let key = String::from_utf8_lossy(attr.key.as_ref()).into_owned();
        let value = attr
            .unescape_value()
            .map_err(|e| format!("<{name} {key}>: bad value: {e}"))?
            .into_owned();
        attrs.push((key, value));
    }
    Ok(Element {
        name,
        attrs,
        children: Vec::new(),
    })
}

/// Parses an XML document into its root element.
fn parse_xml(xml: &str) -> Result<Element, String> {
    let mut reader = quick_xml::Reader::from_str(xml);
    let mut stack: Vec<Element> = Vec::new();
    loop {
        let event = reader
            .read_event()
            .map_err(|e| format!("XML error at byte {}: {e}", reader.buffer_position()))?;
        match event {
            Event::Start(start) => stack.push(start_element(&start)?),
            Event::Empty(start) => {
                let element = start_element(&start)?;
                match stack.last_mut() {
                    Some(parent) => parent.children.push(element),
                    None => return Ok(element),
                }
            }
            Event::End(_) => {
                let element = stack.pop().ok_or("unbalanced end tag")?;
                match stack.last_mut() {
                    Some(parent) => parent.children.push(element),
                    None => return Ok(element),
                }
            }
            Event::Eof => return Err("no root element (empty or truncated document)".into()),
            _ => {}
        }
    }
}

/// A transition graph reduced to what it means: the root's attributes without
/// `crm_feature_set` and `batch-limit`, and the synapses as a sorted list, each rendered as its
/// priority, its action and its sorted inputs. Synapse ids and action ids are dropped: they are
/// arbitrary numbers, and actions are identified by their operation key and node (the trigger
/// references carry both). [`canonical_graph`] checks that each trigger id the candidate uses
/// names an action with the same key and node, so the ids it prints are consistent too.
#[derive(Clone, Debug, PartialEq, Eq)]
struct CanonicalGraph {
    root: String,
    synapses: Vec<String>,
}

/// Attributes deleted from graphs before comparing, wherever they appear (the corpus' README).
const IGNORED_ATTRIBUTES: &[&str] = &["crm_feature_set", "batch-limit", "transition_id"];

/// Attributes a trigger reference shares with the action it names.
const REFERENCE_KEYS: &[&str] = &["operation", "operation_key", "on_node", "on_node_uuid"];

fn canonical_graph(xml: &str) -> Result<CanonicalGraph, String> {
    let root = parse_xml(xml)?;
    if root.name != "transition_graph" {
        return Err(format!(
            "root element is <{}>, not <transition_graph>",
            root.name
        ));
    }
    let mut actions_by_id: BTreeMap<String, &Element> = BTreeMap::new();
    let mut synapses = Vec::new();
    let mut references = Vec::new();
    for synapse in &root.children {
        if synapse.name != "synapse" {
            return Err(format!(
                "unexpected <{}> in <transition_graph>",
                synapse.name
            ));
        }
        let mut action = None;
        let mut inputs = Vec::new();
        for part in &synapse.children {
            match part.name.as_str() {
                "action_set" => {
                    for a in &part.children {
                        if let Some(id) = a.attr("id") {
                            actions_by_id.insert(id.to_string(), a);
                        }
                        action = Some(a.canonical(&["id"]));
                    }
                    if part.children.len() != 1 {
                        return Err(format!(
                            "synapse {:?}: action_set holds {} actions, not one",
                            synapse.attr("id"),
                            part.children.len()
                        ));
                    }
                }
                "inputs" => {
                    for trigger in &part.children {
                        for reference in &trigger.children {
                            references.push(reference);
                            inputs.push(format!(
                                "{}>{}",
                                trigger.name,
                                reference.canonical(&["id"])
                            ));
                        }
                    }
                }
                other => {
                    return Err(format!(
                        "synapse {:?}: unexpected <{other}>",
                        synapse.attr("id")
                    ));
                }
            }
        }
        let action =
            action.ok_or_else(|| format!("synapse {:?}: no action", synapse.attr("id")))?;
        inputs.sort();
        let mut head: Vec<String> = synapse
            .attrs
            .iter()
            .filter(|(k, _)| k != "id")
            .map(|(k, v)| format!("{k}={v:?}"))
            .collect();
        head.sort();
        synapses.push(format!(
            "synapse{{{}}} {action} <- [{}]",
            head.join(","),
            inputs.join(", ")
        ));
    }
    for reference in references {
        let Some(id) = reference.attr("id") else {
            continue;
        };
        if let Some(action) = actions_by_id.get(id) {
            for key in REFERENCE_KEYS {
                if reference.attr(key) != action.attr(key) {
                    return Err(format!(
                        "trigger id {id} names {:?} but action {id} is {:?}",
                        reference.attr("operation_key"),
                        action.attr("operation_key")
                    ));
                }
            }
        }
    }
    synapses.sort();
    let mut root_attrs: Vec<String> = root
        .attrs
        .iter()
        .filter(|(k, _)| !IGNORED_ATTRIBUTES.contains(&k.as_str()))
        .map(|(k, v)| format!("{k}={v:?}"))
        .collect();
    root_attrs.sort();
    Ok(CanonicalGraph {
        root: root_attrs.join(","),
        synapses,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    const G: &str = r#"<transition_graph cluster-delay="60s" transition_id="0"><synapse id="0"><action_set><rsc_op id="3" operation="start" operation_key="a_start_0" on_node="n1"/></action_set><inputs/></synapse></transition_graph>"#;

    #[test]
    fn ids_and_transition_ids_do_not_count() {
        let other = G
            .replace("transition_id=\"0\"", "transition_id=\"9\"")
            .replace("id=\"3\"", "id=\"5\"");
        assert_eq!(compare(G, &other), Ok(()));
    }

    #[test]
    fn a_different_action_counts() {
        let other = G.replace("on_node=\"n1\"", "on_node=\"n2\"");
        assert!(compare(G, &other).is_err());
        assert!(compare(G, "<transition_graph").is_err());
    }

    #[test]
    fn modes_parse() {
        assert_eq!(Mode::parse(" Shadow "), Some(Mode::Shadow));
        assert_eq!(Mode::parse("x"), None);
    }
}
