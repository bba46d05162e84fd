//! Parameters in two stages: the raw environment ([`RawConfig`]: what was given, the time budget,
//! the state directory) and the validated [`Config`] (types, unimplemented parameters refused by
//! name, shutdown modes parsed); plus the domain XML, read with a real XML parser.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use ocf_metadata::{Action, CheckLevel, OcfEnv, OcfExitCode, ParamError};
use quick_xml::Reader;
use quick_xml::events::Event;

use crate::hypervisor::{ShutdownMode, ShutdownModes};
use crate::params::{ACTIONS, VIRTUAL_DOMAIN};

/// resource-agents' default state directory when `HA_RSCTMP` is unset.
pub const DEFAULT_RSCTMP: &str = "/run/resource-agents";
/// Timeout when neither Pacemaker nor the advertised action table gives one.
pub const FALLBACK_TIMEOUT_MS: u64 = 20_000;
/// Largest domain XML the agent reads.
const MAX_XML_BYTES: u64 = 16 * 1024 * 1024;

/// Parameters accepted by name that this version cannot honour: any non-default value is refused
/// with `OCF_ERR_CONFIGURED`, naming them.
pub const UNIMPLEMENTED: [&str; 1] = ["copyindirs"];

/// A configuration problem; [`ConfigError::code`] is the OCF answer.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ConfigError {
    #[error("{}", join(.0))]
    Params(Vec<ParamError>),
    #[error("parameter(s) {} not implemented by this agent yet; unset them or use ocf:heartbeat:VirtualDomain", .0.join(", "))]
    Unimplemented(Vec<String>),
    #[error("config={0:?} is not an absolute path")]
    RelativeConfig(String),
    #[error(
        "shutdown_mode={value:?}: {mode:?} is not one of acpi, agent, initctl, signal, paravirt"
    )]
    ShutdownMode { value: String, mode: String },
    #[error("parameter {name}={value:?}: {why}")]
    BadValue {
        name: &'static str,
        value: String,
        why: &'static str,
    },
    #[error("parameter {name}={value:?} refused: {why}")]
    UnsafeUriPart {
        name: &'static str,
        value: String,
        why: String,
    },
    #[error(transparent)]
    Migration(#[from] crate::migration::MigrationError),
    #[error("config file {path} cannot be read: {message}")]
    Unreadable { path: String, message: String },
    #[error("config file {path}: {error}")]
    BadXml { path: String, error: XmlError },
}

fn join(errors: &[ParamError]) -> String {
    let v: Vec<String> = errors.iter().map(|e| e.to_string()).collect();
    v.join("; ")
}

impl ConfigError {
    /// Inherently wrong parameters are 6 (same everywhere: Pacemaker stops trying); a config file
    /// that this host cannot read or parse is 5 (this host cannot run it; another may).
    pub fn code(&self) -> OcfExitCode {
        match self {
            Self::Unreadable { .. } | Self::BadXml { .. } => OcfExitCode::ErrInstalled,
            _ => OcfExitCode::ErrConfigured,
        }
    }
}

/// Why a domain XML gives no name.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum XmlError {
    #[error("not well-formed XML: {0}")]
    NotWellFormed(String),
    #[error("root element is <{0}>, not <domain>")]
    NotADomain(String),
    #[error("no <name> element under <domain>")]
    NoName,
}

