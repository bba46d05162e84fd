//! The agent's environment: `OCF_RESKEY_*`, `OCF_RESKEY_CRM_meta_*` and the other `OCF_*` variables,
//! parsed from an iterator of pairs so that tests never touch the process environment.

use std::collections::BTreeMap;
use std::ffi::OsString;

use crate::Action;

const RESKEY: &str = "OCF_RESKEY_";
const META: &str = "OCF_RESKEY_CRM_meta_";

/// The depth of a monitor or validate-all (`OCF_CHECK_LEVEL`): 0, 10 or 20.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Default)]
pub enum CheckLevel {
    #[default]
    Basic = 0,
    Local = 10,
    Deep = 20,
}

impl CheckLevel {
    /// The API's rule: an unknown level runs the next lower known one.
    pub fn from_level(level: u32) -> Self {
        match level {
            0..=9 => Self::Basic,
            10..=19 => Self::Local,
            _ => Self::Deep,
        }
    }
}

/// Operation meta-attributes Pacemaker passes as `OCF_RESKEY_CRM_meta_*`.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct OpMeta {
    /// `CRM_meta_timeout`: the executor kills the agent at this point.
    pub timeout_ms: Option<u64>,
    /// `CRM_meta_interval`: 0 or absent on a monitor means a probe.
    pub interval_ms: Option<u64>,
    pub name: Option<String>,
    pub on_node: Option<String>,
    pub on_node_uuid: Option<String>,
    pub migrate_source: Option<String>,
    pub migrate_target: Option<String>,
    pub record_pending: Option<bool>,
    /// Every other meta-attribute, by its name after `CRM_meta_` (`allow_migrate`, `target_role`...).
    pub other: BTreeMap<String, String>,
}

/// Everything an OCF agent learns from its environment.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct OcfEnv {
    /// `OCF_RESOURCE_INSTANCE`: the resource id (`name:N` for clone instances).
    pub instance: Option<String>,
    pub resource_type: Option<String>,
    pub provider: Option<String>,
    /// `OCF_RA_VERSION_MAJOR`/`MINOR` of the caller; absent under `ocf-tester`.
    pub ra_version: Option<(u32, u32)>,
    /// Instance parameters: `OCF_RESKEY_<name>` without the `CRM_meta_` ones.
    pub params: BTreeMap<String, String>,
    pub meta: OpMeta,
    /// `OCF_RESKEY_crm_feature_set`.
    pub crm_feature_set: Option<String>,
    pub check_level: CheckLevel,
    /// `OCF_EXIT_REASON_PREFIX`, default `ocf-exit-reason:`.
    pub exit_reason_prefix: String,
    /// `HA_debug=1`.
    pub debug: bool,
    /// `HA_RSCTMP`: the agents' state directory (resource-agents' default `/run/resource-agents`).
    pub rsctmp: Option<String>,
}

/// A variable the agent cannot make sense of.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum EnvError {
    #[error("{name}={value:?} is not a non-negative integer")]
    NotANumber { name: String, value: String },
    #[error("{name}={value:?} is not a boolean")]
    NotABoolean { name: String, value: String },
    #[error("{name} is not valid UTF-8")]
    NotUtf8 { name: String },
}

impl EnvError {
    /// The variable at fault.
    pub fn name(&self) -> &str {
        match self {
            Self::NotANumber { name, .. }
            | Self::NotABoolean { name, .. }
            | Self::NotUtf8 { name } => name,
        }
    }
}

/// The environment read leniently: everything that could be read, and what could not. A caller
/// that must act even on a damaged environment (a `stop`) decides per variable; the strict readers
/// ([`OcfEnv::from_pairs`], [`OcfEnv::from_os_pairs`]) refuse any fault.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct EnvReading {
    /// Every variable that could be read; a faulty one is left at its default (unset).
    pub env: OcfEnv,
    /// The variables of the API that could not be read: non-UTF-8 first, then bad values, each
    /// group in input order.
    pub faults: Vec<EnvError>,
    /// The raw bytes of each non-UTF-8 `OCF_*`/`HA_*` variable, by its (lossily decoded) name:
    /// on Unix a path is bytes, so a caller may still use one.
    pub raw: BTreeMap<String, OsString>,
}

impl EnvReading {
    /// A clean reading of an environment already parsed.
    pub fn clean(env: OcfEnv) -> Self {
        Self {
            env,
            ..Self::default()
        }
    }
}

