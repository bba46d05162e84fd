//! Renders an [`AgentSpec`] as OCF meta-data XML (two profiles) and as Markdown docs.
//!
//! The three validators in use disagree (the README's "two documents, on purpose"; the
//! schemas are in `testdata/ocf-1.1/` and resource-agents' `/usr/share/resource-agents/`):
//! `ra-api-1.dtd` (what `ocf-tester` checks) forbids `reloadable`, `select`, `<deprecated>` and
//! the `reload-agent` action, while Pacemaker only calls `reload-agent` when the meta-data
//! advertises it with `<version>1.1</version>` and marks parameters `reloadable`. So there are two
//! documents, chosen by who asks:
//! - [`MetadataProfile::Portable`]: valid against the DTD, `metadata.rng` and the OCF 1.1 schema.
//!   Given to callers that do not say they speak OCF 1.1 (`ocf-tester`, old tools).
//! - [`MetadataProfile::Ocf11`]: valid against the OCF 1.1 schema; adds `reloadable`, `select`
//!   options, `<deprecated>`, the `reload-agent` action and the spec's `<special>` block. Given when `OCF_RA_VERSION_MAJOR/MINOR`
//!   say 1.1 or later, as Pacemaker's controller and `crm_resource` do.

use quick_xml::Writer;
use quick_xml::events::{BytesDecl, BytesEnd, BytesStart, BytesText, Event};

use crate::{Action, AgentSpec, ParamType};

/// Which meta-data document to render.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum MetadataProfile {
    /// Valid against `ra-api-1.dtd`, `metadata.rng` and OCF 1.1's `ra-api.rng`.
    Portable,
    /// OCF 1.1 in full: `reloadable`, `select`, `deprecated`, `reload-agent`.
    Ocf11,
}

const DOCTYPE: &str = "resource-agent SYSTEM \"ra-api-1.dtd\"";

type W = Writer<Vec<u8>>;

fn start(w: &mut W, name: &str, attrs: &[(&str, &str)]) {
    let mut e = BytesStart::new(name);
    for (k, v) in attrs {
        e.push_attribute((*k, *v));
    }
    // Writing into a Vec cannot fail.
    let _ = w.write_event(Event::Start(e));
}

fn empty(w: &mut W, name: &str, attrs: &[(&str, &str)]) {
    let mut e = BytesStart::new(name);
    for (k, v) in attrs {
        e.push_attribute((*k, *v));
    }
    let _ = w.write_event(Event::Empty(e));
}

fn end(w: &mut W, name: &str) {
    let _ = w.write_event(Event::End(BytesEnd::new(name)));
}

fn text_element(w: &mut W, name: &str, attrs: &[(&str, &str)], text: &str) {
    start(w, name, attrs);
    let _ = w.write_event(Event::Text(BytesText::new(text)));
    end(w, name);
}

fn flag(b: bool) -> &'static str {
    if b { "1" } else { "0" }
}

/// Renders the meta-data document the agent prints for `meta-data`.
pub fn render_metadata(spec: &AgentSpec, profile: MetadataProfile) -> String {
    let full = profile == MetadataProfile::Ocf11;
    let mut w = Writer::new_with_indent(Vec::new(), b' ', 2);
    let _ = w.write_event(Event::Decl(BytesDecl::new("1.0", None, None)));
    let _ = w.write_event(Event::DocType(BytesText::from_escaped(DOCTYPE)));
    start(
        &mut w,
        "resource-agent",
        &[("name", spec.name), ("version", spec.version)],
    );
    text_element(&mut w, "version", &[], "1.1");
    text_element(&mut w, "longdesc", &[("lang", "en")], spec.longdesc);
    text_element(&mut w, "shortdesc", &[("lang", "en")], spec.shortdesc);

    start(&mut w, "parameters", &[]);
    for p in spec.parameters {
        let mut attrs = vec![
            ("name", p.name),
            ("unique", flag(p.unique)),
            ("required", flag(p.required)),
        ];
        if full {
            attrs.push(("reloadable", flag(p.reloadable)));
        }
        start(&mut w, "parameter", &attrs);
        if let (true, Some(replacement)) = (full, p.deprecated) {
            if replacement.is_empty() {
                empty(&mut w, "deprecated", &[]);
            } else {
                start(&mut w, "deprecated", &[]);
                empty(&mut w, "replaced-with", &[("name", replacement)]);
                end(&mut w, "deprecated");
            }
        }
        text_element(&mut w, "longdesc", &[("lang", "en")], p.longdesc);
        text_element(&mut w, "shortdesc", &[("lang", "en")], p.shortdesc);
        let kind = match p.kind {
            ParamType::String => "string",
            ParamType::Integer => "integer",
            ParamType::Boolean => "boolean",
            ParamType::Select(_) if full => "select",
            ParamType::Select(_) => "string",
        };
        let mut content = vec![("type", kind)];
        if let Some(d) = p.default {
            content.push(("default", d));
        }
        match p.kind {
            ParamType::Select(options) if full => {
                start(&mut w, "content", &content);
                for o in options {
                    empty(&mut w, "option", &[("value", o)]);
                }
                end(&mut w, "content");
            }
            _ => empty(&mut w, "content", &content),
        }
        end(&mut w, "parameter");
    }
    end(&mut w, "parameters");

    start(&mut w, "actions", &[]);
    for a in spec.actions {
        if !full && !a.action.in_dtd() {
            continue;
        }
        let timeout = format!("{}s", a.timeout_s);
        let interval = a.interval_s.map(|i| format!("{i}s"));
        let depth = a.depth.map(|d| d.to_string());
        let mut attrs = vec![("name", a.action.as_str()), ("timeout", timeout.as_str())];
        if let Some(i) = &interval {
            attrs.push(("interval", i));
        }
        if let Some(d) = &depth {
            attrs.push(("depth", d));
        }
        empty(&mut w, "action", &attrs);
    }
    end(&mut w, "actions");
    if let (true, Some(special)) = (full, spec.special) {
        start(&mut w, "special", &[("tag", special.tag)]);
        for item in special.items {
            empty(&mut w, item.name, item.attrs);
        }
        end(&mut w, "special");
    }
    end(&mut w, "resource-agent");
    let mut out = String::from_utf8(w.into_inner()).unwrap_or_default();
    out.push('\n');
    out
}

