//! The parameter table: one [`AgentSpec`] drives meta-data, `validate-all` and the docs.

use std::collections::BTreeMap;

/// The value type of a parameter, as meta-data's `<content type=…>` names it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ParamType {
    String,
    /// A signed decimal integer.
    Integer,
    /// Pacemaker's booleans: `true/false`, `yes/no`, `on/off`, `y/n`, `1/0`, any case.
    Boolean,
    /// One of a fixed set of strings (rendered as `select` for OCF 1.1 callers, `string` otherwise).
    Select(&'static [&'static str]),
}

impl ParamType {
    /// The name of the type for docs.
    pub fn describe(self) -> String {
        match self {
            Self::String => "string".into(),
            Self::Integer => "integer".into(),
            Self::Boolean => "boolean".into(),
            Self::Select(options) => format!("one of: {}", options.join(", ")),
        }
    }
}

/// One parameter of an agent.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ParameterSpec {
    pub name: &'static str,
    pub kind: ParamType,
    /// The default the agent applies when the parameter is absent (as text, as meta-data shows it).
    pub default: Option<&'static str>,
    pub required: bool,
    pub unique: bool,
    /// Can change through `reload-agent` without a restart.
    pub reloadable: bool,
    /// Never logged or shown in an exit reason.
    pub private: bool,
    pub shortdesc: &'static str,
    pub longdesc: &'static str,
    /// `Some(replacement or "")` when deprecated.
    pub deprecated: Option<&'static str>,
}

impl ParameterSpec {
    /// A non-required, non-unique, non-reloadable string parameter with no default.
    pub const fn new(name: &'static str, shortdesc: &'static str, longdesc: &'static str) -> Self {
        Self {
            name,
            kind: ParamType::String,
            default: None,
            required: false,
            unique: false,
            reloadable: false,
            private: false,
            shortdesc,
            longdesc,
            deprecated: None,
        }
    }
    pub const fn kind(mut self, kind: ParamType) -> Self {
        self.kind = kind;
        self
    }
    pub const fn default(mut self, default: &'static str) -> Self {
        self.default = Some(default);
        self
    }
    pub const fn required(mut self) -> Self {
        self.required = true;
        self
    }
    pub const fn unique(mut self) -> Self {
        self.unique = true;
        self
    }
    pub const fn reloadable(mut self) -> Self {
        self.reloadable = true;
        self
    }
    pub const fn private(mut self) -> Self {
        self.private = true;
        self
    }

    /// Checks one value against the type.
    pub fn check(&self, value: &str) -> Result<(), ParamError> {
        let ok = match self.kind {
            ParamType::String => true,
            ParamType::Integer => value.trim().parse::<i64>().is_ok(),
            ParamType::Boolean => parse_bool(value).is_some(),
            ParamType::Select(options) => options.contains(&value),
        };
        if ok {
            Ok(())
        } else {
            Err(ParamError::BadValue {
                name: self.name.to_owned(),
                value: if self.private {
                    "<private>".into()
                } else {
                    value.to_owned()
                },
                expected: self.kind.describe(),
            })
        }
    }
}

/// One advertised action with its default timeout (seconds) and optional interval and depth.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ActionSpec {
    pub action: crate::Action,
    pub timeout_s: u32,
    pub interval_s: Option<u32>,
    pub depth: Option<u32>,
}

impl ActionSpec {
    pub const fn new(action: crate::Action, timeout_s: u32) -> Self {
        Self {
            action,
            timeout_s,
            interval_s: None,
            depth: None,
        }
    }
    pub const fn recurring(mut self, interval_s: u32, depth: u32) -> Self {
        self.interval_s = Some(interval_s);
        self.depth = Some(depth);
        self
    }
}

/// An agent's whole description: what meta-data prints and what `validate-all` checks.
#[derive(Debug, Clone, Copy)]
pub struct AgentSpec {
    pub name: &'static str,
    /// The agent's own version (`<resource-agent version=…>`).
    pub version: &'static str,
    pub shortdesc: &'static str,
    pub longdesc: &'static str,
    pub parameters: &'static [ParameterSpec],
    pub actions: &'static [ActionSpec],
    /// OCF 1.1's optional `<special tag=…>` block: agent-specific facts for tools that know the
    /// tag. Only the OCF 1.1 document carries it (`ra-api-1.dtd` and `metadata.rng` forbid it).
    pub special: Option<Special>,
}

/// The content of `<special tag=…>`: empty elements with attributes.
#[derive(Debug, Clone, Copy)]
pub struct Special {
    pub tag: &'static str,
    pub items: &'static [SpecialItem],
}

/// One element inside `<special>`: `<name attr="value" …/>`.
#[derive(Debug, Clone, Copy)]
pub struct SpecialItem {
    pub name: &'static str,
    pub attrs: &'static [(&'static str, &'static str)],
}

/// A parameter problem, naming the parameter.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ParamError {
    #[error("required parameter {name} is not set")]
    Missing { name: String },
    #[error("parameter {name}={value:?} is not {expected}")]
    BadValue {
        name: String,
        value: String,
        expected: String,
    },
}

/// Parameters after defaults are applied and every value is checked against its type.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ResolvedParams {
    values: BTreeMap<&'static str, String>,
    /// Names that were set explicitly (not defaulted).
    explicit: Vec<&'static str>,
    /// Names the caller set that the table does not know (heartbeat ignores them; so do we, loudly).
    pub unknown: Vec<String>,
}

