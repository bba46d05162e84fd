//! A resource agent's man page (roff, section 7) from its parameter table, as resource-agents
//! ships `ocf_heartbeat_VirtualDomain(7)` from its meta-data: name, description, parameters,
//! actions, and an example for pcs and crmsh.

use std::fmt::Write as _;

use crate::AgentSpec;

/// What the page says besides the table: the provider, the package version and the date
/// printed in the footer (the caller's; this crate has no clock).
#[derive(Debug, Clone, Copy)]
pub struct ManPage<'a> {
    /// The OCF provider, e.g. `highlander` (the page is `ocf_<provider>_<agent>(7)`).
    pub provider: &'a str,
    /// Shown in the footer, e.g. `highlander 0.1.0`.
    pub source: &'a str,
    /// Shown in the footer, e.g. `2026-12-08`.
    pub date: &'a str,
}

/// Renders the agent's man page in roff (`man 7 ocf_<provider>_<agent>`).
pub fn render_man_page(spec: &AgentSpec, page: ManPage<'_>) -> String {
    let title = format!("ocf_{}_{}", page.provider, spec.name);
    let mut out = String::new();
    let _ = writeln!(
        out,
        ".TH {} 7 \"{}\" \"{}\" \"OCF resource agents\"",
        title.to_uppercase(),
        escape(page.date),
        escape(page.source)
    );
    out.push_str(".SH NAME\n");
    let _ = writeln!(
        out,
        "{} \\- {}",
        escape(&title),
        escape(spec.shortdesc.trim())
    );
    out.push_str(".SH SYNOPSIS\n");
    let _ = writeln!(
        out,
        "\\fB{}\\fP [start | stop | monitor | meta-data | validate-all | ...]",
        escape(spec.name)
    );
    out.push_str(".SH DESCRIPTION\n");
    paragraphs(&mut out, spec.longdesc);
    parameters(&mut out, spec);
    actions(&mut out, spec);
    example(&mut out, spec, page.provider);
    out.push_str(".SH SEE ALSO\n");
    out.push_str("\\fBcrm_resource\\fP(8), \\fBpcs\\fP(8), \\fBcrm\\fP(8)\n");
    out
}

fn parameters(out: &mut String, spec: &AgentSpec) {
    out.push_str(".SH SUPPORTED PARAMETERS\n");
    for p in spec.parameters {
        out.push_str(".TP\n");
        let mut facts = vec![p.kind.describe()];
        if let Some(d) = p.default {
            facts.push(format!(
                "default: {}",
                if d.is_empty() { "\"\"" } else { d }
            ));
        }
        if p.required {
            facts.push("required".into());
        }
        if p.unique {
            facts.push("unique".into());
        }
        if p.reloadable {
            facts.push("reloadable".into());
        }
        if p.deprecated.is_some() {
            facts.push("deprecated".into());
        }
        let _ = writeln!(
            out,
            "\\fB{}\\fP ({})\n{}",
            escape(p.name),
            escape(&facts.join(", ")),
            escape(p.shortdesc.trim())
        );
        let long = p.longdesc.trim();
        if !long.is_empty() && long != p.shortdesc.trim() {
            out.push_str(".br\n");
            paragraph_lines(out, long);
        }
    }
}

fn actions(out: &mut String, spec: &AgentSpec) {
    out.push_str(".SH SUPPORTED ACTIONS\n");
    out.push_str(".nf\n");
    for a in spec.actions {
        let mut line = format!("{:<14} timeout={}s", a.action.as_str(), a.timeout_s);
        if let Some(i) = a.interval_s {
            let _ = write!(line, " interval={i}s");
        }
        if let Some(d) = a.depth {
            let _ = write!(line, " depth={d}");
        }
        let _ = writeln!(out, "{}", escape(&line));
    }
    out.push_str(".fi\n");
}

