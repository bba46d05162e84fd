//! What may reach a libvirt URI: one check per part (a whole connection URI, a transport, a user,
//! a host-name suffix, a node name, a migration data URI). Every parameter and meta variable that
//! is pasted into a URI passes one of these first, so that no value can add a user, a host, a path,
//! a query, a fragment or another transport to the URI it ends up in. Pure: no I/O.
//!
//! The rules are a safe set per part, not a deny list: what is not listed is refused.

/// Transports the agent lets libvirt use. `ext` (libvirt runs the URI's `command=` program) is
/// refused, as is anything unknown.
pub const TRANSPORTS: [&str; 6] = ["unix", "tcp", "tls", "ssh", "libssh", "libssh2"];

/// Transports that can reach another host (a migration's remote URI): all but `unix`.
pub const REMOTE_TRANSPORTS: [&str; 5] = ["tcp", "tls", "ssh", "libssh", "libssh2"];

/// Schemes of a migration data URI that libvirt's QEMU driver accepts.
pub const MIGRATE_SCHEMES: [&str; 3] = ["tcp", "rdma", "unix"];

/// The longest host name DNS allows.
const MAX_HOST: usize = 253;

/// Characters allowed anywhere in a whole URI: RFC 3986's unreserved characters and the delimiters
/// a libvirt URI needs (`: / ? [ ] @ & = , +`). Left out on purpose: whitespace, control and
/// non-ASCII characters, `#` (a fragment), `%` (percent-encoding would bring every other character
/// back; `%n` is handled before this check), and `! $ ' ( ) * ; " < > \ ^ { | }` and backquote,
/// which mean something to a shell or to libvirt's remote command line.
fn uri_char(c: char) -> bool {
    c.is_ascii_alphanumeric() || "-._~:/?[]@&=,+".contains(c)
}

/// Letters, digits, `-` and `.`: the characters of a DNS host name; and `_`, which node names
/// carry in practice and which means nothing in a URI.
fn host_char(c: char) -> bool {
    c.is_ascii_alphanumeric() || c == '-' || c == '.' || c == '_'
}

/// The first character outside `allowed`, described for a message.
fn first_bad(value: &str, allowed: impl Fn(char) -> bool) -> Option<String> {
    value.chars().find(|c| !allowed(*c)).map(|c| match c {
        ' ' => "a space".to_owned(),
        c if c.is_whitespace() => format!("whitespace {:?}", c),
        c if c.is_control() => format!("a control character {:?}", c),
        c if !c.is_ascii() => format!("a non-ASCII character {:?}", c),
        c => format!("{c:?}"),
    })
}

/// Why a value is refused: always a complete sentence part naming the offending piece.
pub type Why = String;

/// A host name as it may appear in a URI: letters, digits, `-`, `.`; not empty; no empty label;
/// not starting with `-` (it would read as an option to ssh).
pub fn check_host(host: &str) -> Result<(), Why> {
    if host.is_empty() {
        return Err("the host name is empty".into());
    }
    if host.len() > MAX_HOST {
        return Err(format!(
            "the host name is longer than {MAX_HOST} characters"
        ));
    }
    if let Some(bad) = first_bad(host, host_char) {
        return Err(format!(
            "the host name contains {bad} (allowed: letters, digits, '-', '.', '_')"
        ));
    }
    if host.starts_with('-') || host.starts_with('.') || host.contains("..") {
        return Err("the host name starts with '-' or '.' or has an empty label".into());
    }
    Ok(())
}

/// A cluster node name that replaces `%n` or becomes the target host (`CRM_meta_migrate_target`,
/// `CRM_meta_migrate_source`): a host name.
pub fn check_node_name(node: &str) -> Result<(), Why> {
    check_host(node)
}

/// `migration_transport`: one of [`REMOTE_TRANSPORTS`].
pub fn check_transport(transport: &str) -> Result<(), Why> {
    if REMOTE_TRANSPORTS.contains(&transport) {
        Ok(())
    } else {
        Err(format!(
            "must be one of {} (ext runs a command; unix reaches no other host)",
            REMOTE_TRANSPORTS.join(", ")
        ))
    }
}