fn number(name: &str, value: &str) -> Result<u64, EnvError> {
    value.trim().parse().map_err(|_| EnvError::NotANumber {
        name: name.to_owned(),
        value: value.to_owned(),
    })
}

impl OcfEnv {
    /// Parses the environment from `(name, value)` pairs; variables outside the API are ignored;
    /// the first variable that cannot be read is the error.
    pub fn from_pairs<I, K, V>(pairs: I) -> Result<Self, EnvError>
    where
        I: IntoIterator<Item = (K, V)>,
        K: AsRef<str>,
        V: AsRef<str>,
    {
        let (env, faults) = Self::read_pairs(pairs);
        match faults.into_iter().next() {
            Some(e) => Err(e),
            None => Ok(env),
        }
    }

    /// Like [`OcfEnv::from_pairs`], but leniently: a variable that cannot be read is left unset
    /// and reported, and the others are still read.
    pub fn read_pairs<I, K, V>(pairs: I) -> (Self, Vec<EnvError>)
    where
        I: IntoIterator<Item = (K, V)>,
        K: AsRef<str>,
        V: AsRef<str>,
    {
        let mut faults = Vec::new();
        let mut env = OcfEnv {
            exit_reason_prefix: "ocf-exit-reason:".to_owned(),
            ..OcfEnv::default()
        };
        let (mut major, mut minor) = (None, None);
        for (k, v) in pairs {
            let (name, value) = (k.as_ref(), v.as_ref());
            if let Err(e) = env.set(name, value, &mut major, &mut minor) {
                faults.push(e);
            }
        }
        if let Some(major) = major {
            env.ra_version = Some((major, minor.unwrap_or(0)));
        }
        (env, faults)
    }

    /// Reads one variable into `self` (the RA version halves into `major`/`minor`).
    fn set(
        &mut self,
        name: &str,
        value: &str,
        major: &mut Option<u32>,
        minor: &mut Option<u32>,
    ) -> Result<(), EnvError> {
        let env = self;
        if let Some(key) = name.strip_prefix(META) {
            env.set_meta(name, key, value)?;
        } else if let Some(key) = name.strip_prefix(RESKEY) {
            if key == "crm_feature_set" {
                env.crm_feature_set = Some(value.to_owned());
            } else if !key.is_empty() {
                env.params.insert(key.to_owned(), value.to_owned());
            }
        } else {
            match name {
                "OCF_RESOURCE_INSTANCE" => env.instance = Some(value.to_owned()),
                "OCF_RESOURCE_TYPE" => env.resource_type = Some(value.to_owned()),
                "OCF_RESOURCE_PROVIDER" => env.provider = Some(value.to_owned()),
                "OCF_RA_VERSION_MAJOR" => *major = Some(number(name, value)? as u32),
                "OCF_RA_VERSION_MINOR" => *minor = Some(number(name, value)? as u32),
                "OCF_CHECK_LEVEL" if !value.trim().is_empty() => {
                    let level = u32::try_from(number(name, value)?).unwrap_or(u32::MAX);
                    env.check_level = CheckLevel::from_level(level);
                }
                "OCF_EXIT_REASON_PREFIX" if !value.is_empty() => {
                    env.exit_reason_prefix = value.to_owned()
                }
                "HA_debug" => env.debug = value.trim() == "1",
                "HA_RSCTMP" if !value.is_empty() => env.rsctmp = Some(value.to_owned()),
                _ => {}
            }
        }
        Ok(())
    }

    /// Like [`OcfEnv::from_pairs`], from raw OS strings: a non-UTF-8 `OCF_*` or `HA_*` variable is
    /// an error naming it; any other non-UTF-8 variable is ignored.
    pub fn from_os_pairs<I>(pairs: I) -> Result<Self, EnvError>
    where
        I: IntoIterator<Item = (OsString, OsString)>,
    {
        let reading = Self::read_os_pairs(pairs);
        match reading.faults.into_iter().next() {
            Some(e) => Err(e),
            None => Ok(reading.env),
        }
    }