impl AgentSpec {
    /// The parameter of that name.
    pub fn parameter(&self, name: &str) -> Option<&'static ParameterSpec> {
        self.parameters.iter().find(|p| p.name == name)
    }

    /// Applies defaults and checks every value. All problems are returned, not only the first.
    pub fn resolve(
        &self,
        given: &BTreeMap<String, String>,
    ) -> Result<ResolvedParams, Vec<ParamError>> {
        let mut errors = Vec::new();
        let mut values = BTreeMap::new();
        let mut explicit = Vec::new();
        for p in self.parameters {
            match given.get(p.name) {
                // Pacemaker passes an unset parameter as absent; an empty value counts as unset,
                // as heartbeat agents treat it.
                Some(v) if !v.is_empty() => {
                    if let Err(e) = p.check(v) {
                        errors.push(e);
                    }
                    values.insert(p.name, v.clone());
                    explicit.push(p.name);
                }
                _ => {
                    if p.required {
                        errors.push(ParamError::Missing {
                            name: p.name.to_owned(),
                        });
                    } else if let Some(d) = p.default {
                        values.insert(p.name, d.to_owned());
                    }
                }
            }
        }
        let unknown = given
            .keys()
            .filter(|k| self.parameter(k).is_none())
            .cloned()
            .collect();
        if errors.is_empty() {
            Ok(ResolvedParams {
                values,
                explicit,
                unknown,
            })
        } else {
            Err(errors)
        }
    }
}

impl ResolvedParams {
    /// The value (explicit or default), if any.
    pub fn get(&self, name: &str) -> Option<&str> {
        self.values.get(name).map(String::as_str)
    }
    /// Whether the caller set it (rather than the default applying).
    pub fn is_explicit(&self, name: &str) -> bool {
        self.explicit.contains(&name)
    }
    /// A boolean parameter (already checked by `resolve`); absent is false.
    pub fn flag(&self, name: &str) -> bool {
        self.get(name).and_then(parse_bool).unwrap_or(false)
    }
    /// An integer parameter (already checked by `resolve`).
    pub fn integer(&self, name: &str) -> Option<i64> {
        self.get(name).and_then(|v| v.trim().parse().ok())
    }
}

/// Pacemaker's boolean spellings (`crm_is_true`).
pub fn parse_bool(value: &str) -> Option<bool> {
    match value.trim().to_ascii_lowercase().as_str() {
        "true" | "yes" | "on" | "y" | "1" => Some(true),
        "false" | "no" | "off" | "n" | "0" => Some(false),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::Action;

    static PARAMS: [ParameterSpec; 4] = [
        ParameterSpec::new("config", "c", "config")
            .required()
            .unique(),
        ParameterSpec::new("force_stop", "f", "force")
            .kind(ParamType::Boolean)
            .default("0"),
        ParameterSpec::new("speed", "s", "speed")
            .kind(ParamType::Integer)
            .default("0"),
        ParameterSpec::new("mode", "m", "mode").kind(ParamType::Select(&["acpi", "agent"])),
    ];
    static ACTIONS: [ActionSpec; 1] = [ActionSpec::new(Action::Start, 90)];
    const SPEC: AgentSpec = AgentSpec {
        name: "T",
        version: "1",
        shortdesc: "t",
        longdesc: "t",
        parameters: &PARAMS,
        actions: &ACTIONS,
        special: None,
    };

    fn given(pairs: &[(&str, &str)]) -> BTreeMap<String, String> {
        pairs
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect()
    }

    #[test]
    fn defaults_apply_and_explicit_values_win() {
        let r = SPEC
            .resolve(&given(&[
                ("config", "/x.xml"),
                ("speed", "40"),
                ("zap", "1"),
            ]))
            .unwrap();
        assert_eq!(r.get("config"), Some("/x.xml"));
        assert!(!r.flag("force_stop"));
        assert_eq!(r.integer("speed"), Some(40));
        assert!(r.is_explicit("speed") && !r.is_explicit("force_stop"));
        assert_eq!(r.get("mode"), None);
        assert_eq!(r.unknown, vec!["zap".to_string()]);
    }

    #[test]
    fn every_problem_is_reported_by_name() {
        let errs = SPEC
            .resolve(&given(&[
                ("force_stop", "maybe"),
                ("speed", "fast"),
                ("mode", "reboot"),
            ]))
            .unwrap_err();
        let text: Vec<String> = errs.iter().map(|e| e.to_string()).collect();
        assert_eq!(errs.len(), 4, "{text:?}");
        assert!(text[0].contains("config"));
        assert!(text.iter().any(|t| t.contains("force_stop=\"maybe\"")));
        assert!(text.iter().any(|t| t.contains("speed=\"fast\"")));
        assert!(text.iter().any(|t| t.contains("one of: acpi, agent")));
    }

    #[test]
    fn empty_value_counts_as_unset() {
        let errs = SPEC.resolve(&given(&[("config", "")])).unwrap_err();
        assert_eq!(
            errs,
            vec![ParamError::Missing {
                name: "config".into()
            }]
        );
    }

    #[test]
    fn booleans_follow_pacemaker() {
        for t in ["true", "YES", "on", "1", "y"] {
            assert_eq!(parse_bool(t), Some(true), "{t}");
        }
        for f in ["false", "No", "off", "0", "n"] {
            assert_eq!(parse_bool(f), Some(false), "{f}");
        }
        assert_eq!(parse_bool("2"), None);
    }
}