/// `migration_user`: a POSIX-style login name, `^[a-z_][a-z0-9_.-]*$`, at most 32 characters.
pub fn check_user(user: &str) -> Result<(), Why> {
    let mut chars = user.chars();
    let ok = chars
        .next()
        .is_some_and(|c| c.is_ascii_lowercase() || c == '_')
        && chars.all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || "_.-".contains(c))
        && user.len() <= 32;
    if ok {
        Ok(())
    } else {
        Err("must match ^[a-z_][a-z0-9_.-]*$ (at most 32 characters)".into())
    }
}

/// `migration_network_suffix`: appended to a short host name, so host-name characters only; the
/// result is checked again as a whole host name when the target is known.
pub fn check_suffix(suffix: &str) -> Result<(), Why> {
    if let Some(bad) = first_bad(suffix, host_char) {
        return Err(format!(
            "contains {bad} (allowed: letters, digits, '-', '.', '_')"
        ));
    }
    if suffix.contains("..") || suffix.ends_with('.') {
        return Err("would make an empty label in the host name".into());
    }
    if suffix.len() > MAX_HOST {
        return Err(format!("is longer than {MAX_HOST} characters"));
    }
    Ok(())
}

/// Replaces `%n` by a harmless host name so that a template can be checked before the target is
/// known; any other `%` stays and is refused by the character check.
fn with_placeholder(template: &str) -> String {
    template.replace("%n", "node")
}

/// The host of `scheme://authority/path?query` (the other parts are checked in place).
struct Parts<'a> {
    host: &'a str,
}

fn split_uri(uri: &str) -> Result<Parts<'_>, Why> {
    let (scheme, rest) = uri
        .split_once("://")
        .ok_or_else(|| "has no scheme (expected driver[+transport]://...)".to_owned())?;
    let (driver, transport) = match scheme.split_once('+') {
        Some((d, t)) => (d, Some(t)),
        None => (scheme, None),
    };
    let mut d = driver.chars();
    if !(d.next().is_some_and(|c| c.is_ascii_lowercase())
        && d.all(|c| c.is_ascii_lowercase() || c.is_ascii_digit()))
    {
        return Err(format!(
            "the driver {driver:?} is not a libvirt driver name"
        ));
    }
    if let Some(t) = transport.filter(|t| !TRANSPORTS.contains(t)) {
        return Err(format!(
            "the transport {t:?} is not one of {} (ext runs a command)",
            TRANSPORTS.join(", ")
        ));
    }
    let authority = rest.split(['/', '?']).next().unwrap_or_default();
    // `@` belongs to the authority only: in a path it would become a second one once the agent
    // puts a user in front (found by the ocf_env fuzz target: `qemu:///sy@stem`).
    if rest[authority.len()..].contains('@') {
        return Err("has '@' outside the user part".into());
    }
    let (user, hostport) = match authority.split_once('@') {
        Some((u, h)) => (Some(u), h),
        None => (None, authority),
    };
    if let Some(u) = user {
        check_user(u).map_err(|why| format!("the user {u:?} {why}"))?;
    }
    let (host, port) = if let Some(v6) = hostport.strip_prefix('[') {
        let (addr, after) = v6
            .split_once(']')
            .ok_or_else(|| "has an unclosed '[' in its host".to_owned())?;
        if addr.is_empty() || !addr.chars().all(|c| c.is_ascii_hexdigit() || c == ':') {
            return Err(format!("the IPv6 address {addr:?} is not one"));
        }
        match after {
            "" => (hostport, None),
            p => (
                hostport,
                Some(
                    p.strip_prefix(':')
                        .ok_or_else(|| "has text after its IPv6 address".to_owned())?,
                ),
            ),
        }
    } else {
        match hostport.split_once(':') {
            Some((h, p)) => (h, Some(p)),
            None => (hostport, None),
        }
    };
    let valid_port = |p: &str| {
        p.len() <= 5
            && p.bytes().all(|b| b.is_ascii_digit())
            && p.parse::<u32>().is_ok_and(|n| (1..=65_535).contains(&n))
    };
    if let Some(p) = port.filter(|p| !valid_port(p)) {
        return Err(format!("the port {p:?} is not a TCP port"));
    }
    if !host.is_empty() && !host.starts_with('[') {
        check_host(host)?;
    }
    Ok(Parts { host })
}

