//! The shrinker: removes elements of a differing CIB (constraints, history entries, node
//! attributes, meta attributes, resources, nodes) one at a time, keeping each removal after
//! which crm_verify still accepts the CIB and the chosen check still differs, until no single
//! removal keeps the difference alive.

use super::compare::{Element, parse_xml};
use super::run::{Check, Tool, Verdict, judge};
use std::path::Path;

/// Elements the shrinker tries to remove, most specific first.
const REMOVABLE: &[&str] = &[
    "rsc_location",
    "rsc_colocation",
    "rsc_order",
    "rsc_ticket",
    "resource_ref",
    "ticket_state",
    "lrm_rsc_op",
    "lrm_resource",
    "nvpair",
    "op",
    "meta_attributes",
    "instance_attributes",
    "transient_attributes",
    "rsc_defaults",
    "op_defaults",
    "primitive",
    "group",
    "clone",
    "node_state",
    "node",
];

fn escape(value: &str) -> String {
    value
        .replace('&', "&amp;")
        .replace('<', "&lt;")
        .replace('>', "&gt;")
        .replace('"', "&quot;")
}

/// Writes an element back as XML, one element a line.
pub fn write_xml(element: &Element, depth: usize, out: &mut String) {
    let indent = "  ".repeat(depth);
    out.push_str(&indent);
    out.push('<');
    out.push_str(&element.name);
    for (k, v) in &element.attrs {
        out.push_str(&format!(" {k}=\"{}\"", escape(v)));
    }
    if element.children.is_empty() {
        out.push_str("/>\n");
        return;
    }
    out.push_str(">\n");
    for child in &element.children {
        write_xml(child, depth + 1, out);
    }
    out.push_str(&format!("{indent}</{}>\n", element.name));
}

/// Paths (child indexes from the root) of every removable element, in document order.
fn removable_paths(element: &Element, path: &mut Vec<usize>, out: &mut Vec<Vec<usize>>) {
    for (i, child) in element.children.iter().enumerate() {
        path.push(i);
        if REMOVABLE.contains(&child.name.as_str()) {
            out.push(path.clone());
        }
        removable_paths(child, path, out);
        path.pop();
    }
}

/// A copy of `root` without the element at `path` (and with a node's state removed with it).
fn without(root: &Element, path: &[usize]) -> Element {
    let mut copy = root.clone();
    let mut parent = &mut copy;
    for &i in &path[..path.len() - 1] {
        parent = &mut parent.children[i];
    }
    parent.children.remove(path[path.len() - 1]);
    copy
}

/// What the shrinker checks: `Ok(true)` when the CIB is valid and `check` still differs.
pub fn still_differs(candidate: &Tool, cib: &Path, check: Check) -> Result<bool, String> {
    let artifacts = check != Check::Summary;
    Ok(match judge(candidate, cib, artifacts)? {
        Verdict::Invalid(_) => false,
        Verdict::Compared(checks) => checks.get(&check).is_some_and(Option::is_some),
    })
}

/// Reduces `xml` while `check` differs; returns the smallest CIB found and how many
/// candidates were tried. `scratch` is a file the candidates are written to.
pub fn shrink(
    candidate: &Tool,
    xml: &str,
    check: Check,
    scratch: &Path,
) -> Result<(String, usize), String> {
    let mut root = parse_xml(xml)?;
    let mut tried = 0;
    let mut progress = true;
    while progress {
        progress = false;
        let mut paths = Vec::new();
        removable_paths(&root, &mut Vec::new(), &mut paths);
        // From the end: removing a later element leaves earlier paths valid.
        for path in paths.iter().rev() {
            let smaller = without(&root, path);
            let mut text = String::new();
            write_xml(&smaller, 0, &mut text);
            std::fs::write(scratch, &text).map_err(|e| format!("{}: {e}", scratch.display()))?;
            tried += 1;
            if still_differs(candidate, scratch, check)? {
                root = smaller;
                progress = true;
            }
        }
    }
    let mut text = String::new();
    write_xml(&root, 0, &mut text);
    Ok((text, tried))
}