/// The domain's name: the text of `<domain><name>`, parsed with an XML parser (not a regex).
pub fn domain_name_from_xml(xml: &str) -> Result<String, XmlError> {
    let mut reader = Reader::from_str(xml);
    let mut depth = 0usize;
    let mut in_name = false;
    let mut name = String::new();
    let mut found = false;
    loop {
        let event = reader
            .read_event()
            .map_err(|e| XmlError::NotWellFormed(e.to_string()))?;
        match event {
            Event::Start(e) => {
                depth += 1;
                let tag = String::from_utf8_lossy(e.name().as_ref()).into_owned();
                if depth == 1 && tag != "domain" {
                    return Err(XmlError::NotADomain(tag));
                }
                in_name = depth == 2 && tag == "name" && !found;
            }
            Event::Empty(e) => {
                let tag = String::from_utf8_lossy(e.name().as_ref()).into_owned();
                if depth == 0 {
                    return Err(XmlError::NotADomain(tag));
                }
            }
            Event::Text(t) if in_name => {
                let text = t
                    .decode()
                    .map_err(|e| XmlError::NotWellFormed(e.to_string()))?;
                name.push_str(&text);
            }
            Event::GeneralRef(r) if in_name => {
                // Character and predefined entity references inside <name>.
                let raw = String::from_utf8_lossy(r.as_ref()).into_owned();
                let ch = match raw.as_str() {
                    "lt" => Some('<'),
                    "gt" => Some('>'),
                    "amp" => Some('&'),
                    "apos" => Some('\''),
                    "quot" => Some('"'),
                    _ => r.resolve_char_ref().ok().flatten(),
                };
                match ch {
                    Some(c) => name.push(c),
                    None => return Err(XmlError::NotWellFormed(format!("unknown entity &{raw};"))),
                }
            }
            Event::CData(c) if in_name => name.push_str(&String::from_utf8_lossy(&c)),
            Event::End(_) => {
                if in_name {
                    found = true;
                    in_name = false;
                }
                depth = depth.saturating_sub(1);
            }
            Event::Eof => break,
            _ => {}
        }
    }
    if depth != 0 {
        return Err(XmlError::NotWellFormed("unexpected end of document".into()));
    }
    let name = name.trim().to_owned();
    if !found || name.is_empty() {
        return Err(XmlError::NoName);
    }
    Ok(name)
}

/// The domain as `config` describes it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DomainDef {
    pub name: String,
    pub xml: String,
}

/// Reads and parses the domain XML file.
pub fn load_domain(path: &Path) -> Result<DomainDef, ConfigError> {
    let shown = path.display().to_string();
    let unreadable = |e: std::io::Error| ConfigError::Unreadable {
        path: shown.clone(),
        message: e.to_string(),
    };
    let meta = std::fs::metadata(path).map_err(unreadable)?;
    if !meta.is_file() {
        return Err(ConfigError::Unreadable {
            path: shown,
            message: "not a regular file".into(),
        });
    }
    if meta.len() > MAX_XML_BYTES {
        return Err(ConfigError::Unreadable {
            path: shown,
            message: format!("larger than {MAX_XML_BYTES} bytes"),
        });
    }
    let xml = std::fs::read_to_string(path).map_err(unreadable)?;
    let name = domain_name_from_xml(&xml).map_err(|error| ConfigError::BadXml {
        path: shown.clone(),
        error,
    })?;
    Ok(DomainDef { name, xml })
}

/// Stage 1: what the environment says, before any parameter is judged.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RawConfig {
    pub action: Action,
    /// `OCF_RESOURCE_INSTANCE` (or `VirtualDomain` when unset).
    pub instance: String,
    /// `OCF_RESKEY_*` as given.
    pub params: BTreeMap<String, String>,
    /// `CRM_meta_timeout`, else the advertised timeout of the action, else 20 s.
    pub timeout_ms: u64,
    /// What the agent may spend: the timeout minus a margin for process start and exit.
    pub budget_ms: u64,
    /// `$HA_RSCTMP`, default `/run/resource-agents`.
    pub rsctmp: PathBuf,
    pub check_level: CheckLevel,
    /// A monitor/status with interval 0 or none.
    pub probe: bool,
    pub migrate_source: Option<String>,
    pub migrate_target: Option<String>,
}

/// The margin kept between the agent's own deadline and the executor's kill: 10 %, at least
/// 0.5 s, at most 5 s (but never more than half the timeout).
pub fn margin_ms(timeout_ms: u64) -> u64 {
    (timeout_ms / 10).clamp(500, 5_000).min(timeout_ms / 2)
}

impl RawConfig {
    pub fn from_env(env: &OcfEnv, action: Action) -> Self {
        let advertised = ACTIONS
            .iter()
            .find(|a| a.action == action)
            .map(|a| u64::from(a.timeout_s) * 1_000);
        let timeout_ms = env
            .meta
            .timeout_ms
            .filter(|t| *t > 0)
            .or(advertised)
            .unwrap_or(FALLBACK_TIMEOUT_MS);
        Self {
            action,
            instance: env
                .instance
                .clone()
                .filter(|s| !s.is_empty())
                .unwrap_or_else(|| "VirtualDomain".into()),
            params: env.params.clone(),
            timeout_ms,
            budget_ms: timeout_ms - margin_ms(timeout_ms),
            rsctmp: PathBuf::from(env.rsctmp.as_deref().unwrap_or(DEFAULT_RSCTMP)),
            check_level: env.check_level,
            probe: env.is_probe(action),
            migrate_source: env.meta.migrate_source.clone(),
            migrate_target: env.meta.migrate_target.clone(),
        }
    }