fn check_chars(uri: &str) -> Result<(), Why> {
    if uri.is_empty() {
        return Err("is empty".into());
    }
    if let Some(bad) = first_bad(uri, uri_char) {
        return Err(format!("contains {bad}"));
    }
    // `@` only once, in the authority; `?` only once, before the query.
    if uri.matches('@').count() > 1 || uri.matches('?').count() > 1 {
        return Err("contains more than one '@' or '?'".into());
    }
    let query = uri.split_once('?').map_or("", |(_, q)| q);
    if query
        .split('&')
        .any(|kv| kv.split('=').next() == Some("command"))
    {
        return Err("has a command= query parameter".into());
    }
    Ok(())
}

/// `hypervisor`: a whole libvirt URI of this node's hypervisor, as the administrator writes it.
pub fn check_local_uri(uri: &str) -> Result<(), Why> {
    check_chars(uri)?;
    split_uri(uri).map(|_| ())
}

/// `remoteuri` (with `%n`): a whole libvirt URI of the target, checked as `hypervisor` is once
/// `%n` stands for a host name (the node name itself is checked when the target is known). It may
/// name no host: a unix socket of another daemon on this machine, or the `test` driver.
pub fn check_remote_uri_template(template: &str) -> Result<(), Why> {
    check_local_uri(&with_placeholder(template))
}

