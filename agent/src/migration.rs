//! Migration parameters to a [`MigrateRequest`]: `migrate_options` parsed into libvirt flags (never
//! a shell), the remote libvirt URI (`remoteuri` with `%n`, or built from `hypervisor`,
//! `migration_transport`, `migration_user`, `migration_network_suffix`), the data URI (`migrateuri`
//! with `%n`, `--migrateuri` in the options, or `tcp:<host><suffix>:<migrateport>`), and a port per
//! resource instead of a random one (W11). Pure: no I/O.

use crate::config::MigrationParams;
use crate::hypervisor::MigrateRequest;

/// The `virsh migrate` options the agent understands, and libvirt's flag for each.
pub const OPTION_FLAGS: [(&str, u32); 17] = [
    ("--live", 1),
    ("--p2p", 2),
    ("--tunnelled", 4),
    ("--persistent", 8),
    ("--undefinesource", 16),
    ("--suspend", 32),
    ("--copy-storage-all", 64),
    ("--copy-storage-inc", 128),
    ("--change-protection", 256),
    ("--unsafe", 512),
    ("--compressed", 2048),
    ("--abort-on-error", 4096),
    ("--auto-converge", 8192),
    ("--rdma-pin-all", 16384),
    ("--tls", 65536),
    ("--parallel", 131072),
    ("--zerocopy", 1048576),
];

/// libvirt's `VIR_MIGRATE_PEER2PEER`.
pub const FLAG_P2P: u32 = 2;

/// First port of heartbeat's random range; the agent derives one port per resource from it.
pub const PORT_BASE: u16 = 49152;
pub const PORT_SPAN: u16 = 64;

#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum MigrationError {
    #[error("migrate_options: {0:?} is not a supported option (supported: {list})", list = supported())]
    UnknownOption(String),
    #[error("migrate_options: {0} needs a value")]
    MissingValue(String),
    #[error("migrate_options: {0} is not a live migration; refused")]
    NotLive(String),
    #[error("cannot build the remote URI from hypervisor={uri:?}: {why}; set remoteuri")]
    RemoteUri { uri: String, why: &'static str },
    /// The peer node's name (or the host made from it) cannot go into a URI.
    #[error("node name {node:?} refused for a URI: {why}")]
    BadNode { node: String, why: String },
}

fn supported() -> String {
    let mut v: Vec<&str> = OPTION_FLAGS.iter().map(|(o, _)| *o).collect();
    v.push("--migrateuri");
    v.join(" ")
}

/// Flags and an embedded `--migrateuri` from `migrate_options`.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ParsedOptions {
    pub flags: u32,
    pub migrate_uri: Option<String>,
}

/// Parses `migrate_options` (whitespace-separated, `--opt` or `--migrateuri=X`/`--migrateuri X`).
pub fn parse_options(text: &str) -> Result<ParsedOptions, MigrationError> {
    let mut out = ParsedOptions::default();
    let mut words = text.split_whitespace();
    while let Some(w) = words.next() {
        if let Some(v) = w.strip_prefix("--migrateuri=") {
            out.migrate_uri = Some(v.to_owned());
        } else if w == "--migrateuri" {
            let v = words
                .next()
                .ok_or_else(|| MigrationError::MissingValue(w.to_owned()))?;
            out.migrate_uri = Some(v.to_owned());
        } else if w == "--offline" {
            return Err(MigrationError::NotLive(w.to_owned()));
        } else if let Some((_, f)) = OPTION_FLAGS.iter().find(|(o, _)| *o == w) {
            out.flags |= f;
        } else {
            return Err(MigrationError::UnknownOption(w.to_owned()));
        }
    }
    Ok(out)
}

/// A port in 49152-49215 from the resource id (FNV-1a), stable across invocations, so that
/// different resources migrating at once do not pick the same port by chance.
pub fn port_for(instance: &str) -> u16 {
    let mut h: u32 = 0x811c_9dc5;
    for b in instance.bytes() {
        h ^= u32::from(b);
        h = h.wrapping_mul(0x0100_0193);
    }
    PORT_BASE + (h % u32::from(PORT_SPAN)) as u16
}

/// The target's host name as the migration network knows it: with a suffix, the short name
/// (before the first dot) plus the suffix; otherwise the node name.
pub fn target_host(target_node: &str, suffix: Option<&str>) -> String {
    match suffix {
        Some(s) => format!(
            "{}{}",
            target_node.split('.').next().unwrap_or(target_node),
            s
        ),
        None => target_node.to_owned(),
    }
}

