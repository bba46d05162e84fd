//! Resource templates: `<template>` in `<resources>` and `<primitive template="...">` expanded
//! into a plain primitive element as Pacemaker 2.1.5 does before unpacking it.
//!
//! The rule (Pacemaker's `unpack_template`): the primitive becomes a copy of the template (its
//! attributes: class, provider, type) renamed to the primitive's id, with the primitive's own
//! child elements after the template's. When both have `<operations>`, the template's operations
//! element goes away and each template op is added to the primitive's operations unless the
//! primitive has an op with the same name and role (no role, Started, Slave and Unpromoted count
//! as the same role). Attribute sets of equal score are resolved by Pacemaker with the last listed
//! set first, so the primitive's own values win over the template's; `observed::merge_sets` gives
//! the first listed set precedence, so the expanded element lists the primitive's own attribute
//! sets before the template's (the outcome is Pacemaker's).
//!
//! Templates are not resources: they are not placed, and a constraint naming one applies to every
//! primitive made from it (`sets`).

use std::collections::BTreeMap;

use super::Element;

/// The attribute-set elements whose precedence is by score, then listing (see module doc).
const ATTRIBUTE_SETS: [&str; 3] = ["meta_attributes", "instance_attributes", "utilization"];

/// The templates of a `<resources>` section by id, in configuration order of first appearance.
pub(crate) fn collect(resources: &Element) -> BTreeMap<String, &Element> {
    let mut out = BTreeMap::new();
    for t in resources.children_named("template") {
        if !t.id().is_empty() {
            out.entry(t.id().to_string()).or_insert(t);
        }
    }
    out
}

/// Why a primitive's template reference cannot be expanded.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum TemplateError {
    /// The primitive names itself as its template.
    SelfReference(String),
    /// No `<template>` has this id.
    Missing(String),
}

impl std::fmt::Display for TemplateError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            TemplateError::SelfReference(t) => {
                write!(f, "primitive names itself ({t}) as template")
            }
            TemplateError::Missing(t) => write!(f, "no template named {t}"),
        }
    }
}

/// Pacemaker's key for matching a primitive's op against a template's: name and role, with the
/// roles that mean "any started role" folded into one.
fn op_key(op: &Element) -> (String, String) {
    let role = match op.attr("role") {
        None => String::new(),
        Some(r)
            if ["Started", "Slave", "Unpromoted"]
                .iter()
                .any(|s| s.eq_ignore_ascii_case(r)) =>
        {
            String::new()
        }
        Some(r) => r.to_string(),
    };
    (op.attr("name").unwrap_or("").to_string(), role)
}