/// `migrateuri` (with `%n`) and `--migrateuri` in `migrate_options`: `tcp:host[:port]`,
/// `tcp://host[:port]`, `rdma://host[:port]` or `unix:///path`.
pub fn check_migrate_uri_template(template: &str) -> Result<(), Why> {
    let uri = with_placeholder(template);
    check_chars(&uri)?;
    let (scheme, rest) = uri
        .split_once(':')
        .ok_or_else(|| "has no scheme (tcp, rdma or unix)".to_owned())?;
    if !MIGRATE_SCHEMES.contains(&scheme) {
        return Err(format!(
            "the scheme {scheme:?} is not one of {}",
            MIGRATE_SCHEMES.join(", ")
        ));
    }
    if uri.contains('?') || uri.contains('@') {
        return Err("has a query or a user, which a migration URI does not take".into());
    }
    if scheme == "unix" {
        let path = rest.strip_prefix("//").unwrap_or(rest);
        if !path.starts_with('/') {
            return Err("a unix migration URI needs an absolute path".into());
        }
        return Ok(());
    }
    let hostport = rest.strip_prefix("//").unwrap_or(rest);
    if hostport.contains('/') {
        return Err("has a path, which a tcp or rdma migration URI does not take".into());
    }
    // Reuse the libvirt URI split for host and port.
    split_uri(&format!("x://{hostport}")).and_then(|p| {
        if p.host.is_empty() {
            Err("names no host".into())
        } else {
            Ok(())
        }
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Every value here changes the meaning of the URI it would be pasted into.
    const HOSTILE_PARTS: [&str; 16] = [
        "", "a@b", "a/b", "a?b", "a#b", "a b", "a\tb", "a\nb", "a\u{0}b", "a\u{7f}b", "a%2Fb",
        "a;b", "a$(x)", "a'b", "é", "a:b",
    ];

    #[test]
    fn hosts_and_node_names() {
        for ok in ["node2", "node2.example.com", "n-2", "10.0.0.2", "ha_node2"] {
            assert_eq!(check_node_name(ok), Ok(()), "{ok}");
        }
        for bad in HOSTILE_PARTS {
            assert!(check_node_name(bad).is_err(), "{bad:?}");
        }
        for bad in ["-oProxyCommand=x", ".x", "a..b", &"a".repeat(254)] {
            assert!(check_node_name(bad).is_err(), "{bad:?}");
        }
        assert_eq!(
            check_host("").unwrap_err(),
            "the host name is empty",
            "empty host"
        );
    }

    #[test]
    fn transports() {
        for ok in ["ssh", "tcp", "tls", "libssh", "libssh2"] {
            assert_eq!(check_transport(ok), Ok(()), "{ok}");
        }
        for bad in HOSTILE_PARTS
            .iter()
            .copied()
            .chain(["ext", "unix", "SSH", "ssh ", "ssh+tcp", "ssh/x"])
        {
            assert!(check_transport(bad).is_err(), "{bad:?}");
        }
    }

    #[test]
    fn users() {
        for ok in ["root", "hauser", "ha_user", "_svc", "a.b-c9"] {
            assert_eq!(check_user(ok), Ok(()), "{ok}");
        }
        for bad in HOSTILE_PARTS
            .iter()
            .copied()
            .chain(["Root", "-x", "9a", "a:b"])
        {
            assert!(check_user(bad).is_err(), "{bad:?}");
        }
        assert!(check_user(&"a".repeat(33)).is_err());
    }

    #[test]
    fn suffixes() {
        for ok in ["-mig", ".mig.example.com", "mig", "-10g.lan"] {
            assert_eq!(check_suffix(ok), Ok(()), "{ok}");
        }
        for bad in HOSTILE_PARTS
            .iter()
            .copied()
            .filter(|s| !s.is_empty())
            .chain(["..x", "x..", "-mig.", "/system?socket=/x", "-mig:1"])
        {
            assert!(check_suffix(bad).is_err(), "{bad:?}");
        }
    }

    #[test]
    fn local_uris() {
        for ok in [
            "qemu:///system",
            "qemu:///session",
            "test:///default",
            "qemu+unix:///system?socket=/run/x/libvirt-sock",
            "qemu+ssh://root@node2/system",
            "qemu+tcp://node2:16509/system",
            "qemu+tls://[fe80::1]:16514/system?no_verify=1",
            "xen:///system",
        ] {
            assert_eq!(check_local_uri(ok), Ok(()), "{ok}");
        }
        for bad in [
            "",
            "qemu",
            "qemu+ext:///system?command=/bin/evil",
            "qemu+unix:///system?command=/bin/evil",
            "qemu:///system#frag",
            "qemu:///system ",
            "qemu:///sys tem",
            "qemu:///system\n",
            "qemu:///system?socket=/run/a%20b",
            "qemu+ssh://a@b@c/system",
            "qemu:///sy@stem",
            "qemu:///system?socket=/run/a@b",
            "qemu:///system?a=1?b=2",
            "qemu+ssh://Evil User@node2/system",
            "qemu+ssh://node2:99999/system",
            "qemu+ssh://node2:x/system",
            "qemu+ssh://-oProxyCommand=x/system",
            "QEMU:///system",
            "qemu+bogus:///system",
            "qemu:///system;reboot",
            "qemu:///system?socket=$(x)",
            "qemu+tls://[zz]/system",
            "qemu+tls://[::1/system",
        ] {
            assert!(check_local_uri(bad).is_err(), "{bad:?}");
        }
    }

    #[test]
    fn remote_uri_templates() {
        for ok in [
            "qemu+ssh://%n/system",
            "qemu+tcp://%n.mig:16509/system",
            "qemu+unix:///system?socket=/run/%n/sock",
            "qemu://node2/system",
            "test:///default",
        ] {
            assert_eq!(check_remote_uri_template(ok), Ok(()), "{ok}");
        }
        for bad in [
            "qemu+ssh://%n/sys%tem",
            "qemu+ssh://%n@%n@x/system",
            "qemu+ext://%n/system?command=x",
            "qemu+ssh://%n/system#x",
            "qemu+ssh://%x/system",
            "qemu+ssh://%n /system",
        ] {
            assert!(check_remote_uri_template(bad).is_err(), "{bad:?}");
        }
    }

    #[test]
    fn migrate_uri_templates() {
        for ok in [
            "tcp:%n:49152",
            "tcp:%n",
            "tcp://10.0.0.2:49160",
            "tcp:[fe80::1]:49152",
            "rdma://%n-ib:49152",
            "unix:///run/mig.sock",
        ] {
            assert_eq!(check_migrate_uri_template(ok), Ok(()), "{ok}");
        }
        for bad in [
            "",
            "exec:cat /etc/shadow",
            "exec:/bin/evil",
            "fd:3",
            "tcp::49152",
            "tcp://:49152",
            "tcp:%n:49152#x",
            "tcp:%n:49152?x=1",
            "tcp:user@%n:1",
            "tcp:%n:1/path",
            "tcp:%n:0",
            "tcp:%n:49152 ",
            "unix:relative",
            "tcp:%s:1",
        ] {
            assert!(check_migrate_uri_template(bad).is_err(), "{bad:?}");
        }
    }
}