/// [`target_host`], refused unless it is a plain host name (`urisafe::check_host`).
fn checked_host(target_node: &str, suffix: Option<&str>) -> Result<String, MigrationError> {
    let host = target_host(target_node, suffix);
    crate::urisafe::check_host(&host).map_err(|why| MigrationError::BadNode {
        node: target_node.to_owned(),
        why,
    })?;
    Ok(host)
}

/// The libvirt URI of the target hypervisor.
pub fn remote_uri(
    p: &MigrationParams,
    local_uri: Option<&str>,
    target_node: &str,
) -> Result<String, MigrationError> {
    checked_host(target_node, None)?;
    if let Some(r) = &p.remoteuri {
        return Ok(r.replace("%n", target_node));
    }
    // libvirt's default on a QEMU host.
    let local = local_uri.unwrap_or("qemu:///system");
    let err = |why| MigrationError::RemoteUri {
        uri: local.to_owned(),
        why,
    };
    let (scheme, rest) = local.split_once("://").ok_or_else(|| err("no scheme"))?;
    let (driver, transport) = match scheme.split_once('+') {
        Some((d, t)) => (d, Some(t)),
        None => (scheme, None),
    };
    let transport = p.transport.as_deref().or(transport);
    if transport == Some("unix") {
        return Err(err("a unix socket URI names no host"));
    }
    let (authority, path) = match rest.find(['/', '?']) {
        Some(i) => rest.split_at(i),
        None => (rest, ""),
    };
    // Keep the local port, if any; the host becomes the target.
    let port = authority
        .rsplit_once('@')
        .map_or(authority, |(_, h)| h)
        .rsplit_once(':')
        .map(|(_, port)| port)
        .filter(|port| !port.is_empty() && port.bytes().all(|b| b.is_ascii_digit()));
    let mut uri = String::from(driver);
    if let Some(t) = transport {
        uri.push('+');
        uri.push_str(t);
    }
    uri.push_str("://");
    if let Some(u) = &p.user {
        uri.push_str(u);
        uri.push('@');
    }
    uri.push_str(&checked_host(target_node, p.network_suffix.as_deref())?);
    if let Some(port) = port {
        uri.push(':');
        uri.push_str(port);
    }
    uri.push_str(if path.is_empty() { "/system" } else { path });
    Ok(uri)
}