    fn param(&self, name: &str) -> Option<&str> {
        self.params
            .get(name)
            .map(|s| s.as_str())
            .filter(|s| !s.is_empty())
    }

    /// `config` as given (possibly invalid).
    pub fn config_path(&self) -> Option<&str> {
        self.param("config")
    }

    /// `hypervisor` as given; `None` lets libvirt choose its default URI.
    pub fn hypervisor_uri(&self) -> Option<&str> {
        self.param("hypervisor")
    }
}

/// Migration parameters, used by migrate_to/migrate_from (`migration.rs`).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct MigrationParams {
    pub transport: Option<String>,
    pub user: Option<String>,
    pub downtime_ms: u64,
    pub speed_mib_s: u64,
    pub network_suffix: Option<String>,
    pub migrateuri: Option<String>,
    pub options: Option<String>,
    pub port: Option<u16>,
    pub remoteuri: Option<String>,
}

/// Utilization parameters: accepted and validated, not acted on yet (see README).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct UtilizationParams {
    pub autoset_cpu: bool,
    pub autoset_host_memory: bool,
    pub autoset_hv_memory: bool,
    pub unset_cpu: bool,
    pub unset_host_memory: bool,
    pub unset_hv_memory: bool,
}

/// Stage 2: every parameter checked.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Config {
    pub raw: RawConfig,
    pub config_path: PathBuf,
    pub hypervisor_uri: Option<String>,
    pub force_stop: bool,
    pub shutdown_modes: ShutdownModes,
    /// Commands run after the domain is seen running (no shell).
    pub monitor_scripts: Vec<String>,
    pub migration: MigrationParams,
    pub utilization: UtilizationParams,
    /// `save_config_on_stop`, `sync_config_on_stop` (which implies saving).
    pub save_config: crate::saveconf::SaveConfig,
    /// `start_resources`: the pools and networks the domain uses are started first.
    pub start_resources: bool,
    /// `snapshot`: the directory for the domain's saved memory state (absolute).
    pub snapshot: Option<PathBuf>,
    /// `backingfile`: the image the domain's qcow2 overlay is based on (absolute).
    pub backingfile: Option<PathBuf>,
    /// `stateless`: a new overlay on every start (needs `backingfile`).
    pub stateless: bool,
    /// Parameters given that the agent does not know (warned about, as heartbeat ignores them).
    pub unknown: Vec<String>,
}

/// Applies a [`crate::urisafe`] check to a parameter value.
fn uri_part(
    name: &'static str,
    value: Option<&String>,
    check: fn(&str) -> Result<(), crate::urisafe::Why>,
) -> Result<(), ConfigError> {
    match value {
        Some(v) => check(v).map_err(|why| ConfigError::UnsafeUriPart {
            name,
            value: v.clone(),
            why,
        }),
        None => Ok(()),
    }
}