/// Renders the parameter and action tables as Markdown, for the README and docs.
pub fn render_markdown(spec: &AgentSpec) -> String {
    let mut out = format!("## {} parameters\n\n", spec.name);
    out.push_str("| Name | Type | Default | Required | Unique | Reloadable | Description |\n");
    out.push_str("|---|---|---|---|---|---|---|\n");
    let yes = |b: bool| if b { "yes" } else { "" };
    for p in spec.parameters {
        out.push_str(&format!(
            "| `{}` | {} | {} | {} | {} | {} | {} |\n",
            p.name,
            p.kind.describe(),
            p.default.map(|d| format!("`{d}`")).unwrap_or_default(),
            yes(p.required),
            yes(p.unique),
            yes(p.reloadable),
            p.shortdesc.replace('|', "\\|"),
        ));
    }
    out.push_str(&format!(
        "\n## {} actions\n\n| Action | Timeout | Interval |\n|---|---|---|\n",
        spec.name
    ));
    for a in spec.actions {
        out.push_str(&format!(
            "| `{}` | {}s | {} |\n",
            a.action,
            a.timeout_s,
            a.interval_s.map(|i| format!("{i}s")).unwrap_or_default()
        ));
    }
    out
}

/// Whether the action list of a spec contains `action`.
pub fn advertises(spec: &AgentSpec, action: Action) -> bool {
    spec.actions.iter().any(|a| a.action == action)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{ActionSpec, ParameterSpec};

    static PARAMS: [ParameterSpec; 2] = [
        ParameterSpec::new("config", "Config file", "Path <with> & \"quotes\"")
            .required()
            .unique(),
        ParameterSpec::new("mode", "Mode", "Mode")
            .kind(ParamType::Select(&["a", "b"]))
            .reloadable(),
    ];
    static ACTIONS: [ActionSpec; 3] = [
        ActionSpec::new(Action::Start, 90),
        ActionSpec::new(Action::Monitor, 30).recurring(10, 0),
        ActionSpec::new(Action::ReloadAgent, 20),
    ];
    const SPEC: AgentSpec = AgentSpec {
        name: "T",
        version: "1.0",
        shortdesc: "t",
        longdesc: "t",
        parameters: &PARAMS,
        actions: &ACTIONS,
        special: Some(crate::Special {
            tag: "t-tag",
            items: &[crate::SpecialItem {
                name: "fact",
                attrs: &[("k", "v<&>")],
            }],
        }),
    };

    #[test]
    fn portable_profile_leaves_out_what_the_dtd_forbids() {
        let xml = render_metadata(&SPEC, MetadataProfile::Portable);
        assert!(xml.contains("<!DOCTYPE resource-agent SYSTEM \"ra-api-1.dtd\">"));
        assert!(!xml.contains("reload-agent"));
        assert!(!xml.contains("reloadable"));
        assert!(!xml.contains("select"));
        assert!(xml.contains("Path &lt;with&gt; &amp; &quot;quotes&quot;"));
        assert!(xml.contains(r#"<action name="monitor" timeout="30s" interval="10s" depth="0"/>"#));
    }

    #[test]
    fn only_the_ocf11_profile_carries_the_special_block() {
        let xml = render_metadata(&SPEC, MetadataProfile::Ocf11);
        assert!(xml.contains(r#"<special tag="t-tag">"#), "{xml}");
        assert!(xml.contains(r#"<fact k="v&lt;&amp;&gt;"/>"#), "{xml}");
        let portable = render_metadata(&SPEC, MetadataProfile::Portable);
        assert!(!portable.contains("special"), "{portable}");
    }

    #[test]
    fn ocf11_profile_advertises_reload() {
        let xml = render_metadata(&SPEC, MetadataProfile::Ocf11);
        assert!(xml.contains(r#"<action name="reload-agent" timeout="20s"/>"#));
        assert!(xml.contains(r#"reloadable="1""#));
        assert!(xml.contains(r#"<option value="b"/>"#));
    }

    #[test]
    fn markdown_lists_every_parameter() {
        let md = render_markdown(&SPEC);
        assert!(md.contains("| `config` | string |  | yes | yes |  |"));
        assert!(md.contains("one of: a, b"));
        assert!(advertises(&SPEC, Action::ReloadAgent));
    }
}