    /// Like [`OcfEnv::from_os_pairs`], but leniently ([`EnvReading`]): a non-UTF-8 `OCF_*` or
    /// `HA_*` variable is a fault kept with its raw bytes, and the rest is still read.
    pub fn read_os_pairs<I>(pairs: I) -> EnvReading
    where
        I: IntoIterator<Item = (OsString, OsString)>,
    {
        let mut utf8 = Vec::new();
        let mut faults = Vec::new();
        let mut raw = BTreeMap::new();
        for (k, v) in pairs {
            let name = k.to_string_lossy().into_owned();
            let relevant = name.starts_with("OCF_") || name.starts_with("HA_");
            match (k.into_string(), v) {
                (Ok(k), v) => match v.into_string() {
                    Ok(v) => utf8.push((k, v)),
                    Err(v) if relevant => {
                        faults.push(EnvError::NotUtf8 { name: name.clone() });
                        raw.insert(name, v);
                    }
                    Err(_) => {}
                },
                (Err(_), v) if relevant => {
                    faults.push(EnvError::NotUtf8 { name: name.clone() });
                    raw.insert(name, v);
                }
                (Err(_), _) => {}
            }
        }
        let (env, parse_faults) = Self::read_pairs(utf8);
        faults.extend(parse_faults);
        EnvReading { env, faults, raw }
    }

    fn set_meta(&mut self, name: &str, key: &str, value: &str) -> Result<(), EnvError> {
        let m = &mut self.meta;
        match key {
            "timeout" => m.timeout_ms = Some(number(name, value)?),
            "interval" => m.interval_ms = Some(number(name, value)?),
            "name" => m.name = Some(value.to_owned()),
            "on_node" => m.on_node = Some(value.to_owned()),
            "on_node_uuid" => m.on_node_uuid = Some(value.to_owned()),
            "migrate_source" => m.migrate_source = Some(value.to_owned()),
            "migrate_target" => m.migrate_target = Some(value.to_owned()),
            "record_pending" => {
                m.record_pending =
                    Some(
                        crate::parse_bool(value).ok_or_else(|| EnvError::NotABoolean {
                            name: name.to_owned(),
                            value: value.to_owned(),
                        })?,
                    )
            }
            _ => {
                m.other.insert(key.to_owned(), value.to_owned());
            }
        }
        Ok(())
    }

    /// A probe: a monitor (or status) with no interval or interval 0, as Pacemaker sends before
    /// it trusts a node, and as `crm_resource --force-check` runs.
    pub fn is_probe(&self, action: Action) -> bool {
        matches!(action, Action::Monitor | Action::Status)
            && self.meta.interval_ms.unwrap_or(0) == 0
    }

