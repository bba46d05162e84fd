//! Comparing a candidate's output with the corpus' expected files, each normalised as the
//! corpus README says: summaries and scores ignoring all whitespace and blank lines (scores
//! sorted), DOT with its body lines sorted and de-duplicated, and transition graphs
//! structurally (see [`canonical_graph`]).

use quick_xml::events::{BytesStart, Event};
use std::collections::{BTreeMap, BTreeSet};

/// How many differing items a failure message quotes.
const QUOTED: usize = 3;
/// How long a quoted item may be.
const QUOTED_CHARS: usize = 240;

/// A line with every whitespace character removed, as `diff --ignore-all-space` sees it.
fn squeeze(line: &str) -> String {
    line.chars().filter(|c| !c.is_whitespace()).collect()
}

/// The non-blank lines of `text`, squeezed, with their 1-based line numbers.
fn squeezed_lines(text: &str) -> Vec<(usize, String)> {
    text.lines()
        .enumerate()
        .map(|(i, line)| (i + 1, squeeze(line)))
        .filter(|(_, line)| !line.is_empty())
        .collect()
}

fn quote(text: &str, line: usize) -> String {
    text.lines()
        .nth(line.saturating_sub(1))
        .unwrap_or_default()
        .trim()
        .to_string()
}

/// Compares two summaries as `diff --ignore-all-space --ignore-blank-lines` does: `Ok` when
/// equal, else the first difference.
pub fn compare_summary(expected: &str, actual: &str) -> Result<(), String> {
    let want = squeezed_lines(expected);
    let got = squeezed_lines(actual);
    for (index, pair) in want.iter().zip(&got).enumerate() {
        let ((want_line, want_text), (got_line, got_text)) = pair;
        if want_text != got_text {
            return Err(format!(
                "line {index_plus} differs: expected (line {want_line}) `{}`, got (line {got_line}) `{}`",
                quote(expected, *want_line),
                quote(actual, *got_line),
                index_plus = index + 1,
            ));
        }
    }
    match want.len().cmp(&got.len()) {
        std::cmp::Ordering::Equal => Ok(()),
        std::cmp::Ordering::Greater => {
            let (line, _) = &want[got.len()];
            Err(format!(
                "output ends early: expected {} more lines from (line {line}) `{}`",
                want.len() - got.len(),
                quote(expected, *line)
            ))
        }
        std::cmp::Ordering::Less => {
            let (line, _) = &got[want.len()];
            Err(format!(
                "{} extra lines from (line {line}) `{}`",
                got.len() - want.len(),
                quote(actual, *line)
            ))
        }
    }
}

/// Items of `want` missing from `got` and items of `got` not in `want`, both sorted (multisets).
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

/// At most [`QUOTED_CHARS`] characters of `item`.
fn clip(item: &str) -> String {
    match item.char_indices().nth(QUOTED_CHARS) {
        Some((cut, _)) => format!("{}...", &item[..cut]),
        None => item.to_string(),
    }
}

fn describe_difference(what: &str, missing: &[String], extra: &[String]) -> String {
    let mut msg = format!(
        "{what}: {} missing, {} unexpected",
        missing.len(),
        extra.len()
    );
    for item in missing.iter().take(QUOTED) {
        msg.push_str(&format!("; missing `{}`", clip(item)));
    }
    for item in extra.iter().take(QUOTED) {
        msg.push_str(&format!("; unexpected `{}`", clip(item)));
    }
    msg
}

/// Compares placement scores: non-blank lines without whitespace, in any order (the corpus
/// stores them sorted; the candidate prints them in its own order).
pub fn compare_scores(expected: &str, actual: &str) -> Result<(), String> {
    let lines =
        |text: &str| -> Vec<String> { squeezed_lines(text).into_iter().map(|(_, l)| l).collect() };
    let (missing, extra) = multiset_difference(lines(expected), lines(actual));
    if missing.is_empty() && extra.is_empty() {
        Ok(())
    } else {
        Err(describe_difference("scores differ", &missing, &extra))
    }
}

/// Compares DOT graphs: the first and last lines as they are, the body lines between them as a
/// set (sorted, duplicates dropped), all without whitespace.
pub fn compare_dot(expected: &str, actual: &str) -> Result<(), String> {
    fn parts(text: &str) -> (Vec<String>, BTreeSet<String>) {
        let lines: Vec<String> = squeezed_lines(text).into_iter().map(|(_, l)| l).collect();
        if lines.len() < 2 {
            return (lines, BTreeSet::new());
        }
        let ends = vec![lines[0].clone(), lines[lines.len() - 1].clone()];
        (ends, lines[1..lines.len() - 1].iter().cloned().collect())
    }
    let (want_ends, want_body) = parts(expected);
    let (got_ends, got_body) = parts(actual);
    if want_ends != got_ends {
        return Err(format!(
            "DOT header/trailer differ: expected {want_ends:?}, got {got_ends:?}"
        ));
    }
    let missing: Vec<String> = want_body.difference(&got_body).cloned().collect();
    let extra: Vec<String> = got_body.difference(&want_body).cloned().collect();
    if missing.is_empty() && extra.is_empty() {
        Ok(())
    } else {
        Err(describe_difference("DOT lines differ", &missing, &extra))
    }
}

/// An XML element with its attributes (in document order) and child elements; text is dropped
/// (transition graphs carry none).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Element {
    pub name: String,
    pub attrs: Vec<(String, String)>,
    pub children: Vec<Element>,
}

impl Element {
    pub fn attr(&self, key: &str) -> Option<&str> {
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
pub fn parse_xml(xml: &str) -> Result<Element, String> {
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
pub struct CanonicalGraph {
    pub root: String,
    pub synapses: Vec<String>,
}

/// Attributes deleted from graphs before comparing, wherever they appear (the corpus' README).
const IGNORED_ATTRIBUTES: &[&str] = &["crm_feature_set", "batch-limit"];

/// Attributes a trigger reference shares with the action it names.
const REFERENCE_KEYS: &[&str] = &["operation", "operation_key", "on_node", "on_node_uuid"];

pub fn canonical_graph(xml: &str) -> Result<CanonicalGraph, String> {
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

/// Compares two transition graphs structurally (see [`CanonicalGraph`]).
pub fn compare_graph(expected: &str, actual: &str) -> Result<(), String> {
    let want = canonical_graph(expected).map_err(|e| format!("expected graph: {e}"))?;
    let got = canonical_graph(actual).map_err(|e| format!("candidate graph: {e}"))?;
    if want.root != got.root {
        return Err(format!(
            "graph attributes differ: expected {}, got {}",
            want.root, got.root
        ));
    }
    let (missing, extra) = multiset_difference(want.synapses, got.synapses);
    if missing.is_empty() && extra.is_empty() {
        Ok(())
    } else {
        Err(describe_difference("synapses differ", &missing, &extra))
    }
}