/// The primitive element `primitive` expands to: itself when it names no template, else the
/// template's copy described in the module doc.
pub(crate) fn expand(
    primitive: &Element,
    templates: &BTreeMap<String, &Element>,
) -> Result<Option<Element>, TemplateError> {
    let Some(name) = primitive.attr("template") else {
        return Ok(None);
    };
    if name == primitive.id() {
        return Err(TemplateError::SelfReference(name.to_string()));
    }
    let Some(template) = templates.get(name) else {
        return Err(TemplateError::Missing(name.to_string()));
    };
    let mut out = Element {
        name: primitive.name.clone(),
        attrs: template.attrs.clone(),
        children: Vec::new(),
        line: primitive.line,
    };
    out.set_attr("id", primitive.id());
    // Own attribute sets first (precedence, see module doc), then the template's children, then
    // the primitive's other children.
    let is_set = |c: &&Element| ATTRIBUTE_SETS.contains(&c.name.as_str());
    out.children
        .extend(primitive.children.iter().filter(is_set).cloned());
    let own_ops = primitive.child("operations");
    for c in &template.children {
        if c.name == "operations" && own_ops.is_some() {
            continue;
        }
        out.children.push(c.clone());
    }
    for c in primitive.children.iter().filter(|c| !is_set(c)) {
        let mut c = c.clone();
        if c.name == "operations" {
            if let Some(template_ops) = template.child("operations") {
                let own: Vec<(String, String)> = c.children.iter().map(op_key).collect();
                let added: Vec<Element> = template_ops
                    .children
                    .iter()
                    .filter(|op| !own.contains(&op_key(op)))
                    .cloned()
                    .collect();
                c.children.extend(added);
            }
        }
        out.children.push(c);
    }
    Ok(Some(out))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::cib::parse_xml;

    fn resources(xml: &str) -> Element {
        parse_xml(xml).expect("valid xml")
    }

    #[test]
    fn primitive_takes_the_template_agent_and_its_own_id() {
        let res = resources(
            r#"<resources><template id="t" class="ocf" provider="pacemaker" type="Dummy"/>
<primitive id="p" template="t"/></resources>"#,
        );
        let templates = collect(&res);
        let p = &res.children[1];
        let out = expand(p, &templates)
            .expect("expands")
            .expect("has a template");
        assert_eq!(out.name, "primitive");
        assert_eq!(out.attr("id"), Some("p"));
        assert_eq!(out.attr("class"), Some("ocf"));
        assert_eq!(out.attr("provider"), Some("pacemaker"));
        assert_eq!(out.attr("type"), Some("Dummy"));
        assert_eq!(out.line, p.line);
    }

    #[test]
    fn template_ops_are_added_unless_the_primitive_has_the_same_name_and_role() {
        // Pacemaker's rule: monitor with role Started matches a template monitor without role;
        // a Stopped-role monitor does not.
        let res = resources(
            r#"<resources><template id="t" class="ocf" provider="pacemaker" type="Dummy">
<operations><op id="t-mon" name="monitor" interval="5"/><op id="t-start" name="start" interval="0" timeout="20"/></operations></template>
<primitive id="a" template="t"><operations><op id="a-mon" name="monitor" interval="10" role="Started"/></operations></primitive>
<primitive id="b" template="t"><operations><op id="b-mon" name="monitor" interval="30" role="Stopped"/></operations></primitive>
<primitive id="c" template="t"/></resources>"#,
        );
        let templates = collect(&res);
        let ops_of = |i: usize| -> Vec<String> {
            let out = expand(&res.children[i], &templates).unwrap().unwrap();
            let ops: Vec<&Element> = out.children_named("operations").collect();
            assert_eq!(ops.len(), 1, "one operations element");
            ops[0].children.iter().map(|o| o.id().to_string()).collect()
        };
        assert_eq!(ops_of(1), ["a-mon", "t-start"]);
        assert_eq!(ops_of(2), ["b-mon", "t-mon", "t-start"]);
        assert_eq!(ops_of(3), ["t-mon", "t-start"]);
    }

    #[test]
    fn own_attribute_sets_take_precedence_over_the_template() {
        let res = resources(
            r#"<resources><template id="t" class="ocf" provider="pacemaker" type="Dummy">
<meta_attributes id="t-meta"><nvpair id="t-tr" name="target-role" value="Stopped"/></meta_attributes></template>
<primitive id="p" template="t"><meta_attributes id="p-meta"><nvpair id="p-tr" name="target-role" value="Started"/></meta_attributes></primitive></resources>"#,
        );
        let templates = collect(&res);
        let out = expand(&res.children[1], &templates).unwrap().unwrap();
        let mut meta = BTreeMap::new();
        let sets: Vec<crate::cib::NvSet> = out
            .children_named("meta_attributes")
            .map(|s| crate::cib::NvSet {
                id: s.id().to_string(),
                score: 0,
                rules: Vec::new(),
                pairs: s
                    .children
                    .iter()
                    .map(|n| {
                        (
                            n.attr("name").unwrap_or("").to_string(),
                            n.attr("value").unwrap_or("").to_string(),
                        )
                    })
                    .collect(),
            })
            .collect();
        crate::observed::merge_sets(&mut meta, &sets, 0, None);
        assert_eq!(meta.get("target-role").map(String::as_str), Some("Started"));
    }

    #[test]
    fn missing_and_self_templates_are_errors() {
        let res = resources(
            r#"<resources><primitive id="p" template="nope"/><primitive id="q" template="q"/></resources>"#,
        );
        let templates = collect(&res);
        assert!(matches!(
            expand(&res.children[0], &templates),
            Err(TemplateError::Missing(t)) if t == "nope"
        ));
        assert!(matches!(
            expand(&res.children[1], &templates),
            Err(TemplateError::SelfReference(t)) if t == "q"
        ));
    }
}