    /// Whether the caller speaks OCF 1.1 or later (Pacemaker 2.1+ sets 1.1; ocf-tester sets nothing).
    pub fn caller_speaks_ocf_1_1(&self) -> bool {
        matches!(self.ra_version, Some((major, minor)) if major > 1 || (major == 1 && minor >= 1))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn env(pairs: &[(&str, &str)]) -> Result<OcfEnv, EnvError> {
        OcfEnv::from_pairs(pairs.iter().copied())
    }

    #[test]
    fn pacemaker_environment_is_parsed() {
        let e = env(&[
            ("OCF_RESOURCE_INSTANCE", "vm1"),
            ("OCF_RA_VERSION_MAJOR", "1"),
            ("OCF_RA_VERSION_MINOR", "1"),
            ("OCF_RESKEY_config", "/etc/vm1.xml"),
            ("OCF_RESKEY_crm_feature_set", "3.16.1"),
            ("OCF_RESKEY_CRM_meta_timeout", "20000"),
            ("OCF_RESKEY_CRM_meta_interval", "10000"),
            ("OCF_RESKEY_CRM_meta_migrate_target", "node2"),
            ("OCF_RESKEY_CRM_meta_migrate_source", "node1"),
            ("OCF_RESKEY_CRM_meta_record_pending", "true"),
            ("OCF_RESKEY_CRM_meta_allow_migrate", "true"),
            ("OCF_CHECK_LEVEL", "10"),
            ("OCF_EXIT_REASON_PREFIX", "ocf-exit-reason:"),
            ("HA_RSCTMP", "/tmp/node1"),
            ("PATH", "/usr/bin"),
        ])
        .unwrap();
        assert_eq!(e.instance.as_deref(), Some("vm1"));
        assert_eq!(
            e.params.get("config").map(String::as_str),
            Some("/etc/vm1.xml")
        );
        assert_eq!(
            e.params.len(),
            1,
            "meta and feature set are not instance parameters"
        );
        assert_eq!(e.meta.timeout_ms, Some(20_000));
        assert_eq!(e.meta.interval_ms, Some(10_000));
        assert_eq!(e.meta.migrate_target.as_deref(), Some("node2"));
        assert_eq!(e.meta.migrate_source.as_deref(), Some("node1"));
        assert_eq!(e.meta.record_pending, Some(true));
        assert_eq!(
            e.meta.other.get("allow_migrate").map(String::as_str),
            Some("true")
        );
        assert_eq!(e.check_level, CheckLevel::Local);
        assert_eq!(e.rsctmp.as_deref(), Some("/tmp/node1"));
        assert!(e.caller_speaks_ocf_1_1());
        assert!(!e.is_probe(Action::Monitor));
    }

    #[test]
    fn probe_is_monitor_without_interval() {
        let e = env(&[]).unwrap();
        assert!(e.is_probe(Action::Monitor));
        assert!(!e.is_probe(Action::Start));
        let e = env(&[("OCF_RESKEY_CRM_meta_interval", "0")]).unwrap();
        assert!(e.is_probe(Action::Status));
        assert!(!e.caller_speaks_ocf_1_1(), "ocf-tester sets no version");
        assert_eq!(e.exit_reason_prefix, "ocf-exit-reason:");
    }

    #[test]
    fn unknown_check_levels_run_the_next_lower() {
        assert_eq!(CheckLevel::from_level(5), CheckLevel::Basic);
        assert_eq!(CheckLevel::from_level(15), CheckLevel::Local);
        assert_eq!(CheckLevel::from_level(99), CheckLevel::Deep);
    }

    #[test]
    fn bad_numbers_name_the_variable() {
        let err = env(&[("OCF_RESKEY_CRM_meta_timeout", "20s")]).unwrap_err();
        assert_eq!(
            err,
            EnvError::NotANumber {
                name: "OCF_RESKEY_CRM_meta_timeout".into(),
                value: "20s".into()
            }
        );
        assert!(env(&[("OCF_CHECK_LEVEL", "-1")]).is_err());
        assert!(env(&[("OCF_RESKEY_CRM_meta_record_pending", "maybe")]).is_err());
    }

    #[test]
    fn non_utf8_ocf_variable_is_an_error_others_ignored() {
        use std::os::unix::ffi::OsStringExt;
        let bad = std::ffi::OsString::from_vec(vec![0xff, 0xfe]);
        let r = OcfEnv::from_os_pairs([("OCF_RESKEY_config".into(), bad.clone())]);
        assert_eq!(
            r,
            Err(EnvError::NotUtf8 {
                name: "OCF_RESKEY_config".into()
            })
        );
        let r = OcfEnv::from_os_pairs([("LANG".into(), bad)]);
        assert!(r.is_ok());
    }

    #[test]
    fn lenient_reading_keeps_the_rest_and_the_raw_bytes() {
        use std::os::unix::ffi::OsStringExt;
        let bad = OsString::from_vec(b"/etc/\xff.xml".to_vec());
        let r = OcfEnv::read_os_pairs([
            ("OCF_RESOURCE_INSTANCE".into(), "vm1".into()),
            ("OCF_RESKEY_config".into(), bad.clone()),
            ("OCF_RESKEY_CRM_meta_timeout".into(), "20s".into()),
            ("OCF_RESKEY_force_stop".into(), "1".into()),
            ("LANG".into(), bad.clone()),
            (OsString::from_vec(b"OCF_RESKEY_\xff".to_vec()), "x".into()),
        ]);
        assert_eq!(r.env.instance.as_deref(), Some("vm1"));
        assert_eq!(
            r.env.params.get("force_stop").map(String::as_str),
            Some("1")
        );
        assert!(!r.env.params.contains_key("config"));
        assert_eq!(r.env.meta.timeout_ms, None, "a bad number stays unset");
        let names: Vec<&str> = r.faults.iter().map(EnvError::name).collect();
        assert_eq!(
            names,
            [
                "OCF_RESKEY_config",
                "OCF_RESKEY_\u{fffd}",
                "OCF_RESKEY_CRM_meta_timeout"
            ]
        );
        assert_eq!(r.raw.get("OCF_RESKEY_config"), Some(&bad));
        assert_eq!(r.raw.len(), 2, "LANG is not the agent's");
        // The strict reader refuses the first fault.
        let strict = OcfEnv::from_os_pairs([
            ("OCF_RESKEY_CRM_meta_timeout".into(), "20s".into()),
            ("OCF_RESKEY_config".into(), bad),
        ]);
        assert_eq!(
            strict.unwrap_err().name(),
            "OCF_RESKEY_config",
            "non-UTF-8 first"
        );
    }
}