fn example(out: &mut String, spec: &AgentSpec, provider: &str) {
    let required: Vec<String> = spec
        .parameters
        .iter()
        .filter(|p| p.required)
        .map(|p| format!("{}=...", p.name))
        .collect();
    let args = required.join(" ");
    out.push_str(".SH EXAMPLE\n");
    out.push_str("With pcs:\n.PP\n.nf\n");
    let _ = writeln!(
        out,
        "pcs resource create vm1 ocf:{provider}:{} {args}",
        spec.name
    );
    out.push_str(".fi\n.PP\nWith crmsh:\n.PP\n.nf\n");
    let _ = writeln!(
        out,
        "crm configure primitive vm1 ocf:{provider}:{} params {args}",
        spec.name
    );
    out.push_str(".fi\n");
}

/// Text paragraphs separated by blank lines, each as a roff paragraph.
fn paragraphs(out: &mut String, text: &str) {
    for (i, para) in text
        .split("\n\n")
        .filter(|p| !p.trim().is_empty())
        .enumerate()
    {
        if i > 0 {
            out.push_str(".PP\n");
        }
        paragraph_lines(out, para);
    }
}

/// One paragraph: its words refilled by man, each source line escaped so that none starts a
/// request.
fn paragraph_lines(out: &mut String, text: &str) {
    for line in text.lines().map(str::trim).filter(|l| !l.is_empty()) {
        out.push_str(&escape(line));
        out.push('\n');
    }
}

/// Escapes text for roff: backslashes, and a leading `.` or `'` that would start a request.
fn escape(text: &str) -> String {
    let body = text.replace('\\', "\\e").replace('-', "\\-");
    if body.starts_with('.') || body.starts_with('\'') {
        format!("\\&{body}")
    } else {
        body
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{Action, ActionSpec, ParameterSpec};

    const PARAMS: &[ParameterSpec] = &[
        ParameterSpec::new("config", "Domain XML", ".hidden start\nback\\slash").required(),
        ParameterSpec::new("force_stop", "Destroy at once", "").default("false"),
    ];
    const ACTIONS: &[ActionSpec] = &[ActionSpec::new(Action::Start, 90)];
    const SPEC: AgentSpec = AgentSpec {
        name: "VirtualDomain",
        version: "1.1",
        shortdesc: "Manages virtual domains",
        longdesc: "First paragraph.\n\n'Second starts with a quote.",
        parameters: PARAMS,
        actions: ACTIONS,
        special: None,
    };

    fn page() -> String {
        render_man_page(
            &SPEC,
            ManPage {
                provider: "highlander",
                source: "highlander 0.1.0",
                date: "2026-12-08",
            },
        )
    }

    #[test]
    fn the_page_names_the_agent_and_every_parameter() {
        let p = page();
        assert!(p.starts_with(".TH OCF_HIGHLANDER_VIRTUALDOMAIN 7 \"2026\\-12\\-08\""));
        assert!(p.contains("ocf_highlander_VirtualDomain \\- Manages virtual domains\n"));
        assert!(p.contains("\\fBconfig\\fP (string, required)"));
        assert!(p.contains("\\fBforce_stop\\fP (string, default: false)"));
        assert!(p.contains("pcs resource create vm1 ocf:highlander:VirtualDomain config=..."));
        assert!(p.contains("start          timeout=90s"));
    }

    #[test]
    fn no_source_line_starts_a_request_it_did_not_mean() {
        let p = page();
        assert!(p.contains("\\&.hidden start\n"), "{p}");
        assert!(p.contains("\\&'Second starts with a quote.\n"), "{p}");
        assert!(p.contains("back\\eslash"), "{p}");
        let requests = [".TH", ".SH", ".TP", ".PP", ".br", ".nf", ".fi"];
        for line in p
            .lines()
            .filter(|l| l.starts_with('.') || l.starts_with('\''))
        {
            assert!(
                requests.iter().any(|r| line.starts_with(r)),
                "unexpected request line: {line}"
            );
        }
    }
}