/// The whole request for migrating to `target_node`.
pub fn request(
    p: &MigrationParams,
    local_uri: Option<&str>,
    instance: &str,
    target_node: &str,
) -> Result<MigrateRequest, MigrationError> {
    let opts = parse_options(p.options.as_deref().unwrap_or_default())?;
    checked_host(target_node, None)?;
    let migrate_uri = match (&p.migrateuri, &opts.migrate_uri) {
        (Some(u), _) => Some(u.replace("%n", target_node)),
        (None, Some(u)) => Some(u.replace("%n", target_node)),
        // Generated only when the migration network or the port is configured; otherwise libvirt
        // picks the address and a free port from its own range on the target.
        (None, None) if p.network_suffix.is_some() || p.port.is_some() => Some(format!(
            "tcp:{}:{}",
            checked_host(target_node, p.network_suffix.as_deref())?,
            p.port.unwrap_or_else(|| port_for(instance))
        )),
        (None, None) => None,
    };
    Ok(MigrateRequest {
        target_uri: remote_uri(p, local_uri, target_node)?,
        migrate_uri,
        extra_flags: opts.flags & !1,
        bandwidth_mib_s: Some(p.speed_mib_s).filter(|s| *s > 0),
        max_downtime_ms: Some(p.downtime_ms).filter(|d| *d > 0),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn options_become_flags_not_shell_words() {
        let o = parse_options("--p2p  --tunnelled --migrateuri=tcp://10.0.0.2:49160").unwrap();
        assert_eq!(o.flags, 2 | 4);
        assert_eq!(o.migrate_uri.as_deref(), Some("tcp://10.0.0.2:49160"));
        let o = parse_options("--compressed --migrateuri tcp:x:1").unwrap();
        assert_eq!((o.flags, o.migrate_uri.as_deref()), (2048, Some("tcp:x:1")));
        assert_eq!(parse_options("").unwrap(), ParsedOptions::default());
        assert_eq!(
            parse_options("--p2p; rm -rf /"),
            Err(MigrationError::UnknownOption("--p2p;".into()))
        );
        assert!(matches!(
            parse_options("--offline"),
            Err(MigrationError::NotLive(_))
        ));
        assert!(matches!(
            parse_options("--migrateuri"),
            Err(MigrationError::MissingValue(_))
        ));
    }

    #[test]
    fn ports_are_stable_and_spread() {
        assert_eq!(port_for("vm1"), port_for("vm1"));
        let ports: std::collections::BTreeSet<u16> =
            (0..40).map(|i| port_for(&format!("vm{i}"))).collect();
        assert!(ports.len() > 20, "{ports:?}");
        assert!(ports.iter().all(|p| (49152..49216).contains(p)));
    }

    #[test]
    fn remote_uris() {
        let mut p = MigrationParams::default();
        assert_eq!(
            remote_uri(&p, None, "node2").unwrap(),
            "qemu://node2/system"
        );
        p.transport = Some("ssh".into());
        p.user = Some("hauser".into());
        assert_eq!(
            remote_uri(&p, Some("qemu:///system"), "node2.example.com").unwrap(),
            "qemu+ssh://hauser@node2.example.com/system"
        );
        p.network_suffix = Some("-mig".into());
        assert_eq!(
            remote_uri(
                &p,
                Some("qemu+tcp://node1:16509/system"),
                "node2.example.com"
            )
            .unwrap(),
            "qemu+ssh://hauser@node2-mig:16509/system"
        );
        let p = MigrationParams {
            remoteuri: Some("qemu+unix:///system?socket=/run/%n/sock".into()),
            ..Default::default()
        };
        assert_eq!(
            remote_uri(&p, Some("anything"), "node2").unwrap(),
            "qemu+unix:///system?socket=/run/node2/sock"
        );
        let p = MigrationParams::default();
        assert!(remote_uri(&p, Some("qemu+unix:///system?socket=/x"), "n2").is_err());
    }

    #[test]
    fn node_names_that_would_change_the_uri_are_refused() {
        let with_suffix = MigrationParams {
            network_suffix: Some("-mig".into()),
            ..Default::default()
        };
        let templates = MigrationParams {
            remoteuri: Some("qemu+ssh://%n/system".into()),
            migrateuri: Some("tcp:%n:49152".into()),
            ..Default::default()
        };
        for node in [
            "",
            "evil@node2",
            "node2/system?command=x",
            "node2#x",
            "node 2",
            "node2\n",
            "-oProxyCommand=x",
        ] {
            for p in [&MigrationParams::default(), &with_suffix, &templates] {
                let e = request(p, Some("qemu:///system"), "vm1", node).unwrap_err();
                assert!(matches!(e, MigrationError::BadNode { .. }), "{node:?}: {e}");
                assert!(remote_uri(p, None, node).is_err(), "{node:?}");
            }
        }
        // A short name made empty by the suffix rule is refused too.
        assert!(matches!(
            remote_uri(&with_suffix, None, ".node2"),
            Err(MigrationError::BadNode { .. })
        ));
    }

    #[test]
    fn requests() {
        let mut p = MigrationParams {
            speed_mib_s: 100,
            downtime_ms: 0,
            options: Some("--p2p --live".into()),
            ..Default::default()
        };
        let r = request(&p, Some("qemu:///system"), "vm1", "node2").unwrap();
        assert_eq!(r.target_uri, "qemu://node2/system");
        assert_eq!(r.migrate_uri, None, "libvirt chooses");
        assert_eq!(r.extra_flags, FLAG_P2P);
        assert_eq!((r.bandwidth_mib_s, r.max_downtime_ms), (Some(100), None));
        p.network_suffix = Some("-mig".into());
        let r = request(&p, None, "vm1", "node2.x").unwrap();
        assert_eq!(
            r.migrate_uri,
            Some(format!("tcp:node2-mig:{}", port_for("vm1")))
        );
        p.port = Some(50000);
        p.migrateuri = Some("tcp:%n:1234".into());
        let r = request(&p, None, "vm1", "node2").unwrap();
        assert_eq!(
            r.migrate_uri.as_deref(),
            Some("tcp:node2:1234"),
            "migrateuri wins"
        );
    }
}