impl Config {
    /// Checks every parameter; all type errors are reported together.
    pub fn validate(raw: RawConfig) -> Result<Config, ConfigError> {
        let resolved = VIRTUAL_DOMAIN
            .resolve(&raw.params)
            .map_err(ConfigError::Params)?;
        let unimplemented: Vec<String> = UNIMPLEMENTED
            .iter()
            .filter(|name| {
                let p = VIRTUAL_DOMAIN.parameter(name);
                match p.map(|p| p.kind) {
                    Some(ocf_metadata::ParamType::Boolean) => resolved.flag(name),
                    _ => resolved.get(name).is_some_and(|v| !v.trim().is_empty()),
                }
            })
            .map(|s| s.to_string())
            .collect();
        if !unimplemented.is_empty() {
            return Err(ConfigError::Unimplemented(unimplemented));
        }
        let config = resolved.get("config").unwrap_or_default().to_owned();
        if !config.starts_with('/') {
            return Err(ConfigError::RelativeConfig(config));
        }
        let mode_text = resolved.get("shutdown_mode").unwrap_or_default();
        let mut modes = Vec::new();
        for part in mode_text
            .split(',')
            .map(str::trim)
            .filter(|s| !s.is_empty())
        {
            let mode = ShutdownMode::ALL
                .into_iter()
                .find(|m| m.as_str() == part)
                .ok_or_else(|| ConfigError::ShutdownMode {
                    value: mode_text.to_owned(),
                    mode: part.to_owned(),
                })?;
            if !modes.contains(&mode) {
                modes.push(mode);
            }
        }
        let opt = |name: &str| {
            resolved
                .get(name)
                .map(str::trim)
                .filter(|s| !s.is_empty())
                .map(str::to_owned)
        };
        let non_negative = |name: &'static str| -> Result<u64, ConfigError> {
            let v = resolved.integer(name).unwrap_or(0);
            u64::try_from(v).map_err(|_| ConfigError::BadValue {
                name,
                value: v.to_string(),
                why: "must not be negative",
            })
        };
        let user = opt("migration_user");
        // Every value that reaches a libvirt URI, checked against the safe set for its part
        // (`urisafe`), even when another parameter overrides it: a refused value is a
        // configuration error whether or not this migration would use it.
        use crate::urisafe as u;
        uri_part("migration_user", user.as_ref(), u::check_user)?;
        uri_part(
            "migration_transport",
            opt("migration_transport").as_ref(),
            u::check_transport,
        )?;
        uri_part(
            "migration_network_suffix",
            opt("migration_network_suffix").as_ref(),
            u::check_suffix,
        )?;
        uri_part("hypervisor", opt("hypervisor").as_ref(), u::check_local_uri)?;
        uri_part(
            "remoteuri",
            opt("remoteuri").as_ref(),
            u::check_remote_uri_template,
        )?;
        uri_part(
            "migrateuri",
            opt("migrateuri").as_ref(),
            u::check_migrate_uri_template,
        )?;
        let port = match resolved.integer("migrateport") {
            None => None,
            Some(p) => Some(u16::try_from(p).ok().filter(|p| *p > 0).ok_or_else(|| {
                ConfigError::BadValue {
                    name: "migrateport",
                    value: p.to_string(),
                    why: "must be a TCP port (1-65535)",
                }
            })?),
        };
        let migration = MigrationParams {
            transport: opt("migration_transport"),
            user,
            downtime_ms: non_negative("migration_downtime")?,
            speed_mib_s: non_negative("migration_speed")?,
            network_suffix: opt("migration_network_suffix"),
            migrateuri: opt("migrateuri"),
            options: opt("migrate_options"),
            port,
            remoteuri: opt("remoteuri"),
        };
        // Checked now so that validate-all reports them, not the first migration.
        let parsed =
            crate::migration::parse_options(migration.options.as_deref().unwrap_or_default())?;
        uri_part(
            "migrate_options",
            parsed.migrate_uri.as_ref(),
            u::check_migrate_uri_template,
        )?;
        // The remote URI is built at migration time only: a unix-socket `hypervisor` without
        // `remoteuri` is fine for a resource that never migrates.
        let hypervisor_uri = opt("hypervisor");
        let utilization = UtilizationParams {
            autoset_cpu: resolved.flag("autoset_utilization_cpu"),
            autoset_host_memory: resolved.flag("autoset_utilization_host_memory"),
            autoset_hv_memory: resolved.flag("autoset_utilization_hv_memory"),
            unset_cpu: resolved.flag("unset_utilization_cpu"),
            unset_host_memory: resolved.flag("unset_utilization_host_memory"),
            unset_hv_memory: resolved.flag("unset_utilization_hv_memory"),
        };
        let snapshot = opt("snapshot").map(PathBuf::from);
        if let Some(dir) = &snapshot {
            let why = if !dir.is_absolute() {
                Some("must be an absolute path")
            } else if resolved.flag("force_stop") {
                Some("cannot be used together with force_stop")
            } else {
                None
            };
            if let Some(why) = why {
                return Err(ConfigError::BadValue {
                    name: "snapshot",
                    value: dir.display().to_string(),
                    why,
                });
            }
        }
        let backingfile = opt("backingfile").map(PathBuf::from);
        let stateless = resolved.flag("stateless");
        match &backingfile {
            Some(b) if !b.is_absolute() => {
                return Err(ConfigError::BadValue {
                    name: "backingfile",
                    value: b.display().to_string(),
                    why: "must be an absolute path",
                });
            }
            None if stateless => {
                return Err(ConfigError::BadValue {
                    name: "stateless",
                    value: "true".into(),
                    why: "stateless functionality can't be achieved without a backing file",
                });
            }
            _ => {}
        }
        Ok(Config {
            snapshot,
            backingfile,
            stateless,
            config_path: PathBuf::from(config),
            hypervisor_uri,
            force_stop: resolved.flag("force_stop"),
            shutdown_modes: ShutdownModes(modes),
            monitor_scripts: resolved
                .get("monitor_scripts")
                .unwrap_or_default()
                .split_whitespace()
                .map(str::to_owned)
                .collect(),
            migration,
            utilization,
            save_config: match (
                resolved.flag("save_config_on_stop"),
                resolved.flag("sync_config_on_stop"),
            ) {
                (_, true) => crate::saveconf::SaveConfig::SaveAndSync,
                (true, false) => crate::saveconf::SaveConfig::Save,
                (false, false) => crate::saveconf::SaveConfig::Off,
            },
            start_resources: resolved.flag("start_resources"),
            unknown: resolved.unknown.clone(),
            raw,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn raw(pairs: &[(&str, &str)]) -> RawConfig {
        let env = OcfEnv::from_pairs(pairs.iter().copied()).unwrap();
        RawConfig::from_env(&env, Action::Start)
    }

    #[test]
    fn name_comes_from_the_parser_not_a_regex() {
        let xml = "<?xml version='1.0'?>\n<!-- <name>comment</name> -->\n<domain type='kvm'>\
                   <devices><disk><name>inner</name></disk></devices>\
                   <name> vm&amp;1 </name><title><name>x</name></title></domain>";
        assert_eq!(domain_name_from_xml(xml), Ok("vm&1".into()));
        assert_eq!(
            domain_name_from_xml("<domain><name>a</name></domain>"),
            Ok("a".into())
        );
        assert_eq!(
            domain_name_from_xml("<network><name>a</name></network>"),
            Err(XmlError::NotADomain("network".into()))
        );
        assert_eq!(
            domain_name_from_xml("<domain><uuid/></domain>"),
            Err(XmlError::NoName)
        );
        assert_eq!(
            domain_name_from_xml("<domain><name> </name></domain>"),
            Err(XmlError::NoName)
        );
        assert!(matches!(
            domain_name_from_xml("<domain><name>a</name>"),
            Err(XmlError::NotWellFormed(_))
        ));
        assert!(matches!(
            domain_name_from_xml("<domain><name>a</nam></domain>"),
            Err(XmlError::NotWellFormed(_))
        ));
    }

    #[test]
    fn budget_keeps_a_margin_below_the_executor_timeout() {
        let r = raw(&[("OCF_RESKEY_CRM_meta_timeout", "20000")]);
        assert_eq!((r.timeout_ms, r.budget_ms), (20_000, 18_000));
        let r = raw(&[("OCF_RESKEY_CRM_meta_timeout", "120000")]);
        assert_eq!(r.budget_ms, 115_000);
        let r = raw(&[("OCF_RESKEY_CRM_meta_timeout", "1000")]);
        assert_eq!(r.budget_ms, 500);
        let r = raw(&[]);
        assert_eq!(r.timeout_ms, 90_000, "start's advertised timeout");
        assert_eq!(r.rsctmp, PathBuf::from("/run/resource-agents"));
        assert_eq!(r.instance, "VirtualDomain");
    }

    #[test]
    fn defaults_validate_and_modes_parse() {
        let c = Config::validate(raw(&[
            ("OCF_RESKEY_config", "/etc/vm1.xml"),
            ("OCF_RESKEY_shutdown_mode", "agent, acpi,agent"),
            ("OCF_RESKEY_monitor_scripts", "/bin/true  /usr/bin/check"),
            ("OCF_RESKEY_autoset_utilization_cpu", "false"),
        ]))
        .unwrap();
        assert_eq!(
            c.shutdown_modes,
            ShutdownModes(vec![ShutdownMode::Agent, ShutdownMode::Acpi])
        );
        assert_eq!(c.monitor_scripts, vec!["/bin/true", "/usr/bin/check"]);
        assert!(!c.force_stop);
        assert_eq!(c.hypervisor_uri, None);
        assert!(!c.utilization.autoset_cpu && c.utilization.autoset_hv_memory);
    }

    #[test]
    fn refusals_name_the_parameter() {
        let e = Config::validate(raw(&[])).unwrap_err();
        assert_eq!(e.code(), OcfExitCode::ErrConfigured);
        assert!(e.to_string().contains("config"), "{e}");
        let e = Config::validate(raw(&[
            ("OCF_RESKEY_config", "/x.xml"),
            ("OCF_RESKEY_copyindirs", "/etc/x"),
            ("OCF_RESKEY_stateless", "no"),
            ("OCF_RESKEY_backingfile", ""),
        ]))
        .unwrap_err();
        assert_eq!(e, ConfigError::Unimplemented(vec!["copyindirs".into()]));
        assert!(e.to_string().contains("copyindirs"));
        for (k, v, needle) in [
            ("OCF_RESKEY_stateless", "yes", "without a backing file"),
            ("OCF_RESKEY_backingfile", "base.img", "absolute"),
            ("OCF_RESKEY_snapshot", "snap", "absolute"),
        ] {
            let e = Config::validate(raw(&[("OCF_RESKEY_config", "/x.xml"), (k, v)])).unwrap_err();
            assert_eq!(e.code(), OcfExitCode::ErrConfigured);
            assert!(e.to_string().contains(needle), "{e}");
        }
        for (k, v, needle) in [
            ("OCF_RESKEY_shutdown_mode", "acpi,reboot", "reboot"),
            ("OCF_RESKEY_migration_user", "Root", "migration_user"),
            (
                "OCF_RESKEY_migration_transport",
                "ext",
                "migration_transport",
            ),
            (
                "OCF_RESKEY_migration_network_suffix",
                "/system?command=x",
                "migration_network_suffix",
            ),
            (
                "OCF_RESKEY_hypervisor",
                "qemu+ext:///system?command=/x",
                "hypervisor",
            ),
            // Fuzzer finding: a path '@' became a second '@' in the remote URI.
            ("OCF_RESKEY_hypervisor", "qemu:///sy@stem", "hypervisor"),
            (
                "OCF_RESKEY_remoteuri",
                "qemu+ssh://%n/system#x",
                "remoteuri",
            ),
            ("OCF_RESKEY_migrateuri", "exec:cat", "migrateuri"),
            (
                "OCF_RESKEY_migrate_options",
                "--migrateuri=exec:cat",
                "migrate_options",
            ),
            ("OCF_RESKEY_migrateport", "70000", "migrateport"),
            ("OCF_RESKEY_migration_speed", "-1", "migration_speed"),
            ("OCF_RESKEY_force_stop", "maybe", "force_stop"),
            ("OCF_RESKEY_migrate_options", "--p2p --bogus", "--bogus"),
        ] {
            let e = Config::validate(raw(&[("OCF_RESKEY_config", "/x.xml"), (k, v)])).unwrap_err();
            assert_eq!(e.code(), OcfExitCode::ErrConfigured, "{k}");
            assert!(e.to_string().contains(needle), "{k}: {e}");
        }
        let e = Config::validate(raw(&[("OCF_RESKEY_config", "vm1.xml")])).unwrap_err();
        assert_eq!(e, ConfigError::RelativeConfig("vm1.xml".into()));
    }

    #[test]
    fn unreadable_and_broken_files_are_5() {
        let dir = tempfile::tempdir().unwrap();
        let e = load_domain(&dir.path().join("none.xml")).unwrap_err();
        assert_eq!(e.code(), OcfExitCode::ErrInstalled);
        let bad = dir.path().join("bad.xml");
        std::fs::write(&bad, "<domain><name>x</domain>").unwrap();
        let e = load_domain(&bad).unwrap_err();
        assert!(matches!(e, ConfigError::BadXml { .. }), "{e}");
        assert_eq!(e.code(), OcfExitCode::ErrInstalled);
        let good = dir.path().join("good.xml");
        std::fs::write(&good, "<domain type='qemu'><name>vm9</name></domain>").unwrap();
        assert_eq!(load_domain(&good).unwrap().name, "vm9");
        assert!(load_domain(dir.path()).is_err(), "a directory");
    }
}
